/**
 * Retrying model calls (SPEC §2 "Retries"): exponential backoff with jitter, first wait about
 * 3 s, cap 30 min, never sooner than the server's `retry-after`; every retry classified (rate
 * limit vs transient) and reported; each attempt holds a connection slot only while it runs.
 *
 * Clock, sleep and randomness are injected, so the whole policy runs in tests without waiting.
 */

import { isSlotsUnavailable, type CallOutcome, type CallSlots, type Release } from './controller';
import { classifyError, type RetryDecision } from './retry';

/**
 * How waits grow between attempts.
 *
 * - `decorrelated` (AWS's "decorrelated jitter"): each wait is uniform in
 *   `[baseMs, 3 x previous wait]`, starting from `previous = baseMs`, so the first wait is
 *   1.5-4.5 s (about 3 s) with the default base. Spreads a herd of calls rate-limited together
 *   while growing about 1.5-2x per retry.
 * - `full` ("full jitter"): wait `n` is uniform in `[0, baseMs x 2^n]`.
 *
 * Both are capped at `capMs`.
 */
export interface BackoffPolicy {
  /** @default 'decorrelated' */
  jitter: 'decorrelated' | 'full';
  /** @default 1_500 */
  baseMs: number;
  /** @default 1_800_000 (30 min) */
  capMs: number;
}

export const defaultBackoff: BackoffPolicy = {
  jitter: 'decorrelated',
  baseMs: 1_500,
  capMs: 30 * 60_000,
};

/**
 * The backoff before retry number `retry` (0 for the first retry).
 *
 * @param previousMs the previous backoff (not counting a longer `retry-after`); ignored by `full`.
 * @param random uniform in [0, 1).
 */
export function backoffDelay(
  policy: BackoffPolicy,
  retry: number,
  previousMs: number | undefined,
  random: () => number,
): number {
  if (policy.jitter === 'full') {
    return random() * Math.min(policy.capMs, policy.baseMs * 2 ** retry);
  }
  const previous = previousMs ?? policy.baseMs;
  const high = Math.min(policy.capMs, 3 * previous);
  return Math.min(policy.capMs, policy.baseMs + random() * Math.max(0, high - policy.baseMs));
}

/**
 * The wait before a retry: the backoff, or the server's `retry-after` if that is longer, never
 * past the cap (a pathological hint must not park a call for hours).
 */
export function retryWait(policy: BackoffPolicy, backoffMs: number, retryAfterMs?: number): number {
  return Math.min(policy.capMs, Math.max(backoffMs, retryAfterMs ?? 0));
}

/** Retries so far in one call, by class. */
export interface RetryCounts {
  rateLimit: number;
  transient: number;
}

/** One retry about to wait. */
export interface RetryEvent {
  /** The attempt that failed, from 1. */
  attempt: number;
  kind: 'rateLimit' | 'transient';
  waitMs: number;
  retryAfterMs?: number;
  error: unknown;
  /** Counts including this retry. */
  retries: RetryCounts;
}

export interface RetryOptions {
  now: () => number;
  /** Waits `ms`; must reject when `signal` aborts. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Uniform in [0, 1). */
  random: () => number;
  /** Cancels the call: no further attempt or wait, and the abort is never retried. */
  signal?: AbortSignal;
  /** @default classifyError at `now()` */
  classify?: (err: unknown) => RetryDecision;
  /** Each attempt holds one of its slots while it runs and reports its outcome to it. */
  controller?: CallSlots;
  /** Most attempts in all (first try included). @default unlimited: the time budget decides */
  maxAttempts?: number;
  /**
   * No retry whose wait would end more than this long after the first failure; the call then
   * fails with its last error. @default 1_800_000 (30 min)
   */
  maxRetryMs?: number;
  /** @default defaultBackoff */
  backoff?: BackoffPolicy;
  onRetry?: (event: RetryEvent) => void;
}

/**
 * Runs a model call with Steward's retry policy.
 *
 * Errors classified `no` are rethrown at once, as is anything once `signal` has aborted. When
 * retries run out (attempts or time budget), the last error is thrown. The default gives up
 * after 30 minutes of failing rather than after a count: a provider overloaded for ten minutes
 * should cost a sample a wait, not its work (rate limits pass, and Temporal would otherwise re-run
 * the whole sample), while a provider down for longer should fail the sample visibly.
 *
 * @param call one attempt; receives the attempt number (from 1).
 */
export async function retryModelCall<T>(
  call: (attempt: number) => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  const { now, signal, controller } = options;
  const classify = options.classify ?? ((err: unknown) => classifyError(err, now()));
  const policy = options.backoff ?? defaultBackoff;
  const maxAttempts = options.maxAttempts ?? Number.POSITIVE_INFINITY;
  const maxRetryMs = options.maxRetryMs ?? 30 * 60_000;
  const retries: RetryCounts = { rateLimit: 0, transient: 0 };
  let firstFailureAt: number | undefined;
  let previousBackoff: number | undefined;

  for (let attempt = 1; ; attempt += 1) {
    signal?.throwIfAborted();
    const slot = await acquireSlot(controller, signal);
    let decision: RetryDecision;
    let error: unknown;
    if ('unavailable' in slot) {
      // No slot to be had for now (its owner is away): the call was not made. Wait and ask
      // again, as after a transient error.
      error = slot.unavailable;
      decision = { kind: 'transient' };
    } else {
      try {
        const value = await call(attempt);
        slot.release?.({ kind: 'success', retried: attempt > 1 });
        return value;
      } catch (err) {
        error = err;
        decision = signal?.aborted ? { kind: 'no' } : classify(err);
        slot.release?.(outcomeOf(decision));
      }
    }
    if (decision.kind === 'no' || attempt >= maxAttempts) throw error;

    firstFailureAt ??= now();
    const backoffMs = backoffDelay(policy, attempt - 1, previousBackoff, options.random);
    previousBackoff = backoffMs;
    const waitMs = retryWait(policy, backoffMs, decision.retryAfterMs);
    if (now() + waitMs - firstFailureAt > maxRetryMs) throw error;

    retries[decision.kind] += 1;
    options.onRetry?.({
      attempt,
      kind: decision.kind,
      waitMs,
      ...(decision.retryAfterMs === undefined ? {} : { retryAfterMs: decision.retryAfterMs }),
      error,
      retries: { ...retries },
    });
    await options.sleep(waitMs, signal);
  }
}

/** A slot (none needed without a controller), or the error saying its owner cannot be reached. */
async function acquireSlot(
  controller: CallSlots | undefined,
  signal: AbortSignal | undefined,
): Promise<{ release?: Release } | { unavailable: unknown }> {
  try {
    return { release: controller ? await controller.acquire(signal) : undefined };
  } catch (err) {
    if (signal?.aborted || !isSlotsUnavailable(err)) throw err;
    return { unavailable: err };
  }
}

function outcomeOf(decision: RetryDecision): CallOutcome {
  if (decision.kind === 'rateLimit') {
    return decision.retryAfterMs === undefined
      ? { kind: 'rateLimit' }
      : { kind: 'rateLimit', retryAfterMs: decision.retryAfterMs };
  }
  return decision.kind === 'transient' ? { kind: 'transient' } : { kind: 'error' };
}

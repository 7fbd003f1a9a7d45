/**
 * Pacing a provider account from its own rate-limit headers (SPEC §1: calls are paced before
 * they are refused). Every answer, success or 429, says how much of each limit is left and when
 * it resets; when what is left runs low, the account's calls are spaced at the rate the limit
 * refills until the reset, instead of being sent at once and refused.
 *
 * One reader for both header families, into one shape:
 * - OpenAI and compatible: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, the reset a
 *   Go duration (`1s`, `6m0s`, `20ms`);
 * - Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,
 *   remaining,reset}`, the reset an RFC 3339 time.
 *
 * Pure: the clock is injected and nothing here waits; the caller sleeps the delays it is given.
 */
import { parseDuration } from './retry';

export const BUCKETS = ['requests', 'tokens', 'input_tokens', 'output_tokens'] as const;
export type BucketName = (typeof BUCKETS)[number];

/** One limit as an answer described it. */
export interface BucketReading {
  limit: number;
  remaining: number;
  /** Epoch milliseconds at which the limit is whole again. */
  resetAt: number;
}

/** Whatever limits an answer described (none, for a provider that sends no headers). */
export type RateLimitReading = Partial<Record<BucketName, BucketReading>>;

/** What one call will take from each limit, estimated before it is sent. */
export interface CallCost {
  requests: number;
  /** Input tokens plus the most output tokens the call may produce. */
  tokens: number;
  inputTokens: number;
  outputTokens: number;
}

/**
 * Reads the rate-limit headers of an answer. `get` returns a header's value by lower-case name.
 * A limit is read only when its limit, remaining and reset are all present and well formed.
 */
export function readRateLimitHeaders(
  get: (name: string) => string | null | undefined,
  now: number,
): RateLimitReading {
  const reading: RateLimitReading = {};
  for (const bucket of ['requests', 'tokens'] as const) {
    const read = bucketOf(
      get(`x-ratelimit-limit-${bucket}`),
      get(`x-ratelimit-remaining-${bucket}`),
      parseDuration(get(`x-ratelimit-reset-${bucket}`) ?? undefined),
      now,
    );
    if (read) reading[bucket] = read;
  }
  for (const bucket of BUCKETS) {
    const name = `anthropic-ratelimit-${bucket.replace('_', '-')}`;
    const reset = get(`${name}-reset`)?.trim();
    const at = reset ? Date.parse(reset) : Number.NaN;
    const read = bucketOf(
      get(`${name}-limit`),
      get(`${name}-remaining`),
      Number.isFinite(at) ? Math.max(0, at - now) : undefined,
      now,
    );
    if (read) reading[bucket] = read;
  }
  return reading;
}

function bucketOf(
  limit: string | null | undefined,
  remaining: string | null | undefined,
  resetMs: number | undefined,
  now: number,
): BucketReading | undefined {
  const l = Number(limit?.trim() || Number.NaN);
  const r = Number(remaining?.trim() || Number.NaN);
  if (!(l > 0) || !(r >= 0) || resetMs === undefined) return undefined;
  return { limit: l, remaining: Math.min(r, l), resetAt: now + resetMs };
}

/** What the pacer knows of one limit: the last reading, and what was sent since. */
interface Bucket {
  reading: BucketReading;
  /** When the reading was taken, epoch milliseconds. */
  observedAt: number;
  /**
   * Units the provider's `remaining` does not count yet: those of calls sent (or booked to be
   * sent) after the call whose answer gave the reading.
   */
  used: number;
  /** The earliest time the next paced call may go (spacing), epoch milliseconds. */
  nextAt: number;
  /** The calls booked lately, at the time each goes: a reading counts those sent before its own. */
  sends: { at: number; units: number }[];
}

/**
 * How long a booked call is remembered. An answer whose call was sent longer ago than this counts
 * only the calls of this window against its reading.
 */
const SENDS_KEPT_MS = 60_000;

/**
 * How long a call may take to reach the provider after one sent later has: a new connection's
 * handshake, a busy event loop, the provider's own front door. A reading also counts, as used,
 * the calls sent this long before the answered one: the provider may not have seen them yet, and
 * if it had, they are counted twice, which only spaces calls sooner. Its cost is the calls sent
 * in this time: high in a burst, where it is needed, and the refill's second at a paced rate.
 */
const OVERTAKEN_MS = 1_000;

/** The pacing state of an account, for status. */
export interface PacingState {
  /** True while some limit is low and calls are being spaced. */
  pacing: boolean;
  /** The limit that spaces calls now, if any. */
  binding: BucketName | null;
  /** The gap between two calls while pacing, in milliseconds (0: not pacing). */
  spacingMs: number;
  /** Each known limit: what is left (after calls sent since the reading) and when it resets. */
  limits: Partial<Record<BucketName, { limit: number; left: number; resetInMs: number }>>;
}

export interface PacerOptions {
  now: () => number;
  /**
   * Pacing starts when a limit's remaining, after this call, would fall below this share of the
   * limit: above it, calls go at once (the controller alone bounds them). Once pacing, calls go
   * at the refill rate, so this share is never spent: a run bound by a per-minute limit ends with
   * it unused (6 s of its refill at 0.1). Calls the provider may not have seen yet are counted
   * apart ({@link OVERTAKEN_MS}); this covers what the pacer cannot know of: another client of
   * the account, tokens estimated low. @default 0.02
   */
  lowShare?: number;
}

export class Pacer {
  private readonly buckets = new Map<BucketName, Bucket>();
  private readonly lowShare: number;
  private lastSpacing: { bucket: BucketName; ms: number; at: number } | null = null;

  constructor(private readonly options: PacerOptions) {
    this.lowShare = options.lowShare ?? 0.02;
  }

  /**
   * An answer's reading, for a call sent at `sentAt` (default: now). The newest reading replaces
   * the older one. The provider counted the calls that reached it before this one, not those sent
   * after it: those (still in flight, or booked and waiting out their spacing) count against the
   * reading. A reading older than what is known (an answer overtaken by a later one) never raises
   * what is left within the same reset.
   */
  observe(reading: RateLimitReading, sentAt?: number): void {
    const now = this.options.now();
    const since = sentAt ?? now;
    for (const name of BUCKETS) {
      const read = reading[name];
      if (!read) continue;
      const bucket = this.buckets.get(name);
      const sends = bucket ? forgetOldSends(bucket.sends, now) : [];
      const used = sends.reduce((n, s) => (s.at > since - OVERTAKEN_MS ? n + s.units : n), 0);
      if (bucket && bucket.reading.resetAt >= read.resetAt) {
        const left = bucket.reading.remaining - bucket.used;
        if (read.remaining - used >= left) continue;
      }
      this.buckets.set(name, {
        reading: read,
        observedAt: now,
        used,
        nextAt: bucket?.nextAt ?? 0,
        sends,
      });
    }
  }

  /**
   * Books a call of `cost` and returns how long to wait before sending it (0: now). While every
   * limit has more than the low share left, 0. Once one runs low, calls go at the rate the limit
   * refills, which the reading gives: both providers' reset is the time until the limit is whole
   * again, so it refills (limit - remaining) over the time to reset. A limit used up waits for
   * the units the call needs.
   */
  reserve(cost: CallCost): number {
    const now = this.options.now();
    let wait = 0;
    for (const [name, bucket] of this.buckets) {
      const units = unitsOf(name, cost);
      const { reading } = bucket;
      if (units <= 0 || reading.resetAt <= now) continue;
      forgetOldSends(bucket.sends, now);
      const refillPerMs =
        (reading.limit - reading.remaining) / Math.max(1, reading.resetAt - bucket.observedAt);
      // What will be left once the calls booked ahead of this one have gone: they count in
      // full, and so does what refills until the last of them.
      const after = Math.max(now, bucket.nextAt);
      const refilled = refillPerMs * (after - bucket.observedAt);
      const left = Math.min(reading.limit, reading.remaining + refilled) - bucket.used;
      bucket.used += units;
      if (left - units >= this.lowShare * reading.limit || refillPerMs <= 0) {
        bucket.sends.push({ at: now, units });
        continue;
      }
      const spacing = units / refillPerMs;
      let at = after;
      if (left < units) at += (units - left) / refillPerMs;
      bucket.nextAt = at + spacing;
      bucket.sends.push({ at, units });
      wait = Math.max(wait, at - now);
      this.lastSpacing = { bucket: name, ms: spacing, at: now };
    }
    return wait;
  }

  state(): PacingState {
    const now = this.options.now();
    const limits: PacingState['limits'] = {};
    for (const [name, bucket] of this.buckets) {
      if (bucket.reading.resetAt <= now) continue;
      const { reading } = bucket;
      const refill =
        ((reading.limit - reading.remaining) * (now - bucket.observedAt)) /
        Math.max(1, reading.resetAt - bucket.observedAt);
      limits[name] = {
        limit: reading.limit,
        left: Math.max(
          0,
          Math.floor(Math.min(reading.limit, reading.remaining + refill) - bucket.used),
        ),
        resetInMs: bucket.reading.resetAt - now,
      };
    }
    // Pacing while a spaced call is still booked ahead, or was booked within the last second.
    const spacing = this.lastSpacing;
    const active =
      spacing !== null &&
      (this.buckets.get(spacing.bucket)!.nextAt > now || now - spacing.at < 1_000);
    return {
      pacing: active,
      binding: active ? spacing!.bucket : null,
      spacingMs: active ? Math.round(spacing!.ms) : 0,
      limits,
    };
  }
}

/** Drops the booked calls older than {@link SENDS_KEPT_MS} from the front of `sends`; returns it. */
function forgetOldSends(sends: Bucket['sends'], now: number): Bucket['sends'] {
  while (sends.length > 0 && sends[0].at <= now - SENDS_KEPT_MS) sends.shift();
  return sends;
}

function unitsOf(name: BucketName, cost: CallCost): number {
  switch (name) {
    case 'requests':
      return cost.requests;
    case 'tokens':
      return cost.tokens;
    case 'input_tokens':
      return cost.inputTokens;
    case 'output_tokens':
      return cost.outputTokens;
  }
}

/** A call about which nothing is known but that it is one request. */
export const ONE_REQUEST: CallCost = { requests: 1, tokens: 0, inputTokens: 0, outputTokens: 0 };

/**
 * A call's tokens before it is sent: about four characters a token for the input (what
 * providers' own pre-send estimates use), plus the most it may answer (`max_tokens`, which
 * OpenAI counts against the tokens limit at admission).
 */
export function estimateCost(inputChars: number, maxTokens: number | undefined): CallCost {
  const inputTokens = Math.ceil(inputChars / 4);
  const outputTokens = maxTokens ?? 0;
  return { requests: 1, tokens: inputTokens + outputTokens, inputTokens, outputTokens };
}

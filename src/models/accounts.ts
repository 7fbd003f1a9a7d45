/**
 * Provider accounts of one worker process: one connection controller per account (provider, base
 * URL, API key, model), through which every model call of the process goes, with Steward's retry
 * policy. What the accounts saw is drained each window and reported to the eval set.
 */
import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { retryModelCall } from '../core/backoff';
import { AdaptiveConnections, FixedConnections, type ConnectionLimiter } from '../core/controller';
import { classifyError } from '../core/retry';
import type { Model } from '../definition/types';
import { ErrorType } from '../errors';
import type { ConnectionsSetting } from '../config/settings';
import { modelCredentials, parseModelName } from '.';

/** What a process's accounts saw since the last drain. */
export interface AccountsWindow {
  /** The lowest current limit over the accounts (null: no account yet). */
  limit: number | null;
  rateLimitEpisodes: number;
  cuts: number;
  retries: number;
  /** The largest share of the window any account had calls queued for a connection. */
  queuedShare: number;
  /** The highest pushback level of the accounts (see `ConnectionsWindow`; null: none). */
  pushbackLevel: number | null;
}

/** A model call that failed for good, as a value with a stable type. */
export class ModelCallError extends Error {
  constructor(
    message: string,
    readonly type: ErrorType,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ModelCallError';
  }
}

export class ProviderAccounts {
  private readonly limiters = new Map<string, ConnectionLimiter>();
  private retries = 0;
  private ceiling: number | null = null;

  constructor(
    private readonly connections: ConnectionsSetting,
    private readonly env: NodeJS.ProcessEnv,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The model, with its calls through its account's controller and retried by Steward's policy.
   * `mockllm` has no provider account (no network, no rate limit) and is returned as is.
   */
  govern(name: string, model: Model): Model {
    if (parseModelName(name).provider === 'mockllm') return model;
    const limiter = this.limiter(this.accountKey(name));
    return {
      name: model.name,
      generate: (messages, options) => {
        let attempts = 0;
        return retryModelCall(
          (attempt) => {
            attempts = attempt;
            return model.generate(messages, options);
          },
          {
            now: this.now,
            sleep: (ms, signal) => delay(ms, undefined, { signal }),
            random: Math.random,
            signal: options?.signal,
            controller: limiter,
            ...(model.maxRetries === undefined ? {} : { maxAttempts: model.maxRetries + 1 }),
            onRetry: () => void this.retries++,
          },
        ).catch((err: unknown) => {
          throw finalError(name, err, attempts, this.now());
        });
      },
    };
  }

  /** The ceiling the eval set sends back; applies to every account of the process. */
  setCeiling(ceiling: number): void {
    if (this.connections.type === 'fixed') return;
    this.ceiling = ceiling;
    for (const limiter of this.limiters.values()) limiter.setCeiling(ceiling);
  }

  /** Whether any model call has gone through an account yet (`mockllm` never does). */
  get inUse(): boolean {
    return this.limiters.size > 0;
  }

  drainWindow(): AccountsWindow {
    const window: AccountsWindow = {
      limit: null,
      rateLimitEpisodes: 0,
      cuts: 0,
      retries: this.retries,
      queuedShare: 0,
      pushbackLevel: null,
    };
    this.retries = 0;
    for (const limiter of this.limiters.values()) {
      const w = limiter.drainWindow();
      window.limit = window.limit === null ? w.lowestLimit : Math.min(window.limit, w.lowestLimit);
      // Every 429 of the window counts (SPEC §2): the controller folds a burst into one cut,
      // but a window with any rate-limit error is a pushback window.
      window.rateLimitEpisodes += w.rateLimitSignals;
      window.cuts += w.cuts;
      window.queuedShare = Math.max(window.queuedShare, w.queuedShare);
      if (w.pushbackLevel !== null) {
        window.pushbackLevel = Math.max(window.pushbackLevel ?? 0, w.pushbackLevel);
      }
    }
    return window;
  }

  private limiter(key: string): ConnectionLimiter {
    let limiter = this.limiters.get(key);
    if (!limiter) {
      const c = this.connections;
      limiter =
        c.type === 'fixed'
          ? new FixedConnections(c.n, { now: this.now })
          : new AdaptiveConnections({ now: this.now, min: c.min, start: c.start, max: c.max });
      if (this.ceiling !== null) limiter.setCeiling(this.ceiling);
      this.limiters.set(key, limiter);
    }
    return limiter;
  }

  private accountKey(name: string): string {
    const { baseURL, apiKey } = modelCredentials(name, this.env);
    // The key only tells accounts apart; it is hashed so it is never held twice in clear.
    const keyHash = apiKey ? createHash('sha256').update(apiKey).digest('hex').slice(0, 16) : '';
    return [parseModelName(name).provider, baseURL ?? '', keyHash, name].join('\u0000');
  }
}

/**
 * After retries: a provider's refusal or exhausted retries, typed for the workflow, naming the
 * model and (for exhausted retries) how many attempts were made. Messages that already name the
 * model (Steward's own explanations) are not prefixed again.
 */
function finalError(name: string, err: unknown, attempts: number, now: number): unknown {
  if ((err as Error)?.name === 'AbortError') return err;
  const decision = classifyError(err, now);
  const message = err instanceof Error ? err.message : String(err);
  const model = `model ${name}`;
  if (decision.kind === 'no') {
    const refused = typeof (err as { status?: unknown })?.status === 'number';
    const text = message.startsWith(model)
      ? message
      : `${model}: ${refused ? 'the provider refused the request: ' : ''}${message}`;
    return new ModelCallError(text, ErrorType.modelFatal, { cause: err });
  }
  const reason = message.startsWith(`${model}: `) ? message.slice(model.length + 2) : message;
  const tries = attempts === 1 ? '1 attempt' : `${attempts} attempts`;
  return new ModelCallError(
    `${model}: gave up after ${tries}: ${reason}`,
    ErrorType.modelRetriesExhausted,
    { cause: err },
  );
}

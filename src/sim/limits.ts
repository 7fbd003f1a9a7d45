/**
 * The simulated provider's rate limits: requests per minute, tokens per minute and concurrent
 * requests, with the headers that describe them: OpenAI's `x-ratelimit-*` and Anthropic's
 * `anthropic-ratelimit-*`, two spellings of one {@link LimitSnapshot}.
 *
 * Pure: time comes from the injected `now()`; nothing here does I/O.
 *
 * The per-minute limits are token buckets that hold one minute's allowance and refill
 * continuously, which is how OpenAI describes its own: a full bucket admits a burst of `rpm`
 * requests at once, after which requests are admitted at `rpm / 60` per second. They are kept
 * as a GCRA (the "theoretical arrival time" form of a token bucket): one number per bucket, no
 * timers, O(1) per request, and the time until the bucket is full again is exactly OpenAI's
 * `x-ratelimit-reset-*`.
 */

/** Limits of one simulated account. Unset means unlimited. */
export interface RateLimits {
  /** Requests per minute. */
  rpm?: number;
  /** Tokens (prompt + completion) per minute. */
  tpm?: number;
  /** Requests in progress at once; one more is answered 429. */
  concurrency?: number;
}

/** Which limit refused a request. */
export type LimitKind = 'requests' | 'tokens' | 'concurrency';

/** `x-ratelimit-*` header values, by lower-case header name. */
export type RateLimitHeaders = Record<string, string>;

/** One per-minute limit at a moment: what it allows, what is left, when it is whole again. */
export interface LimitState {
  limit: number;
  remaining: number;
  /** Milliseconds until the limit is whole again. */
  resetMs: number;
}

/** The per-minute limits an account has (none when unlimited). */
export type LimitSnapshot = Partial<Record<'requests' | 'tokens', LimitState>>;

export type Admission =
  | {
      admitted: true;
      /** OpenAI's header values right after admission. */
      headers: RateLimitHeaders;
      /** The limits right after admission. */
      snapshot: LimitSnapshot;
      /** Frees the concurrency slot. Call once the response is sent; later calls do nothing. */
      release(): void;
    }
  | {
      admitted: false;
      kind: LimitKind;
      /** OpenAI-style explanation with the numbers, for the error body. */
      message: string;
      /** How long until the request would be admitted, at least 1 ms. */
      retryAfterMs: number;
      /** {@link retryAfterMs} rounded up to whole seconds, for the `retry-after` header. */
      retryAfterSeconds: number;
      /** The request alone is over the per-minute limit: waiting cannot help. */
      tooLarge: boolean;
      headers: RateLimitHeaders;
      snapshot: LimitSnapshot;
    };

export interface RateLimiter {
  /**
   * Admits a request costing `tokens` (what is known up front: the prompt) or says which limit
   * refuses it. A refused request consumes nothing.
   */
  admit(tokens: number): Admission;
  /**
   * Charges tokens learnt after admission (the completion). Never refuses: the tokens bucket
   * may go into debt, which later requests then wait out, as with real providers.
   */
  charge(tokens: number): void;
  /** Current OpenAI header values, for a response being sent now. */
  headers(): RateLimitHeaders;
  /** The limits now, for a response being sent now. */
  snapshot(): LimitSnapshot;
  /** Requests admitted and not yet released. */
  readonly inFlight: number;
}

const minuteMs = 60_000;

/**
 * Providers do not say when a concurrency slot frees up; a second is short against any real
 * completion and long enough that a client honouring it does not spin.
 */
const concurrencyRetryAfterMs = 1_000;

/** Float error in the bucket arithmetic must not turn an exact wait into one more refusal. */
const epsilonMs = 1e-6;

/** Creates the limiter of one simulated account. */
export function createRateLimiter(limits: RateLimits, now: () => number): RateLimiter {
  const requests =
    limits.rpm === undefined ? undefined : new MinuteBucket(check('rpm', limits.rpm));
  const tokens = limits.tpm === undefined ? undefined : new MinuteBucket(check('tpm', limits.tpm));
  const concurrency =
    limits.concurrency === undefined ? undefined : check('concurrency', limits.concurrency);
  let inFlight = 0;

  function snapshot(at: number): LimitSnapshot {
    return {
      ...(requests ? { requests: requests.state(at) } : {}),
      ...(tokens ? { tokens: tokens.state(at) } : {}),
    };
  }

  function refusals(cost: number, at: number): Extract<Admission, { admitted: false }>[] {
    const found: Extract<Admission, { admitted: false }>[] = [];
    const refuse = (kind: LimitKind, message: string, waitMs: number, tooLarge = false) => {
      const retryAfterMs = Math.max(1, Math.ceil(waitMs - epsilonMs));
      const retryAfterSeconds = Math.ceil(retryAfterMs / 1000);
      found.push({
        admitted: false,
        kind,
        message: tooLarge
          ? message
          : `${message} Please try again in ${formatResetDuration(retryAfterMs)}.`,
        retryAfterMs,
        retryAfterSeconds,
        tooLarge,
        headers: openAiHeaders(snapshot(at)),
        snapshot: snapshot(at),
      });
    };
    if (requests && requests.waitMs(1, at) > epsilonMs) {
      refuse('requests', requests.reached('requests per min (RPM)', 1, at), requests.waitMs(1, at));
    }
    if (tokens && cost > tokens.limit) {
      refuse(
        'tokens',
        `Request too large on tokens per min (TPM): Limit ${tokens.limit}, Requested ${cost}.`,
        tokens.resetMs(at),
        true,
      );
    } else if (tokens && tokens.waitMs(cost, at) > epsilonMs) {
      refuse('tokens', tokens.reached('tokens per min (TPM)', cost, at), tokens.waitMs(cost, at));
    }
    if (concurrency !== undefined && inFlight >= concurrency) {
      refuse(
        'concurrency',
        `Too many concurrent requests: Limit ${concurrency}, In flight ${inFlight}.`,
        concurrencyRetryAfterMs,
      );
    }
    return found;
  }

  return {
    admit(cost) {
      const at = now();
      const refused = refusals(cost, at);
      if (refused.length > 0) {
        // A client must wait out every limit it is over, so report the longest wait.
        return refused.reduce((a, b) => (b.retryAfterMs > a.retryAfterMs ? b : a));
      }
      requests?.take(1, at);
      tokens?.take(cost, at);
      inFlight += 1;
      let released = false;
      const limitsNow = snapshot(at);
      return {
        admitted: true,
        headers: openAiHeaders(limitsNow),
        snapshot: limitsNow,
        release() {
          if (!released) {
            released = true;
            inFlight -= 1;
          }
        },
      };
    },
    charge(cost) {
      tokens?.take(cost, now());
    },
    headers() {
      return openAiHeaders(snapshot(now()));
    },
    snapshot() {
      return snapshot(now());
    },
    get inFlight() {
      return inFlight;
    },
  };
}

/** A bucket holding one minute's allowance, refilled continuously (GCRA). */
class MinuteBucket {
  /** Milliseconds one unit takes to refill. */
  private readonly intervalMs: number;
  /** The time at which the bucket is full again; in the past when it is full. */
  private fullAt = -Infinity;

  constructor(readonly limit: number) {
    this.intervalMs = minuteMs / limit;
  }

  /** How far the bucket is from full, in milliseconds of refill. */
  private backlogMs(at: number): number {
    return Math.max(0, this.fullAt - at);
  }

  /** Milliseconds until `cost` units fit; zero or less when they fit now. */
  waitMs(cost: number, at: number): number {
    return this.backlogMs(at) + cost * this.intervalMs - minuteMs;
  }

  take(cost: number, at: number): void {
    this.fullAt = Math.max(this.fullAt, at) + cost * this.intervalMs;
  }

  remaining(at: number): number {
    const units = (minuteMs - this.backlogMs(at)) / this.intervalMs;
    return Math.max(0, Math.floor(units + epsilonMs));
  }

  resetMs(at: number): number {
    return Math.ceil(this.backlogMs(at) - epsilonMs);
  }

  reached(what: string, cost: number, at: number): string {
    const used = this.limit - this.remaining(at);
    return `Rate limit reached for ${what}: Limit ${this.limit}, Used ${used}, Requested ${cost}.`;
  }

  state(at: number): LimitState {
    return { limit: this.limit, remaining: this.remaining(at), resetMs: this.resetMs(at) };
  }
}

/** OpenAI's spelling: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, Go durations. */
export function openAiHeaders(snapshot: LimitSnapshot): RateLimitHeaders {
  const headers: RateLimitHeaders = {};
  for (const kind of ['requests', 'tokens'] as const) {
    const state = snapshot[kind];
    if (!state) continue;
    headers[`x-ratelimit-limit-${kind}`] = String(state.limit);
    headers[`x-ratelimit-remaining-${kind}`] = String(state.remaining);
    headers[`x-ratelimit-reset-${kind}`] = formatResetDuration(state.resetMs);
  }
  return headers;
}

/**
 * Anthropic's spelling: `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}`, the
 * reset an RFC 3339 time (whole seconds, as Anthropic sends it, rounded up so that a client
 * never comes back early). The one tokens-per-minute limit is `tokens`, which Anthropic uses for
 * the most restrictive of its token limits.
 */
export function anthropicHeaders(snapshot: LimitSnapshot, now: number): RateLimitHeaders {
  const headers: RateLimitHeaders = {};
  for (const kind of ['requests', 'tokens'] as const) {
    const state = snapshot[kind];
    if (!state) continue;
    const resetAt = Math.ceil((now + state.resetMs) / 1000) * 1000;
    headers[`anthropic-ratelimit-${kind}-limit`] = String(state.limit);
    headers[`anthropic-ratelimit-${kind}-remaining`] = String(state.remaining);
    headers[`anthropic-ratelimit-${kind}-reset`] = new Date(resetAt)
      .toISOString()
      .replace('.000Z', 'Z');
  }
  return headers;
}

function check(name: string, value: number): number {
  if (!(Number.isFinite(value) && value > 0)) {
    throw new RangeError(`${name} must be a positive number (got ${value})`);
  }
  return value;
}

/**
 * Formats a duration the way OpenAI's reset headers do (Go's `time.Duration` format, to the
 * millisecond): `0s`, `20ms`, `1s`, `8.64s`, `6m0s`, `1h0m0s`.
 */
export function formatResetDuration(ms: number): string {
  const whole = Math.max(0, Math.ceil(ms));
  if (whole === 0) return '0s';
  if (whole < 1000) return `${whole}ms`;
  const hours = Math.floor(whole / 3_600_000);
  const minutes = Math.floor((whole % 3_600_000) / 60_000);
  const seconds = ((whole % 60_000) / 1000).toFixed(3).replace(/\.?0+$/, '');
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}

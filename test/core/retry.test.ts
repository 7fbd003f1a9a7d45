import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';

import {
  backoffDelay,
  defaultBackoff,
  retryModelCall,
  retryWait,
  type RetryEvent,
  type RetryOptions,
} from '../../src/core/backoff';
import { AdaptiveConnections, SlotsUnavailable, type CallSlots } from '../../src/core/controller';
import {
  classifyError,
  parseDuration,
  parseRetryAfter,
  type RetryDecision,
} from '../../src/core/retry';

const NOW = Date.parse('2025-01-01T00:00:00Z');

/** An error exactly as the openai SDK builds it from an HTTP response. */
function http(status: number, body?: object, headers: Record<string, string> = {}) {
  return APIError.generate(status, body, undefined, new Headers(headers));
}

/** An error shaped like the anthropic SDK's (the whole body kept in `error`). */
function anthropic(status: number | undefined, type: string) {
  return Object.assign(new Error(type), {
    status,
    headers: {},
    error: { type: 'error', error: { type } },
  });
}

/** A seeded uniform [0, 1) generator (mulberry32), so backoff tests are reproducible. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe('classifyError', () => {
  test.each<[string, unknown, RetryDecision]>([
    [
      '429',
      http(429, { error: { code: 'rate_limit_exceeded', type: 'requests' } }),
      { kind: 'rateLimit' },
    ],
    [
      '429 quota exhausted',
      http(429, { error: { code: 'insufficient_quota', type: 'insufficient_quota' } }),
      { kind: 'no' },
    ],
    [
      '429 with x-should-retry: false',
      http(429, {}, { 'x-should-retry': 'false' }),
      { kind: 'no' },
    ],
    ['529', http(529), { kind: 'rateLimit' }],
    ['anthropic overloaded_error', anthropic(529, 'overloaded_error'), { kind: 'rateLimit' }],
    [
      'overloaded_error mid-stream, no status',
      anthropic(undefined, 'overloaded_error'),
      { kind: 'rateLimit' },
    ],
    [
      'google RESOURCE_EXHAUSTED on a 503',
      http(503, { error: { code: 503, status: 'RESOURCE_EXHAUSTED' } }),
      { kind: 'rateLimit' },
    ],
    ['408', http(408), { kind: 'transient' }],
    ['409', http(409), { kind: 'transient' }],
    ['500', http(500), { kind: 'transient' }],
    ['502', http(502), { kind: 'transient' }],
    ['503', http(503), { kind: 'transient' }],
    [
      '500 with x-should-retry: false',
      http(500, {}, { 'x-should-retry': 'false' }),
      { kind: 'no' },
    ],
    [
      '400 with x-should-retry: true',
      http(400, {}, { 'x-should-retry': 'true' }),
      { kind: 'transient' },
    ],
    ['400', http(400, { error: { message: 'bad' } }), { kind: 'no' }],
    ['401', http(401), { kind: 'no' }],
    ['403', http(403), { kind: 'no' }],
    ['404', http(404), { kind: 'no' }],
    ['422', http(422), { kind: 'no' }],
    [
      'connection error',
      new APIConnectionError({ message: 'Connection error.' }),
      { kind: 'transient' },
    ],
    ['connection timeout', new APIConnectionTimeoutError(), { kind: 'transient' }],
    [
      'ECONNRESET',
      Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
      { kind: 'transient' },
    ],
    ['EPIPE', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }), { kind: 'transient' }],
    [
      'fetch failed, ECONNREFUSED underneath',
      new TypeError('fetch failed', {
        cause: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }),
      }),
      { kind: 'transient' },
    ],
    [
      'ETIMEDOUT',
      Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' }),
      { kind: 'transient' },
    ],
    ['our own abort through the SDK', new APIUserAbortError(), { kind: 'no' }],
    ['our own abort', new DOMException('This operation was aborted', 'AbortError'), { kind: 'no' }],
    ['a bug', new Error('undefined is not a function'), { kind: 'no' }],
    ['not an error at all', 'boom', { kind: 'no' }],
  ])('%s', (_name, err, decision) => {
    expect(classifyError(err, NOW)).toEqual(decision);
  });

  test('carries the server hint', () => {
    expect(classifyError(http(429, {}, { 'retry-after': '7' }), NOW)).toEqual({
      kind: 'rateLimit',
      retryAfterMs: 7_000,
    });
    expect(classifyError(http(503, {}, { 'retry-after-ms': '250' }), NOW)).toEqual({
      kind: 'transient',
      retryAfterMs: 250,
    });
  });

  test('reads plain-record headers in any case', () => {
    const err = { status: 429, headers: { 'Retry-After': '3' } };
    expect(classifyError(err, NOW)).toEqual({ kind: 'rateLimit', retryAfterMs: 3_000 });
  });
});

describe('parseRetryAfter', () => {
  test.each<[string, Record<string, string>, number | undefined]>([
    ['retry-after-ms', { 'retry-after-ms': '1500' }, 1_500],
    ['retry-after-ms wins over retry-after', { 'retry-after-ms': '20', 'retry-after': '9' }, 20],
    ['retry-after seconds', { 'retry-after': '2' }, 2_000],
    ['retry-after fractional seconds', { 'retry-after': '0.5' }, 500],
    ['retry-after HTTP date', { 'retry-after': new Date(NOW + 10_000).toUTCString() }, 10_000],
    ['retry-after date in the past', { 'retry-after': new Date(NOW - 60_000).toUTCString() }, 0],
    [
      'the reset of the exhausted limit',
      {
        'x-ratelimit-reset-requests': '1s',
        'x-ratelimit-reset-tokens': '6m0s',
        'x-ratelimit-remaining-tokens': '0',
      },
      360_000,
    ],
    [
      'the sooner reset when neither is known exhausted',
      { 'x-ratelimit-reset-requests': '1s', 'x-ratelimit-reset-tokens': '6m0s' },
      1_000,
    ],
    ['a millisecond reset', { 'x-ratelimit-reset-tokens': '20ms' }, 20],
    ['garbage', { 'retry-after': 'soon' }, undefined],
    ['nothing', {}, undefined],
  ])('%s', (_name, headers, wait) => {
    expect(parseRetryAfter(new Headers(headers), NOW)).toBe(wait);
  });

  test.each<[string, number | undefined]>([
    ['1s', 1_000],
    ['6m0s', 360_000],
    ['1h2m3.5s', 3_723_500],
    ['20ms', 20],
    ['0.5s', 500],
    ['', undefined],
    ['5', undefined],
    ['1x', undefined],
    ['1s later', undefined],
  ])('parseDuration(%p) = %p', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });
});

describe('backoff', () => {
  test('decorrelated: every wait in [base, 3 x previous], capped at 30 min', () => {
    const random = seeded(42);
    let previous: number | undefined;
    for (let retry = 0; retry < 60; retry += 1) {
      const wait = backoffDelay(defaultBackoff, retry, previous, random);
      expect(wait).toBeGreaterThanOrEqual(defaultBackoff.baseMs);
      expect(wait).toBeLessThanOrEqual(
        Math.min(30 * 60_000, 3 * (previous ?? defaultBackoff.baseMs)),
      );
      previous = wait;
    }
  });

  test.each([
    [0, 1_500],
    [0.5, 3_000],
    [0.999_999, 4_500],
  ])('the first wait is about 3 s: random %p gives %p ms', (value, wait) => {
    expect(backoffDelay(defaultBackoff, 0, undefined, () => value)).toBeCloseTo(wait, 0);
  });

  test('grows toward the cap and stays there', () => {
    let previous: number | undefined;
    const waits: number[] = [];
    for (let retry = 0; retry < 12; retry += 1) {
      previous = backoffDelay(defaultBackoff, retry, previous, () => 1 - 1e-12);
      waits.push(Math.round(previous));
    }
    expect(waits.slice(0, 3)).toEqual([4_500, 13_500, 40_500]);
    expect(waits.slice(-2)).toEqual([1_800_000, 1_800_000]);
  });

  test('full jitter: wait n in [0, base x 2^n], capped', () => {
    const policy = { ...defaultBackoff, jitter: 'full' as const, baseMs: 3_000 };
    const random = seeded(7);
    for (let retry = 0; retry < 30; retry += 1) {
      const wait = backoffDelay(policy, retry, undefined, random);
      expect(wait).toBeGreaterThanOrEqual(0);
      expect(wait).toBeLessThanOrEqual(Math.min(policy.capMs, 3_000 * 2 ** retry));
    }
    expect(backoffDelay(policy, 40, undefined, () => 0.5)).toBe(900_000);
  });

  test.each([
    ['no hint: the backoff', 4_000, undefined, 4_000],
    ['a longer retry-after wins', 4_000, 10_000, 10_000],
    ['a shorter retry-after does not shorten it', 4_000, 1_000, 4_000],
    ['never past the cap', 4_000, 5 * 3_600_000, 1_800_000],
  ])('retryWait: %s', (_name, backoff, retryAfter, wait) => {
    expect(retryWait(defaultBackoff, backoff, retryAfter)).toBe(wait);
  });
});

describe('retryModelCall', () => {
  /** A call that throws the given errors in turn, then returns 'ok'. */
  function failing(...errors: unknown[]) {
    const attempts: number[] = [];
    const call = async (attempt: number) => {
      attempts.push(attempt);
      if (attempt <= errors.length) throw errors[attempt - 1];
      return 'ok';
    };
    return { call, attempts };
  }

  function options(over: Partial<RetryOptions> = {}) {
    let time = NOW;
    const sleeps: number[] = [];
    const events: RetryEvent[] = [];
    const base: RetryOptions = {
      now: () => time,
      sleep: async (ms) => {
        sleeps.push(ms);
        time += ms;
      },
      random: seeded(1),
      onRetry: (event) => events.push(event),
      ...over,
    };
    return { options: base, sleeps, events };
  }

  test('retries rate limits and transient errors, counting each class', async () => {
    const { call, attempts } = failing(
      http(429),
      http(500),
      http(429, {}, { 'retry-after': '20' }),
    );
    const { options: opts, sleeps, events } = options();
    await expect(retryModelCall(call, opts)).resolves.toBe('ok');
    expect(attempts).toEqual([1, 2, 3, 4]);
    expect(events.map((event) => [event.attempt, event.kind, event.retries])).toEqual([
      [1, 'rateLimit', { rateLimit: 1, transient: 0 }],
      [2, 'transient', { rateLimit: 1, transient: 1 }],
      [3, 'rateLimit', { rateLimit: 2, transient: 1 }],
    ]);
    expect(sleeps).toEqual(events.map((event) => event.waitMs));
    expect(sleeps[2]).toBeGreaterThanOrEqual(20_000);
  });

  test('a non-retryable error is rethrown at once', async () => {
    const bad = http(400);
    const { call, attempts } = failing(bad);
    const { options: opts, sleeps } = options();
    await expect(retryModelCall(call, opts)).rejects.toBe(bad);
    expect(attempts).toEqual([1]);
    expect(sleeps).toEqual([]);
  });

  test('when attempts run out, the last error is thrown', async () => {
    const errors = [http(500), http(502), http(503), http(504)];
    const { call, attempts } = failing(...errors);
    const { options: opts } = options({ maxAttempts: 3 });
    await expect(retryModelCall(call, opts)).rejects.toBe(errors[2]);
    expect(attempts).toEqual([1, 2, 3]);
  });

  test('by default it gives up once waiting would pass 30 minutes from the first failure', async () => {
    const { options: opts, sleeps } = options();
    const down = http(503);
    await expect(retryModelCall(async () => Promise.reject(down), opts)).rejects.toBe(down);
    const waited = sleeps.reduce((sum, ms) => sum + ms, 0);
    expect(waited).toBeLessThanOrEqual(30 * 60_000);
    expect(sleeps.length).toBeGreaterThan(5);
  });

  test('an abort is never retried', async () => {
    const abort = new AbortController();
    const { options: opts, sleeps } = options({ signal: abort.signal });
    const call = async () => {
      abort.abort(new Error('cancelled'));
      throw new APIConnectionError({ message: 'socket closed by abort' });
    };
    await expect(retryModelCall(call, opts)).rejects.toThrow('socket closed by abort');
    expect(sleeps).toEqual([]);
    await expect(retryModelCall(async () => 'ok', opts)).rejects.toThrow('cancelled');
  });

  test('a slot whose owner is away is asked for again; the call waits, and runs once it has one', async () => {
    const refusals = [
      new SlotsUnavailable('connection to the account host closed'),
      new SlotsUnavailable('the account host does not answer'),
    ];
    const controller: CallSlots = {
      acquire: async () => {
        const refusal = refusals.shift();
        if (refusal) throw refusal;
        return () => undefined;
      },
    };
    const { call, attempts } = failing();
    const { options: opts, events } = options({ controller });
    await expect(retryModelCall(call, opts)).resolves.toBe('ok');
    // Made once, when a slot came: the two waits were not calls.
    expect(attempts).toEqual([3]);
    expect(events.map((event) => event.kind)).toEqual(['transient', 'transient']);
  });

  test('any other failure to get a slot is rethrown at once', async () => {
    const broken = new Error('the account host refused a slot: no such account');
    const controller: CallSlots = { acquire: () => Promise.reject(broken) };
    const { call, attempts } = failing();
    const { options: opts, sleeps } = options({ controller });
    await expect(retryModelCall(call, opts)).rejects.toBe(broken);
    expect(attempts).toEqual([]);
    expect(sleeps).toEqual([]);
  });

  test('each attempt holds a controller slot only while it runs, and reports its outcome', async () => {
    const controller = new AdaptiveConnections({ now: () => NOW });
    const inFlightWhileSleeping: number[] = [];
    const { call } = failing(http(429), http(500));
    const { options: opts } = options({
      controller,
      sleep: async () => {
        inFlightWhileSleeping.push(controller.snapshot().inFlight);
      },
    });
    await retryModelCall(call, opts);
    expect(inFlightWhileSleeping).toEqual([0, 0]);
    expect(controller.drainWindow()).toMatchObject({
      limit: 15,
      rateLimitSignals: 1,
      cuts: 1,
      transientErrors: 1,
      successes: 1,
    });
  });
});

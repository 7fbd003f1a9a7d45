import {
  ONE_REQUEST,
  Pacer,
  estimateCost,
  readRateLimitHeaders,
  type RateLimitReading,
} from '../../src/core/pacing';

const NOW = Date.parse('2026-12-01T12:00:00Z');

function headers(record: Record<string, string>) {
  return (name: string) => record[name];
}

describe('readRateLimitHeaders: OpenAI and Anthropic into one shape', () => {
  test.each<[string, Record<string, string>, RateLimitReading]>([
    [
      'OpenAI requests and tokens, Go-duration resets',
      {
        'x-ratelimit-limit-requests': '60',
        'x-ratelimit-remaining-requests': '59',
        'x-ratelimit-reset-requests': '1s',
        'x-ratelimit-limit-tokens': '150000',
        'x-ratelimit-remaining-tokens': '149984',
        'x-ratelimit-reset-tokens': '6m0s',
      },
      {
        requests: { limit: 60, remaining: 59, resetAt: NOW + 1_000 },
        tokens: { limit: 150_000, remaining: 149_984, resetAt: NOW + 360_000 },
      },
    ],
    [
      'OpenAI milliseconds',
      {
        'x-ratelimit-limit-requests': '10000',
        'x-ratelimit-remaining-requests': '9999',
        'x-ratelimit-reset-requests': '20ms',
      },
      { requests: { limit: 10_000, remaining: 9_999, resetAt: NOW + 20 } },
    ],
    [
      'Anthropic, RFC 3339 resets, input and output tokens',
      {
        'anthropic-ratelimit-requests-limit': '50',
        'anthropic-ratelimit-requests-remaining': '49',
        'anthropic-ratelimit-requests-reset': '2026-12-01T12:00:01Z',
        'anthropic-ratelimit-input-tokens-limit': '40000',
        'anthropic-ratelimit-input-tokens-remaining': '39000',
        'anthropic-ratelimit-input-tokens-reset': '2026-12-01T12:00:02.500Z',
        'anthropic-ratelimit-output-tokens-limit': '8000',
        'anthropic-ratelimit-output-tokens-remaining': '8000',
        'anthropic-ratelimit-output-tokens-reset': '2026-12-01T12:00:00Z',
      },
      {
        requests: { limit: 50, remaining: 49, resetAt: NOW + 1_000 },
        input_tokens: { limit: 40_000, remaining: 39_000, resetAt: NOW + 2_500 },
        output_tokens: { limit: 8_000, remaining: 8_000, resetAt: NOW },
      },
    ],
    [
      'Anthropic tokens (the most restrictive token limit), a reset with an offset, one in the past',
      {
        'anthropic-ratelimit-tokens-limit': '48000',
        'anthropic-ratelimit-tokens-remaining': '47000',
        'anthropic-ratelimit-tokens-reset': '2026-12-01T13:00:05+01:00',
        'anthropic-ratelimit-requests-limit': '50',
        'anthropic-ratelimit-requests-remaining': '50',
        'anthropic-ratelimit-requests-reset': '2026-12-01T11:59:59Z',
      },
      {
        tokens: { limit: 48_000, remaining: 47_000, resetAt: NOW + 5_000 },
        requests: { limit: 50, remaining: 50, resetAt: NOW },
      },
    ],
    [
      'an Anthropic reset that is not a time (a Go duration, say) is not read',
      {
        'anthropic-ratelimit-requests-limit': '50',
        'anthropic-ratelimit-requests-remaining': '10',
        'anthropic-ratelimit-requests-reset': '1s',
        'anthropic-ratelimit-output-tokens-limit': '8000',
        'anthropic-ratelimit-output-tokens-remaining': '8000',
      },
      {},
    ],
    ['no headers', {}, {}],
    [
      'a limit missing its reset, or malformed, is not read',
      {
        'x-ratelimit-limit-requests': '60',
        'x-ratelimit-remaining-requests': '59',
        'x-ratelimit-limit-tokens': 'lots',
        'x-ratelimit-remaining-tokens': '1',
        'x-ratelimit-reset-tokens': '1s',
      },
      {},
    ],
  ])('%s', (_, record, expected) => {
    expect(readRateLimitHeaders(headers(record), NOW)).toEqual(expected);
  });
});

describe('Pacer: spaces an account’s calls over the time to reset once a limit runs low', () => {
  test('Anthropic output tokens low: calls are spaced by the max_tokens each may use', () => {
    const p = new Pacer({ now: () => NOW });
    // 8,000 output tokens a minute, 400 left, whole again in 57 s: 8,000 / 60 s refill.
    const read = {
      'anthropic-ratelimit-output-tokens-limit': '8000',
      'anthropic-ratelimit-output-tokens-remaining': '400',
      'anthropic-ratelimit-output-tokens-reset': '2026-12-01T12:00:57Z',
    };
    p.observe(readRateLimitHeaders(headers(read), NOW));
    const cost = estimateCost(400, 4_096);
    expect(p.reserve(cost)).toBeCloseTo((4_096 - 400) / (7_600 / 57_000), -1);
    expect(p.state()).toMatchObject({ pacing: true, binding: 'output_tokens' });
  });

  function pacer(reading: RateLimitReading) {
    let time = NOW;
    const p = new Pacer({ now: () => time });
    p.observe(reading);
    return { p, advance: (ms: number) => (time += ms) };
  }

  test('plenty left: calls go at once, and nothing is paced', () => {
    const { p } = pacer({ requests: { limit: 100, remaining: 80, resetAt: NOW + 10_000 } });
    expect(Array.from({ length: 60 }, () => p.reserve(ONE_REQUEST))).toEqual(Array(60).fill(0));
    expect(p.state()).toMatchObject({ pacing: false, limits: { requests: { left: 20 } } });
  });

  test('a whole limit is spent down to its 2% margin before calls are spaced', () => {
    // The margin is never spent once pacing: on a run bound by the limit, it is left unused at
    // the end. 1,000 a minute, 999 left: 980 go at once, the rest at the refill, 60 ms apart.
    const { p } = pacer({ requests: { limit: 1_000, remaining: 999, resetAt: NOW + 60 } });
    const waits = Array.from({ length: 983 }, () => Math.round(p.reserve(ONE_REQUEST)));
    expect(waits.filter((w) => w === 0)).toHaveLength(980);
    expect(waits.slice(980)).toEqual([60, 120, 180]);
  });

  test('low: calls go at the rate the limit refills until its reset', () => {
    // 6 of 300 left (the 2% low share) and 294 s until whole: it refills 1 a second.
    const { p } = pacer({ requests: { limit: 300, remaining: 6, resetAt: NOW + 294_000 } });
    const waits = Array.from({ length: 5 }, () => Math.round(p.reserve(ONE_REQUEST)));
    expect(waits).toEqual([0, 1_000, 2_000, 3_000, 4_000]);
    expect(p.state()).toMatchObject({ pacing: true, binding: 'requests', spacingMs: 1_000 });
  });

  test('used up: the next call waits for the units it needs to refill', () => {
    const { p } = pacer({ requests: { limit: 60, remaining: 0, resetAt: NOW + 60_000 } });
    expect(Math.round(p.reserve(ONE_REQUEST))).toBe(1_000);
    expect(Math.round(p.reserve(ONE_REQUEST))).toBe(2_000);
  });

  test('tokens: a call is paced by its estimated tokens, not by its count', () => {
    // 20k of 100k tokens left, whole again in 40 s: it refills 2,000 a second.
    const { p } = pacer({ tokens: { limit: 100_000, remaining: 20_000, resetAt: NOW + 40_000 } });
    const cost = estimateCost(4 * 4_000, 1_000);
    expect(cost).toEqual({ requests: 1, tokens: 5_000, inputTokens: 4_000, outputTokens: 1_000 });
    // 15k, 10k and 5k left after these: not low yet.
    expect(p.reserve(cost)).toBe(0);
    expect(p.reserve(cost)).toBe(0);
    expect(p.reserve(cost)).toBe(0);
    // Under 2% after the fourth: from it on, 5k tokens every 2.5 s.
    expect(p.reserve(cost)).toBe(0);
    expect(Math.round(p.reserve(cost))).toBe(2_500);
    expect(Math.round(p.reserve(cost))).toBe(5_000);
  });

  test('a past reset is a whole limit again: no pacing', () => {
    const { p, advance } = pacer({ requests: { limit: 60, remaining: 0, resetAt: NOW + 60_000 } });
    advance(60_000);
    expect(p.reserve(ONE_REQUEST)).toBe(0);
  });

  test('a newer reading replaces the old one; an overtaken older answer cannot raise what is left', () => {
    const { p } = pacer({ requests: { limit: 100, remaining: 50, resetAt: NOW + 10_000 } });
    p.observe({ requests: { limit: 100, remaining: 3, resetAt: NOW + 10_000 } });
    p.observe({ requests: { limit: 100, remaining: 40, resetAt: NOW + 9_000 } });
    expect(p.state().limits.requests).toEqual({ limit: 100, left: 3, resetInMs: 10_000 });
    p.observe({ requests: { limit: 100, remaining: 100, resetAt: NOW + 20_000 } });
    expect(p.state().limits.requests?.left).toBe(100);
  });

  test('calls sent after the answered one, or booked to go later, count against its reading', () => {
    // The provider counts a call when it arrives: an answer's `remaining` leaves out the calls
    // sent after it (in flight) and those still waiting out their spacing.
    const { p, advance } = pacer({
      requests: { limit: 500, remaining: 20, resetAt: NOW + 60_000 },
    });
    expect(p.reserve(ONE_REQUEST)).toBe(0); // the call answered below, sent at NOW
    advance(50);
    const waits = Array.from({ length: 14 }, () => p.reserve(ONE_REQUEST));
    // 10 go at once (the last of them the first spaced one); the 4 after them 125 ms apart.
    expect(waits.filter((w) => w === 0)).toHaveLength(10);
    advance(50);
    // The first call's answer: the provider had seen only it, so 19 left (and its reset is later).
    // The 14 count against it, and so does the answered call: sent within the second before it,
    // it might not have been seen yet.
    p.observe({ requests: { limit: 500, remaining: 19, resetAt: NOW + 60_100 } }, NOW);
    expect(p.state().limits.requests?.left).toBe(19 - 14 - 1);
    // Still low: the next call is spaced after the ones already booked, not sent at once.
    expect(p.reserve(ONE_REQUEST)).toBeGreaterThan(5 * 125 - 100);
  });

  test('calls sent just before the answered one count too: it may have overtaken them', () => {
    // A burst of 20; the last one sent is answered first, the provider having seen it and only 5
    // of the others: 24 left by its reading, 10 in truth once the other 14 arrive.
    const { p } = pacer({ requests: { limit: 100, remaining: 30, resetAt: NOW + 60_000 } });
    for (let i = 0; i < 20; i++) expect(p.reserve(ONE_REQUEST)).toBe(0);
    p.observe({ requests: { limit: 100, remaining: 24, resetAt: NOW + 60_100 } }, NOW);
    // Counted as used, the 20 leave 4, not 24: the calls after it are spaced, not sent into 429s.
    expect(p.state().limits.requests?.left).toBe(4);
    // 3 more go at once (the last of them the first spaced one), then they wait for the refill.
    const waits = Array.from({ length: 4 }, () => p.reserve(ONE_REQUEST));
    expect(waits.slice(0, 3)).toEqual([0, 0, 0]);
    expect(waits[3]).toBeGreaterThan(0);
  });

  test('calls sent over a second before the answered one are the provider’s count alone', () => {
    const { p, advance } = pacer({
      requests: { limit: 100, remaining: 30, resetAt: NOW + 60_000 },
    });
    for (let i = 0; i < 20; i++) p.reserve(ONE_REQUEST);
    advance(1_500);
    p.observe({ requests: { limit: 100, remaining: 10, resetAt: NOW + 60_100 } });
    expect(p.state().limits.requests?.left).toBe(10);
  });
});

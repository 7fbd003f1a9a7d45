import {
  AdaptiveConnections,
  FixedConnections,
  WALL_PROBE_WAIT_MS,
  type AdaptiveConnectionsOptions,
  type CallOutcome,
  type ConnectionLimiter,
  type Release,
} from '../../src/core/controller';

/** A clock the test moves by hand. */
function clock() {
  let time = 0;
  return { now: () => time, advance: (ms: number) => (time += ms) };
}

function adaptive(options: Partial<AdaptiveConnectionsOptions> = {}) {
  const time = clock();
  return { time, controller: new AdaptiveConnections({ now: time.now, ...options }) };
}

/** Takes `count` slots (all must be free at once) and returns their releases. */
async function take(limiter: ConnectionLimiter, count: number): Promise<Release[]> {
  return Promise.all(Array.from({ length: count }, () => limiter.acquire()));
}

/** Runs calls `inFlight` at a time until `calls` have succeeded. */
async function succeed(limiter: ConnectionLimiter, calls: number, inFlight: number) {
  for (let done = 0; done < calls; done += inFlight) {
    const releases = await take(limiter, Math.min(inFlight, calls - done));
    for (const release of releases) release({ kind: 'success' });
  }
}

/** One saturated round at the current limit: `limit` clean successes, all in flight together. */
async function saturatedRound(limiter: ConnectionLimiter) {
  const { limit } = limiter.snapshot();
  await succeed(limiter, Math.max(limit, 4), limit);
}

async function report(limiter: ConnectionLimiter, outcome: CallOutcome) {
  (await limiter.acquire())(outcome);
}

const limit = (limiter: ConnectionLimiter) => limiter.snapshot().limit;

/**
 * A refusal at the limit: as many calls in flight as it allows, the last one sent refused (the
 * provider pushed back there), the others ending in errors that say nothing to the controller.
 */
async function refuse(limiter: ConnectionLimiter, retryAfterMs?: number) {
  const releases = await take(limiter, limit(limiter));
  releases.at(-1)!({ kind: 'rateLimit', retryAfterMs });
  for (const release of releases.slice(0, -1)) release({ kind: 'error' });
}

/** Lets queued promise callbacks run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('AdaptiveConnections growth', () => {
  test("starts at Inspect's 20 and doubles per saturated round up to the ceiling", async () => {
    const { controller } = adaptive();
    const limits = [limit(controller)];
    for (let round = 0; round < 4; round += 1) {
      await saturatedRound(controller);
      limits.push(limit(controller));
    }
    expect(limits).toEqual([20, 40, 80, 100, 100]);
  });

  test.each([
    ['peak in-flight below 0.8 x limit', 20, 15, 20],
    ['peak in-flight at 0.8 x limit', 20, 16, 40],
    ['one success short of a round', 19, 20, 20],
  ])('%s: %i successes, %i in flight at once', async (_name, calls, inFlight, after) => {
    const { controller } = adaptive();
    await succeed(controller, calls, inFlight);
    expect(limit(controller)).toBe(after);
  });

  test('a round is at least 4 successes', async () => {
    const { controller } = adaptive({ min: 1, start: 2 });
    await succeed(controller, 3, 2);
    expect(limit(controller)).toBe(2);
    await succeed(controller, 1, 2);
    expect(limit(controller)).toBe(4);
  });

  test('after the first rate limit, +5% rounded up to a nice number', async () => {
    const { controller, time } = adaptive({ max: 200 });
    await refuse(controller);
    // Past the cooldown and the wall's hold (below).
    time.advance(WALL_PROBE_WAIT_MS);
    const limits = [limit(controller)];
    for (let round = 0; round < 5; round += 1) {
      await saturatedRound(controller);
      limits.push(limit(controller));
    }
    expect(limits).toEqual([15, 20, 25, 30, 35, 40]);
  });

  test.each([
    ['a success after a retry', { kind: 'success', retried: true }],
    ['a transient error', { kind: 'transient' }],
    ['a non-retryable error', { kind: 'error' }],
  ] as Array<[string, CallOutcome]>)('%s does not count toward a round', async (_name, outcome) => {
    const { controller } = adaptive();
    const releases = await take(controller, 20);
    releases.forEach((release, index) => release(index === 0 ? outcome : { kind: 'success' }));
    expect(limit(controller)).toBe(20);
    await report(controller, { kind: 'success' });
    expect(limit(controller)).toBe(40);
  });

  test('raising the ceiling does not raise the limit; the controller climbs into it', async () => {
    const { controller } = adaptive();
    controller.setCeiling(300);
    expect(controller.snapshot()).toMatchObject({ limit: 20, ceiling: 300 });
    for (let round = 0; round < 4; round += 1) await saturatedRound(controller);
    expect(limit(controller)).toBe(300);
  });
});

describe('AdaptiveConnections rate limits', () => {
  test.each([
    [100, 80],
    [105, 80],
    [85, 65],
    [20, 15],
    [12, 10],
    [10, 10],
  ])('a rate limit cuts %i to %i (x0.8, nice, never below min 10)', async (start, after) => {
    const { controller } = adaptive({ start, max: 200 });
    await refuse(controller);
    expect(limit(controller)).toBe(after);
    expect(controller.snapshot()).toMatchObject({
      cuts: start === after ? 0 : 1,
      rateLimitEpisodes: 1,
    });
  });

  test('one cut per 15 s cooldown; the burst is one episode', async () => {
    const { controller, time } = adaptive({ start: 100 });
    await refuse(controller);
    time.advance(14_999);
    await refuse(controller);
    expect(controller.snapshot()).toMatchObject({ limit: 80, cuts: 1, rateLimitEpisodes: 1 });
    time.advance(1);
    await refuse(controller);
    expect(controller.snapshot()).toMatchObject({ limit: 60, cuts: 2, rateLimitEpisodes: 2 });
  });

  test.each([
    ['a longer retry-after on the cut lengthens the cooldown', 30_000, 0, 29_999, 30_000],
    ['a shorter retry-after does not shorten it', 1_000, 0, 14_999, 15_000],
    ['a retry-after during the cooldown lengthens it too', undefined, 20_000, 29_999, 30_000],
  ])('%s', async (_name, onCut, later, stillCooling, cutsAgain) => {
    const { controller, time } = adaptive({ start: 100 });
    await refuse(controller, onCut);
    time.advance(10_000);
    await refuse(controller, later);
    time.advance(stillCooling - 10_000);
    await refuse(controller);
    expect(limit(controller)).toBe(80);
    time.advance(cutsAgain - stillCooling);
    await refuse(controller);
    expect(limit(controller)).toBe(60);
  });

  test('retry-after never drives the limit: the cut is x0.8 whatever the hint', async () => {
    const { controller } = adaptive({ start: 100 });
    await refuse(controller, 600_000);
    expect(limit(controller)).toBe(80);
  });

  test('successes during the cooldown do not grow the limit', async () => {
    const { controller, time } = adaptive({ start: 100 });
    await refuse(controller);
    await saturatedRound(controller);
    await saturatedRound(controller);
    expect(limit(controller)).toBe(80);
    time.advance(15_000);
    await saturatedRound(controller);
    expect(limit(controller)).toBe(85);
  });

  test('successes during the cooldown do not count toward the next round', async () => {
    const { controller, time } = adaptive({ start: 100 });
    await refuse(controller);
    await succeed(controller, 60, 60);
    time.advance(15_000);
    const releases = await take(controller, 80);
    releases.slice(0, 20).forEach((release) => release({ kind: 'success' }));
    expect(limit(controller)).toBe(80);
    releases.slice(20).forEach((release) => release({ kind: 'success' }));
    expect(limit(controller)).toBe(85);
  });

  test('the limit stays one step below where the provider pushed back until the wall is probed', async () => {
    const { controller, time } = adaptive({ start: 40, max: 200 });
    await saturatedRound(controller);
    const releases = await take(controller, 80);
    // Doubling took it to 80; the provider refused the 61st call: a wall at 61.
    releases[60]({ kind: 'rateLimit' });
    releases.forEach((release) => release({ kind: 'error' }));
    expect(limit(controller)).toBe(60);
    time.advance(15_000);
    for (let round = 0; round < 3; round += 1) await saturatedRound(controller);
    expect(limit(controller)).toBe(60);
    // Two minutes after the refusal the controller may try the wall again.
    time.advance(WALL_PROBE_WAIT_MS - 15_000);
    await saturatedRound(controller);
    expect(limit(controller)).toBe(65);
  });

  test('a refusal far below the limit takes the limit below it at once, past the x0.8 cut', async () => {
    const { controller } = adaptive({ start: 100 });
    const releases = await take(controller, 51);
    releases[50]({ kind: 'rateLimit' });
    expect(controller.snapshot()).toMatchObject({ limit: 50, cuts: 1 });
  });

  test('a new episode moves the wall to where it came', async () => {
    const { controller, time } = adaptive({ start: 100, max: 200 });
    await refuse(controller); // at 100: the limit goes to 80, held below 100
    time.advance(15_000);
    const releases = await take(controller, 80);
    releases[69]({ kind: 'rateLimit' }); // at 70: held at 65 from now
    releases.forEach((release) => release({ kind: 'error' }));
    expect(limit(controller)).toBe(60);
    time.advance(15_000);
    for (let round = 0; round < 3; round += 1) await saturatedRound(controller);
    expect(limit(controller)).toBe(65);
  });

  test('transient errors never cut', async () => {
    const { controller } = adaptive({ start: 100 });
    const releases = await take(controller, 100);
    for (const release of releases) release({ kind: 'transient' });
    expect(controller.snapshot()).toMatchObject({ limit: 100, cuts: 0, rateLimitEpisodes: 0 });
  });
});

describe('slots', () => {
  test('waiters are served first come, first served', async () => {
    const limiter = new FixedConnections(2, { now: () => 0 });
    const [first, second] = await take(limiter, 2);
    const served: string[] = [];
    const waiting = ['c', 'd', 'e'].map((name) =>
      limiter.acquire().then((release) => {
        served.push(name);
        return release;
      }),
    );
    expect(limiter.snapshot()).toMatchObject({ inFlight: 2, waiting: 3 });
    first({ kind: 'success' });
    second({ kind: 'success' });
    await settle();
    expect(served).toEqual(['c', 'd']);
    (await waiting[0])({ kind: 'success' });
    await settle();
    expect(served).toEqual(['c', 'd', 'e']);
  });

  test('a newcomer does not jump the queue', async () => {
    const limiter = new FixedConnections(1, { now: () => 0 });
    const [held] = await take(limiter, 1);
    const served: string[] = [];
    void limiter.acquire().then(() => served.push('queued'));
    held({ kind: 'success' });
    void limiter.acquire().then(() => served.push('newcomer'));
    await settle();
    expect(served).toEqual(['queued']);
  });

  test.each([
    ['a lower ceiling', (controller: AdaptiveConnections) => controller.setCeiling(5)],
    [
      'a rate-limit cut',
      (controller: AdaptiveConnections) => void report(controller, { kind: 'rateLimit' }),
    ],
  ])('lowering by %s never interrupts calls in flight', async (_name, lower) => {
    const { controller } = adaptive({ min: 5 });
    const inFlight = await take(controller, 19);
    lower(controller);
    await settle();
    const to = limit(controller);
    expect(controller.snapshot().inFlight).toBe(19);
    let admitted = false;
    void controller.acquire().then(() => (admitted = true));
    // Calls finish normally; a new one waits until in-flight is below the new limit.
    for (const release of inFlight.slice(0, 19 - to)) release({ kind: 'success' });
    await settle();
    expect(admitted).toBe(false);
    inFlight[19 - to]({ kind: 'success' });
    await settle();
    expect(admitted).toBe(true);
  });

  test('an aborted waiter leaves the queue with the signal reason', async () => {
    const limiter = new FixedConnections(1, { now: () => 0 });
    const [held] = await take(limiter, 1);
    const abort = new AbortController();
    const gone = limiter.acquire(abort.signal);
    const next = limiter.acquire();
    abort.abort(new Error('sample cancelled'));
    await expect(gone).rejects.toThrow('sample cancelled');
    expect(limiter.snapshot().waiting).toBe(1);
    held({ kind: 'success' });
    await expect(next).resolves.toEqual(expect.any(Function));
    await expect(limiter.acquire(abort.signal)).rejects.toThrow('sample cancelled');
  });

  test('a second release of the same slot is ignored', async () => {
    const limiter = new FixedConnections(2, { now: () => 0 });
    const [release] = await take(limiter, 2);
    release({ kind: 'success' });
    release({ kind: 'success' });
    expect(limiter.snapshot()).toMatchObject({ inFlight: 1, successes: 1 });
  });
});

describe('windows', () => {
  test('drainWindow returns the window and starts a new one', async () => {
    const { controller, time } = adaptive({ start: 100 });
    await refuse(controller);
    await refuse(controller);
    time.advance(15_000);
    await refuse(controller);
    await report(controller, { kind: 'transient' });
    await report(controller, { kind: 'success' });
    controller.setCeiling(70);
    expect(controller.drainWindow()).toEqual({
      limit: 60,
      lowestLimit: 60,
      rateLimitSignals: 3,
      rateLimitEpisodes: 2,
      cuts: 2,
      transientErrors: 1,
      successes: 1,
      queuedShare: 0,
      pushbackLevel: 100,
    });
    expect(controller.drainWindow()).toEqual({
      limit: 60,
      lowestLimit: 60,
      rateLimitSignals: 0,
      rateLimitEpisodes: 0,
      cuts: 0,
      transientErrors: 0,
      successes: 0,
      queuedShare: 0,
      pushbackLevel: null,
    });
    expect(controller.snapshot()).toMatchObject({
      cuts: 2,
      rateLimitEpisodes: 2,
      successes: 1,
      ceiling: 70,
    });
  });
});

describe('pushback level of a window', () => {
  test('is the calls in flight when the refused attempt was sent, itself included', async () => {
    const { controller, time } = adaptive({ start: 100 });
    const releases = await take(controller, 30);
    // The 25th call sent is refused while 30 are in flight: the level is 25, not 30. The limit
    // goes one step below it (20), not to 80: the wall holds it.
    releases[24]({ kind: 'rateLimit' });
    expect(limit(controller)).toBe(20);
    // Inside the cooldown: the same episode, whatever the level.
    releases[29]({ kind: 'rateLimit' });
    time.advance(15_000);
    releases[0]({ kind: 'success' });
    expect(controller.drainWindow().pushbackLevel).toBe(25);
    // A later episode: the next window has its own level.
    releases[9]({ kind: 'rateLimit' });
    expect(controller.drainWindow().pushbackLevel).toBe(10);
    expect(controller.drainWindow().pushbackLevel).toBeNull();
  });

  test('is the level in flight, not the limit, when fewer calls than the limit run', async () => {
    const { controller } = adaptive({ start: 100 });
    const releases = await take(controller, 12);
    releases[11]({ kind: 'rateLimit' });
    expect(controller.drainWindow()).toMatchObject({ limit: 20, pushbackLevel: 12 });
  });

  test('after a burst, is one more than the calls the provider held when it refused', async () => {
    // A provider that holds 60 of our calls, met by a burst of 80 granted together: the one
    // granted 58th reached it behind 60 others and was refused. Its send level (58) would hold the
    // account at 55; the 60 of the calls in flight at the refusal that succeed put the wall at 61.
    const { controller, time } = adaptive({ start: 80, max: 100 });
    const releases = await take(controller, 80);
    releases[57]({ kind: 'rateLimit' });
    expect(limit(controller)).toBe(55);
    const others = releases.filter((_, i) => i !== 57);
    for (const release of others.slice(0, 60)) release({ kind: 'success' });
    for (const release of others.slice(60)) release({ kind: 'rateLimit' });
    expect(controller.drainWindow().pushbackLevel).toBe(61);
    // The cut is redone under the measured wall at once: 0.8 x 80, one step below 61.
    expect(limit(controller)).toBe(60);
    // After the cooldown the controller stays one step below the measured wall.
    time.advance(15_000);
    for (let round = 0; round < 5; round++) await saturatedRound(controller);
    expect(limit(controller)).toBe(60);
  });

  test('a refusal in a steady stream keeps its send level, which the calls still in flight undercount', async () => {
    // 60 in flight and a 61st sent: refused. By then one of the 60 has ended, so the calls in
    // flight at the refusal (59, all accepted) say 60, less than the send level.
    const { controller } = adaptive({ start: 80, max: 100 });
    const releases = await take(controller, 61);
    releases[0]({ kind: 'success' });
    releases[60]({ kind: 'rateLimit' });
    for (const release of releases.slice(1, 60)) release({ kind: 'success' });
    expect(controller.drainWindow().pushbackLevel).toBe(61);
  });

  test('a level measured after its window was drained moves only the controller', async () => {
    const { controller, time } = adaptive({ start: 80, max: 100 });
    const releases = await take(controller, 80);
    releases[57]({ kind: 'rateLimit' });
    expect(controller.drainWindow().pushbackLevel).toBe(58);
    for (const release of releases.filter((_, i) => i !== 57)) release({ kind: 'success' });
    expect(controller.drainWindow().pushbackLevel).toBeNull();
    // The 79 accepted put the controller's own wall at 80: it climbs back to 75, not 55.
    time.advance(15_000);
    for (let round = 0; round < 8; round++) await saturatedRound(controller);
    expect(limit(controller)).toBe(75);
  });

  test('a fixed limit reports it too, and transient errors never do', async () => {
    const limiter = new FixedConnections(30, { now: () => 0 });
    const releases = await take(limiter, 20);
    releases[19]({ kind: 'transient' });
    expect(limiter.drainWindow().pushbackLevel).toBeNull();
    releases[17]({ kind: 'rateLimit', retryAfterMs: 1_000 });
    expect(limiter.drainWindow().pushbackLevel).toBe(18);
  });
});

describe('queued share of a window', () => {
  test('is the share of the window during which a call waited for a slot', async () => {
    const time = clock();
    const limiter = new FixedConnections(1, { now: time.now });
    const first = await limiter.acquire();
    time.advance(1_000); // nobody waiting
    const second = limiter.acquire();
    time.advance(3_000); // one call queued behind the slot
    first({ kind: 'success' });
    (await second)({ kind: 'success' });
    expect(limiter.drainWindow().queuedShare).toBe(0.75);
  });

  test('a queue that outlasts the window counts in both windows, and not twice', async () => {
    const time = clock();
    const limiter = new FixedConnections(1, { now: time.now });
    const held = await limiter.acquire();
    const waiting = limiter.acquire();
    time.advance(2_000);
    expect(limiter.drainWindow().queuedShare).toBe(1);
    time.advance(1_000);
    held({ kind: 'success' });
    time.advance(3_000);
    (await waiting)({ kind: 'success' });
    expect(limiter.drainWindow().queuedShare).toBe(0.25);
  });

  test('an adaptive limit still doubling does not count, one that met a rate limit does', async () => {
    const { controller, time } = adaptive({ start: 1, min: 1 });
    const first = await controller.acquire();
    const second = controller.acquire();
    time.advance(1_000); // queued in slow start: not counted
    first({ kind: 'rateLimit' }); // the limit has met the provider: from here queueing counts
    const third = controller.acquire();
    time.advance(1_000);
    (await second)({ kind: 'success' });
    (await third)({ kind: 'success' });
    expect(controller.drainWindow().queuedShare).toBe(0.5);
  });

  test('a waiter that gives up stops the clock', async () => {
    const time = clock();
    const limiter = new FixedConnections(1, { now: time.now });
    await limiter.acquire();
    const abort = new AbortController();
    const gaveUp = limiter.acquire(abort.signal).catch(() => 'aborted');
    time.advance(1_000);
    abort.abort();
    expect(await gaveUp).toBe('aborted');
    time.advance(3_000);
    expect(limiter.drainWindow().queuedShare).toBe(0.25);
  });
});

describe('FixedConnections', () => {
  test('never moves, yet counts rate-limit episodes for the ramp', async () => {
    const time = clock();
    const limiter = new FixedConnections(30, { now: time.now });
    limiter.setCeiling(200);
    await report(limiter, { kind: 'rateLimit' });
    await report(limiter, { kind: 'rateLimit' });
    time.advance(15_000);
    await report(limiter, { kind: 'rateLimit' });
    expect(limiter.snapshot()).toMatchObject({
      limit: 30,
      ceiling: 30,
      cuts: 0,
      rateLimitEpisodes: 2,
    });
    expect(limiter.drainWindow()).toMatchObject({ rateLimitSignals: 3, rateLimitEpisodes: 2 });
  });

  test('a share of it (several hosts on the account) lowers it; nothing raises it past the number', () => {
    const limiter = new FixedConnections(100, { now: clock().now });
    limiter.setCeiling(40);
    expect(limiter.snapshot()).toMatchObject({ limit: 40, ceiling: 40 });
    limiter.setCeiling(60);
    expect(limiter.snapshot()).toMatchObject({ limit: 60 });
    limiter.setCeiling(500);
    expect(limiter.snapshot()).toMatchObject({ limit: 100 });
  });

  test.each([0, -1, 2.5])('rejects max_connections %p', (connections) => {
    expect(() => new FixedConnections(connections, { now: () => 0 })).toThrow(RangeError);
  });
});

test.each([[{ min: 0 }], [{ start: 5 }], [{ start: 150 }]])(
  'AdaptiveConnections rejects bounds %p',
  (bounds) => {
    expect(() => new AdaptiveConnections({ now: () => 0, ...bounds })).toThrow(RangeError);
  },
);

import type { Release } from '../../src/core/controller';
import { AccountHost, type AccountRef } from '../../src/models/account-host';

function clock() {
  let time = 0;
  return { now: () => time, advance: (ms: number) => (time += ms) };
}

const adaptive = { type: 'adaptive', min: 10, start: 20, max: 100 } as const;

function account(model: string, key = 'k1'): AccountRef {
  return {
    key: `openai-api\u0000http://sim\u0000${key}\u0000${model}`,
    label: `${model} at http://sim`,
    keyHash: key,
    connections: adaptive,
  };
}

function host() {
  const time = clock();
  return { time, host: new AccountHost({ now: time.now, owner: { pid: 7, host: 'vm' } }) };
}

async function take(slots: { acquire(): Promise<Release> }, n: number): Promise<Release[]> {
  return Promise.all(Array.from({ length: n }, () => slots.acquire()));
}

describe('AccountHost: one controller per account for every process of the host', () => {
  test('two processes (users) on one account share one limit of 20, not 20 each', async () => {
    const { host: h } = host();
    const a = h.slots(account('m'), { evalSetId: 'e', tasks: ['t1'] });
    const b = h.slots(account('m'), { evalSetId: 'e', tasks: ['t2'] });
    await take(a, 15);
    await take(b, 5);
    let granted = false;
    void b.acquire().then(() => (granted = true));
    await new Promise((r) => setImmediate(r));
    expect(granted).toBe(false);
    expect(h.snapshot()).toEqual([
      expect.objectContaining({
        label: 'm at http://sim',
        limit: 20,
        inFlight: 20,
        waiting: 1,
        users: { e: ['t1', 't2'] },
      }),
    ]);
  });

  test.each([
    ['different models', account('m1'), account('m2')],
    ['different keys', account('m', 'k1'), account('m', 'k2')],
  ])('%s are different accounts', (_, x, y) => {
    const { host: h } = host();
    expect(h.slots(x, null)).not.toBe(h.slots(y, null));
    expect(h.snapshot()).toHaveLength(2);
  });

  test('a window is reported once per account, naming every task on it, with its retries', async () => {
    const { host: h, time } = host();
    const slots = h.slots(account('m'), { evalSetId: 'e', tasks: ['t1', 't2'] });
    h.slots(account('m'), { evalSetId: 'e', tasks: ['t3'] });
    const [r1, r2] = await take(slots, 2);
    time.advance(1_000);
    r1({ kind: 'rateLimit' });
    r2({ kind: 'rateLimit' });
    h.retried(account('m').key);
    h.retried(account('m').key);
    time.advance(1_000);
    expect(h.drain('e')).toEqual([
      {
        account: 'm at http://sim key k1',
        tasks: ['t1', 't2', 't3'],
        pid: 7,
        host: 'vm:7',
        // Both calls wanted a slot at once.
        demand: 2,
        limit: 15,
        rateLimitEpisodes: 2,
        cuts: 1,
        retries: 2,
        queuedShare: 0,
        // The first refusal's call was sent alone; the second came inside its cooldown.
        pushbackLevel: 1,
        inFlight: 0,
        pacing: { pacing: false, binding: null, spacingMs: 0 },
      },
    ]);
    // Drained: the next window starts empty.
    time.advance(1_000);
    expect(h.drain('e')).toEqual([
      expect.objectContaining({ rateLimitEpisodes: 0, cuts: 0, retries: 0, pushbackLevel: null }),
    ]);
  });

  test('two eval sets on one account each get the whole window, whenever each tends', async () => {
    const { host: h, time } = host();
    const slots = h.slots(account('m'), { evalSetId: 'a', tasks: ['x'] });
    h.slots(account('m'), { evalSetId: 'b', tasks: ['y'] });
    const [r1] = await take(slots, 1);
    r1({ kind: 'rateLimit' });
    time.advance(500);
    expect(h.drain('a')).toEqual([expect.objectContaining({ tasks: ['x'], rateLimitEpisodes: 1 })]);
    const [r2] = await take(slots, 1);
    r2({ kind: 'rateLimit' });
    time.advance(500);
    // b's window holds both signals: the one a was told of, and the later one.
    expect(h.drain('b')).toEqual([expect.objectContaining({ tasks: ['y'], rateLimitEpisodes: 2 })]);
    expect(h.drain('a')).toEqual([expect.objectContaining({ rateLimitEpisodes: 1 })]);
  });

  test('a task newly on an account is news until a report names it; another eval set hears its own', async () => {
    const { host: h, time } = host();
    const slots = h.slots(account('m'), { evalSetId: 'a', tasks: ['x'] });
    // Nothing reported yet: the first report (the introduction) is news as well.
    expect(h.hasNews('a')).toBe(true);
    const [r1] = await take(slots, 1);
    r1({ kind: 'success' });
    time.advance(500);
    h.drain('a');
    expect(h.hasNews('a')).toBe(false);
    h.slots(account('m'), { evalSetId: 'a', tasks: ['x'] });
    expect(h.hasNews('a')).toBe(false);
    h.slots(account('m'), { evalSetId: 'a', tasks: ['y'] });
    expect(h.hasNews('a')).toBe(true);
    expect(h.hasNews('b')).toBe(false);
    expect(h.drain('a')).toEqual([expect.objectContaining({ tasks: ['x', 'y'] })]);
    expect(h.hasNews('a')).toBe(false);
    h.forget('a');
    expect(h.hasNews('a')).toBe(false);
  });

  test('an eval set whose calls never used an account gets no report and is not "in use"', () => {
    const { host: h } = host();
    h.slots(account('m'), { evalSetId: 'a', tasks: ['x'] });
    expect(h.uses('b')).toBe(false);
    expect(h.drain('b')).toEqual([]);
  });

  test.each([
    ['one task', { x: 40 }, 40],
    ['the lowest ceiling of the tasks on the account', { x: 60, y: 30 }, 30],
    ['unset ceilings are ignored', { x: null, y: 50 }, 50],
  ])('the ceiling: %s', async (_, ceilings, expected) => {
    const { host: h } = host();
    h.slots(account('m'), { evalSetId: 'e', tasks: ['x', 'y'] });
    h.applyControl('e', { ceilings });
    expect(h.snapshot()[0].ceiling).toBe(expected);
  });

  test.each([
    ['its share of the split', { a: 'vm:7', shares: { 'vm:7': 25, 'vm:8': 75 } }, 25],
    [
      'not named yet: one slot, until the eval set splits it in',
      { shares: { 'vm:8': 60, 'vm:9': 30 } },
      1,
    ],
    ['no split yet: the whole ceiling', { shares: {} }, 90],
  ])('an account split among hosts: this host takes %s', (_, split, expected) => {
    const { host: h } = host();
    h.slots(account('m'), { evalSetId: 'e', tasks: ['x'] });
    h.applyControl('e', {
      // Task ceilings say the whole account; the split is what this host may use of it.
      ceilings: { x: 90 },
      accounts: { 'm at http://sim key k1': { ceiling: 90, shares: split.shares } },
    });
    expect(h.snapshot()[0].ceiling).toBe(expected);
  });

  test('demand is the most calls in flight or waiting at once in the window, then what is left', async () => {
    const { host: h, time } = host();
    const slots = h.slots(account('m'), { evalSetId: 'e', tasks: ['x'] });
    const held = await take(slots, 20);
    const waiting = Array.from({ length: 5 }, () => slots.acquire());
    time.advance(1_000);
    expect(h.drain('e')[0].demand).toBe(25);
    for (const r of held) r({ kind: 'success' });
    for (const r of await Promise.all(waiting)) r({ kind: 'success' });
    // The next window starts from what was wanted when it began (25), not from zero.
    time.advance(1_000);
    expect(h.drain('e')[0].demand).toBe(25);
    time.advance(1_000);
    expect(h.drain('e')[0].demand).toBe(0);
  });

  test('a call that gives up waiting for a slot stops counting as demand', async () => {
    const { host: h, time } = host();
    const slots = h.slots(account('m'), { evalSetId: 'e', tasks: ['x'] });
    const blockers = await take(slots, 20);
    const gaveUp = new AbortController();
    const abandoned = slots.acquire(gaveUp.signal).then(
      () => 'granted',
      () => 'aborted',
    );
    gaveUp.abort();
    expect(await abandoned).toBe('aborted');
    time.advance(1_000);
    expect(h.drain('e')[0].demand).toBe(21);
    for (const r of blockers) r({ kind: 'success' });
    time.advance(1_000);
    expect(h.drain('e')[0].demand).toBe(20);
    time.advance(1_000);
    expect(h.drain('e')[0].demand).toBe(0);
  });

  test('queued share is the share of the time calls waited, across drains', async () => {
    const { host: h, time } = host();
    const slots = h.slots(account('m'), { evalSetId: 'e', tasks: ['x'] });
    const first = await take(slots, 20);
    // A rate limit makes the limit bind; queueing while doubling is not counted.
    first[0]({ kind: 'rateLimit' });
    const queued = slots.acquire();
    time.advance(3_000);
    for (const r of first.slice(1)) r({ kind: 'success' });
    await queued;
    time.advance(1_000);
    const [report] = h.drain('e');
    expect(report.queuedShare).toBeCloseTo(0.75);
  });

  test('forgetting an eval set stops its reports', () => {
    const { host: h } = host();
    h.slots(account('m'), { evalSetId: 'e', tasks: ['x'] });
    h.applyControl('e', { ceilings: { x: 30 } });
    h.forget('e');
    expect(h.uses('e')).toBe(false);
    expect(h.snapshot()[0].users).toEqual({});
  });
});

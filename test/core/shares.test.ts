import {
  newcomerShare,
  splitAccount,
  splitByDemand,
  type HostDemand,
  type HostUse,
} from '../../src/core/shares';

/** A seeded generator of numbers in [0, 1), so a failure repeats. */
function seeded(seed: number): () => number {
  return () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

const hosts = (...demands: number[]): HostDemand[] =>
  demands.map((demand, i) => ({ host: `h${i + 1}`, demand }));

test.each<[string, number, HostDemand[], Record<string, number>]>([
  ['one host takes it all', 100, hosts(7), { h1: 100 }],
  ['by demand, one slot each first', 100, hosts(10, 30), { h1: 25, h2: 75 }],
  ['nobody wanted anything: evenly', 100, hosts(0, 0, 0, 0), { h1: 25, h2: 25, h3: 25, h4: 25 }],
  ['a host that wanted nothing keeps one slot', 40, hosts(0, 80), { h1: 1, h2: 39 }],
  ['remainders to the largest fractions', 10, hosts(1, 1, 1), { h1: 4, h2: 3, h3: 3 }],
  ['fewer slots than hosts: the hungriest first', 2, hosts(1, 9, 5), { h1: 0, h2: 1, h3: 1 }],
  ['no hosts', 50, [], {}],
  ['demand beyond capacity still splits all of it', 60, hosts(200, 100), { h1: 40, h2: 20 }],
])('%s', (_, capacity, input, expected) => {
  const shares = splitByDemand(capacity, input);
  expect(shares).toEqual(expected);
  if (input.length > 0 && capacity >= input.length) {
    expect(Object.values(shares).reduce((a, b) => a + b, 0)).toBe(capacity);
  }
});

test('the split never depends on the order hosts reported in', () => {
  const input = hosts(3, 17, 17, 0, 9);
  const reversed = [...input].reverse();
  expect(splitByDemand(97, reversed)).toEqual(splitByDemand(97, input));
});

test('shares sum to the capacity for any demands', () => {
  const random = seeded(7);
  for (let i = 0; i < 500; i++) {
    const n = 1 + Math.floor(random() * 8);
    const capacity = n + Math.floor(random() * 500);
    const input = hosts(...Array.from({ length: n }, () => Math.floor(random() * 300)));
    const shares = splitByDemand(capacity, input);
    expect(Object.values(shares).reduce((a, b) => a + b, 0)).toBe(capacity);
    for (const value of Object.values(shares)) expect(value).toBeGreaterThanOrEqual(1);
  }
});

test.each<[string, number, Record<string, number>, number]>([
  ['no split yet: the whole ceiling', 40, {}, 40],
  ['a split names others: one slot, taking nothing they were given', 90, { a: 45, b: 45 }, 1],
])('a newcomer: %s', (_, ceiling, shares, expected) => {
  expect(newcomerShare(ceiling, shares)).toBe(expected);
});

const use = (host: string, demand: number, inFlight: number): HostUse => ({
  host,
  demand,
  inFlight,
});

describe('splitAccount: the split the hosts may use now', () => {
  test.each<
    [string, number, HostUse[], Record<string, number> | undefined, Record<string, number>]
  >([
    [
      'a first split is the demand split',
      40,
      [use('a', 30, 10), use('b', 10, 5)],
      undefined,
      { a: 30, b: 10 },
    ],
    [
      'a small wobble of demand keeps the last split',
      40,
      [use('a', 22, 20), use('b', 18, 20)],
      { a: 20, b: 20 },
      { a: 20, b: 20 },
    ],
    [
      'a real shift moves it in two splits: first the shrinking host is told its share',
      40,
      [use('a', 90, 20), use('b', 10, 4)],
      { a: 20, b: 20 },
      // b may fill its 20 until it reads this split: a may not grow into them yet.
      { a: 20, b: 5 },
    ],
    [
      'then, once it holds no more than that, the growing host gets the rest',
      40,
      [use('a', 90, 20), use('b', 10, 4)],
      { a: 20, b: 5 },
      { a: 35, b: 5 },
    ],
    [
      'a host that has not read its last share yet may still fill it, however few calls it has now',
      40,
      [use('a', 10, 5), use('b', 90, 10)],
      { a: 30, b: 10 },
      { a: 5, b: 10 },
    ],
    [
      'while the shrinking host still has its calls in flight, the growing one gets only what is free',
      40,
      [use('a', 90, 20), use('b', 10, 20)],
      { a: 20, b: 5 },
      // b keeps its 20 calls until they end (a lower limit interrupts none): a may not grow yet.
      { a: 20, b: 5 },
    ],
    [
      'half drained: the growing host gets half its room',
      40,
      [use('a', 90, 20), use('b', 10, 12)],
      { a: 20, b: 5 },
      { a: 28, b: 5 },
    ],
    [
      'a host that joined takes what is free, not what others have in flight',
      40,
      [use('a', 40, 40), use('b', 40, 0)],
      { a: 40 },
      { a: 20, b: 1 },
    ],
    [
      'a host dropped without a goodbye holds its last share for this split',
      40,
      [use('a', 90, 20)],
      { a: 20, b: 20 },
      // b went silent, but may be alive and still filling its 20 until it reads this split.
      { a: 20 },
    ],
    [
      'and once a split no longer names it, its share is free',
      40,
      [use('a', 90, 20)],
      { a: 20 },
      { a: 40 },
    ],
    [
      'a lower ceiling (a wall) is handed down the same way',
      30,
      [use('a', 40, 20), use('b', 40, 20)],
      { a: 20, b: 20 },
      { a: 15, b: 15 },
    ],
  ])('%s', (_, capacity, hosts, previous, expected) => {
    expect(splitAccount(capacity, hosts, previous)).toEqual(expected);
  });

  test('what the hosts may use, may still use until they read the split, or still have in flight, never sums past the capacity when their calls allow it', () => {
    const random = seeded(11);
    for (let i = 0; i < 500; i++) {
      const n = 1 + Math.floor(random() * 6);
      const capacity = n * 2 + Math.floor(random() * 200);
      const previous = splitByDemand(
        capacity,
        Array.from({ length: n }, (_, k) => ({
          host: `h${k}`,
          demand: Math.floor(random() * 100),
        })),
      );
      // In flight within what each was given: the hosts kept to the last split.
      const hosts = Object.entries(previous).map(([host, share]) =>
        use(host, Math.floor(random() * 200), Math.floor(random() * (share + 1))),
      );
      // One in three times a host is gone from the report without a goodbye (dropped as
      // silent), yet may still fill its last share until it reads this split.
      const gone = n > 1 && random() < 1 / 3 ? hosts[Math.floor(random() * n)].host : undefined;
      const staying = hosts.filter((h) => h.host !== gone);
      const shares = splitAccount(capacity, staying, previous);
      // Until a host reads this split it may fill the last one's share.
      const committed = staying.reduce(
        (sum, h) => sum + Math.max(shares[h.host], previous[h.host], h.inFlight),
        gone === undefined ? 0 : previous[gone],
      );
      expect(committed).toBeLessThanOrEqual(capacity);
    }
  });
});

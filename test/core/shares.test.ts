import { newcomerShare, splitByDemand, type HostDemand } from '../../src/core/shares';

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
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
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
  ['two hosts named: a third of it', 90, { a: 45, b: 45 }, 30],
  ['never zero', 2, { a: 1, b: 1, c: 0 }, 1],
])('a newcomer: %s', (_, ceiling, shares, expected) => {
  expect(newcomerShare(ceiling, shares)).toBe(expected);
});

import {
  BUILT_IN_POOLS,
  RECOMMENDED_POOLS,
  canonicalCidr,
  capacity,
  cidrsOverlap,
  parseAddressPools,
  type AddressPool,
} from '../src/core/pools';

describe('capacity', () => {
  const cases: Array<[string, readonly AddressPool[], string[], number]> = [
    ['built-in pools on an empty daemon', BUILT_IN_POOLS, [], 31],
    ['built-in pools minus the default bridge', BUILT_IN_POOLS, ['172.17.0.0/16'], 30],
    ['the recommended fix', RECOMMENDED_POOLS, [], 512],
    // The bridge keeps 172.17.0.0/16 after the restart: sixteen /20s of 172.16.0.0/12 are lost.
    ['the recommended fix with the default bridge', RECOMMENDED_POOLS, ['172.17.0.0/16'], 496],
    ['a custom /16 carved into /24s', [{ base: '10.10.0.0/16', size: 24 }], [], 256],
    ['a pool as big as its networks', [{ base: '10.10.0.0/24', size: 24 }], [], 1],
    ['a used subnet inside one /20 blocks only that /20', BUILT_IN_POOLS, ['192.168.5.0/24'], 30],
    ['a used /14 blocks the four /16s it spans', BUILT_IN_POOLS, ['172.20.0.0/14'], 27],
    [
      'a used subnet written with host bits blocks the block it is in',
      [{ base: '10.0.0.0/16', size: 20 }],
      ['10.0.15.0/23'],
      15,
    ],
    [
      'a used subnet bigger than the whole pool',
      [{ base: '10.1.0.0/16', size: 24 }],
      ['10.0.0.0/8'],
      0,
    ],
    [
      'subnets outside the pools change nothing',
      BUILT_IN_POOLS,
      ['10.0.0.0/8', '100.64.0.0/10'],
      31,
    ],
    ['IPv6 and junk subnets are ignored', BUILT_IN_POOLS, ['fd00::/64', 'not-a-subnet'], 31],
    [
      'overlapping pools: the later one skips what the earlier one handed out',
      [
        { base: '10.0.0.0/16', size: 24 },
        { base: '10.0.0.0/8', size: 16 },
      ],
      [],
      256 + 255,
    ],
    ['no pools', [], [], 0],
  ];
  test.each(cases)('%s', (_name, pools, used, expected) => {
    expect(capacity(pools, used)).toBe(expected);
  });
});

describe('parseAddressPools', () => {
  test('reads daemon.json entries and canonicalises bases the way Docker does', () => {
    const { pools, issues } = parseAddressPools([
      { base: '172.17.0.0/12', size: 20 },
      { base: '192.168.0.0/16', size: 24 },
    ]);
    expect(issues).toEqual([]);
    expect(pools).toEqual(RECOMMENDED_POOLS);
    expect(capacity(pools, [])).toBe(512);
  });

  test('reads docker info entries (Base, Size)', () => {
    expect(parseAddressPools([{ Base: '10.10.0.0/16', Size: 24 }]).pools).toEqual([
      { base: '10.10.0.0/16', size: 24 },
    ]);
  });

  test('skips IPv6 pools, which do not limit IPv4 networks', () => {
    expect(parseAddressPools([{ base: 'fd00::/48', size: 64 }])).toEqual({ pools: [], issues: [] });
  });

  test('reports each malformed entry with its path and value', () => {
    const { pools, issues } = parseAddressPools([
      { base: '10.0.0.0/8', size: 4 },
      { base: '300.0.0.0/8', size: 16 },
      { size: 24 },
      { base: '10.0.0.0/8', size: 33 },
      { base: '10.0.0.0/8', size: 16 },
    ]);
    expect(pools).toEqual([{ base: '10.0.0.0/8', size: 16 }]);
    expect(issues.map((issue) => [issue.path, issue.value])).toEqual([
      ['default-address-pools.0.size', 4],
      ['default-address-pools.1.base', '300.0.0.0/8'],
      ['default-address-pools.2.base', undefined],
      ['default-address-pools.3.size', 33],
    ]);
  });

  test('a value that is not a list is one issue', () => {
    expect(parseAddressPools({ base: '10.0.0.0/8' }).issues).toHaveLength(1);
  });
});

describe('CIDR helpers', () => {
  test.each([
    ['172.17.0.0/12', '172.16.0.0/12'],
    ['192.168.1.77/16', '192.168.0.0/16'],
    ['10.1.2.3/32', '10.1.2.3/32'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['10.0.0.0', undefined],
    ['10.0.0.256/8', undefined],
  ])('canonicalCidr(%s) = %s', (input, expected) => {
    expect(canonicalCidr(input)).toBe(expected);
  });

  test.each([
    ['172.16.0.0/12', '172.17.0.0/16', true],
    ['172.17.0.0/16', '172.18.0.0/16', false],
    ['192.168.0.0/16', '192.168.255.0/24', true],
    ['10.0.0.0/8', 'fd00::/8', false],
  ])('cidrsOverlap(%s, %s) = %s', (a, b, expected) => {
    expect(cidrsOverlap(a, b)).toBe(expected);
  });
});

import {
  budgetUsed,
  evenShare,
  fitClimb,
  overBudgetCuts,
  startShares,
} from '../../src/core/budget';

const claims = (...setpoints: number[]) =>
  setpoints.map((setpoint, index) => ({ name: `t${index}`, setpoint }));

describe('evenShare', () => {
  test.each([
    [400, 10, 40],
    [400, 3, 133],
    [60, 3, 20],
    [5, 10, 0],
    [100, 0, 100],
  ])('budget %i over %i tasks is %i', (budget, tasks, share) => {
    expect(evenShare(budget, tasks)).toBe(share);
  });
});

describe('overBudgetCuts', () => {
  test.each([
    ['fits exactly: no cut', [50, 50], 100, []],
    ['under budget: no cut', [10, 20], 100, []],
    [
      'a new task pushed the fleet over: all above the share come down',
      [50, 50, 50],
      60,
      [20, 20, 20],
    ],
    ['tasks at or below the share keep theirs', [80, 10, 40], 100, [33, 10, 33]],
    ['the cut may go below lo (50)', [200, 200], 60, [30, 30]],
  ])('%s', (_name, setpoints, budget, after) => {
    const before = claims(...setpoints);
    const cuts = overBudgetCuts(before, budget);
    const result = before.map(
      (claim) => cuts.find((cut) => cut.name === claim.name)?.to ?? claim.setpoint,
    );
    expect(result).toEqual(after.length === 0 ? setpoints : after);
    if (after.length > 0) expect(budgetUsed(claims(...result))).toBeLessThanOrEqual(budget);
    expect(cuts.every((cut) => cut.from > cut.to)).toBe(true);
  });
});

describe('fitClimb', () => {
  const requests = (...pairs: Array<[number, number]>) =>
    pairs.map(([from, to], index) => ({ name: `t${index}`, from, to }));

  test.each([
    [
      'enough budget: every request in full',
      [
        [100, 120],
        [50, 70],
      ],
      100,
      [120, 70],
      60,
    ],
    ['no budget: nothing moves', [[100, 120]], 0, [100], 0],
    ['partial: capped by the budget', [[100, 120]], 7, [107], 0],
    [
      'lowest setpoint first',
      [
        [100, 120],
        [40, 60],
      ],
      20,
      [100, 60],
      0,
    ],
    [
      'levels up, then shares',
      [
        [20, 50],
        [34, 50],
      ],
      32,
      [43, 43],
      0,
    ],
    [
      'odd units go to the earliest request',
      [
        [20, 50],
        [20, 50],
      ],
      5,
      [23, 22],
      0,
    ],
    [
      'never past a request',
      [
        [10, 12],
        [10, 40],
      ],
      100,
      [12, 40],
      68,
    ],
    ['no request', [], 10, [], 10],
  ] as Array<[string, Array<[number, number]>, number, number[], number]>)(
    '%s',
    (_name, pairs, free, granted, left) => {
      expect(fitClimb(requests(...pairs), free)).toEqual({ granted, free: left });
    },
  );
});

describe('startShares', () => {
  test.each([
    [
      '10 newcomers, budget 400: 40 each',
      400,
      [],
      10,
      [40, 40, 40, 40, 40, 40, 40, 40, 40, 40],
      [],
    ],
    ['2 newcomers, budget 400: start 50, below the share', 400, [], 2, [50, 50], []],
    ['a newcomer cuts running tasks above the share', 200, [100, 100], 1, [50], [66, 66]],
    ['running tasks at or below the share are not cut', 200, [60, 120], 1, [50], [60, 66]],
    ['share 0: one each while units last', 3, [1], 4, [1, 1, 0, 0], [1]],
  ])('%s', (_name, budget, running, starting, setpoints, after) => {
    const result = startShares(budget, 50, claims(...running), starting);
    expect(result.setpoints).toEqual(setpoints);
    const cut = claims(...running).map(
      (claim) => result.cuts.find((c) => c.name === claim.name)?.to ?? claim.setpoint,
    );
    expect(cut).toEqual(after);
    expect(budgetUsed(claims(...cut, ...setpoints))).toBeLessThanOrEqual(budget);
  });
});

import {
  decideAccount,
  type AccountTendInput,
  type AccountWindow,
  type RampSettings,
} from '../../src/core/ramp';

const ramp: RampSettings = {
  samples: { type: 'ramp', lo: 50, hi: 200, step: 20, start: 50 },
  connections: { type: 'adaptive', min: 10, start: 20, max: 100 },
  maxSandboxes: null,
};
const NOW = 1_000_000;
const quiet: AccountWindow = {
  rateLimitEpisodes: 0,
  controllerCuts: 0,
  controllerLimit: 40,
  pushbackLevel: null,
};

function input(over: Partial<AccountTendInput> = {}): AccountTendInput {
  return {
    account: 'openai-api/sim/m at http://sim key abc',
    tasks: ['t1', 't2', 't3', 't4'],
    held: false,
    ceiling: 800,
    clamp: null,
    pushbackWindows: 0,
    wall: null,
    window: quiet,
    ...over,
  };
}

describe('decideAccount: the wall, the reversal clamp and the ceiling belong to the account', () => {
  test.each<[string, Partial<AccountTendInput>, RampSettings, number, string | null]>([
    ['4 tasks: the sum of their hi', { ceiling: 200 }, ramp, 800, 'sum of the hi of its 4 tasks'],
    ['one task: its hi', { tasks: ['t1'], ceiling: 200 }, ramp, 200, null],
    ['a task finished: the sum falls', { tasks: ['t1', 't2'] }, ramp, 400, 'fewer tasks'],
    [
      'max_connections fixed',
      {},
      { ...ramp, connections: { type: 'fixed', n: 30 } },
      30,
      'max_connections fixed at 30',
    ],
    [
      'no ramp active: the adaptive max',
      {},
      { ...ramp, samples: { type: 'pinned', value: 30 } },
      100,
      'no ramp active: adaptive max 100',
    ],
  ])('%s', (_, over, settings, ceiling, reason) => {
    const { state, changes } = decideAccount(settings, NOW, input(over));
    expect(state.ceiling).toBe(ceiling);
    if (reason === null) expect(changes).toEqual([]);
    else expect(changes[0].reason).toContain(reason);
  });

  test('pushback at 41 connections: a wall, held one step below it for 120 s, for every task on the account', () => {
    const { state, changes } = decideAccount(ramp, NOW, {
      ...input(),
      window: { ...quiet, rateLimitEpisodes: 3, controllerCuts: 1, pushbackLevel: 41 },
    });
    expect(state).toEqual({
      ceiling: 40,
      clamp: null,
      pushbackWindows: 1,
      wall: { level: 41, probeAt: NOW + 120_000, waitMs: 120_000 },
    });
    expect(changes).toEqual([
      {
        account: 'openai-api/sim/m at http://sim key abc',
        tasks: ['t1', 't2', 't3', 't4'],
        from: 800,
        to: 40,
        reason:
          'wall: the provider pushed back at 41 connections; held at 40 for 120 s before trying 41 again',
        at: NOW,
      },
    ]);
  });

  test('a standing wall keeps the ceiling under it until the probe, then lets it try the level', () => {
    const wall = { level: 41, probeAt: NOW + 60_000, waitMs: 120_000 };
    const before = decideAccount(ramp, NOW, input({ ceiling: 40, wall }));
    expect(before.state.ceiling).toBe(40);
    expect(before.changes).toEqual([]);
    const probe = decideAccount(ramp, NOW + 60_000, input({ ceiling: 40, wall }));
    expect(probe.state.ceiling).toBe(41);
    expect(probe.changes[0].reason).toBe('probe: 120 s under the wall at 41; trying 41 again');
  });

  test('pushback in two consecutive windows: reversal clamps to where the controller fell (never below 20)', () => {
    const window = { ...quiet, rateLimitEpisodes: 2, controllerLimit: 30, pushbackLevel: null };
    const first = decideAccount(ramp, NOW, input({ window }));
    expect(first.state).toMatchObject({ ceiling: 800, pushbackWindows: 1, clamp: null });
    const second = decideAccount(ramp, NOW, input({ ...first.state, window }));
    expect(second.state).toMatchObject({ ceiling: 30, clamp: 30, pushbackWindows: 2 });
    expect(second.changes[0].reason).toBe('reversal: clamped to where the controllers fell, 30');
    const low = decideAccount(ramp, NOW, {
      ...input({ ...first.state }),
      window: { ...window, controllerLimit: 12 },
    });
    expect(low.state.ceiling).toBe(20);
  });

  test('a clamp lifts one step per clean window, and not under a hold', () => {
    const clamped = input({ ceiling: 30, clamp: 30 });
    const clean = decideAccount(ramp, NOW, clamped);
    expect(clean.state).toMatchObject({ ceiling: 50, clamp: 50 });
    expect(clean.changes[0].reason).toBe(
      'climb: connection ceiling raised one step after a clean window',
    );
    const held = decideAccount(ramp, NOW, { ...clamped, held: true });
    expect(held.state).toMatchObject({ ceiling: 30, clamp: 30 });
    expect(held.changes).toEqual([]);
  });
});

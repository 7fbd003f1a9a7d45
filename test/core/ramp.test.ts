import {
  decideTend,
  initialSetpoints,
  type ConnectionsMode,
  type Holds,
  type RampChange,
  type RampSettings,
  type SamplesMode,
  type TaskTendInput,
  type TaskTendPlan,
  type TaskWindow,
  type TendInput,
  WALL_PROBE_MAX_WAIT_MS,
} from '../../src/core/ramp';
import { WALL_PROBE_WAIT_MS } from '../../src/core/controller';

const rampMode: SamplesMode = { type: 'ramp', lo: 50, hi: 200, step: 20, start: 50 };
const adaptive: ConnectionsMode = { type: 'adaptive', min: 10, start: 20, max: 100 };
const noHolds: Holds = { global: null, tasks: {} };
const hold = (reason: string) => ({ reason, since: 0, by: 'ops' });

function settings(over: Partial<RampSettings> = {}): RampSettings {
  return { samples: rampMode, connections: adaptive, maxSandboxes: null, ...over };
}

/** A window in which every climb gate held. */
const clean: TaskWindow = {
  saturated: true,
  rateLimitEpisodes: 0,
  controllerCuts: 0,
  controllerLimit: null,
  httpRetries: 0,
  sampleErrors: 0,
  networkCapacityErrors: 0,
  connectionQueuedShare: 0,
  pushbackLevel: null,
};
/** A window with rate-limit pushback and nothing else of note. */
const pushback: TaskWindow = { ...clean, rateLimitEpisodes: 3, controllerCuts: 1 };

type TaskOver = Partial<Omit<TaskTendInput, 'window'>> & { window?: Partial<TaskWindow> };

function task(over: TaskOver = {}): TaskTendInput {
  const { window, ...rest } = over;
  return {
    name: 't',
    sandboxed: false,
    status: 'running',
    remainingSamples: 1000,
    setpoint: 100,
    connectionCeiling: 200,
    connectionClamp: null,
    pushbackWindows: 0,
    window: { ...clean, ...window },
    ...rest,
  };
}

function tend(tasks: TaskTendInput[], over: Partial<Omit<TendInput, 'tasks'>> = {}) {
  return decideTend({ settings: settings(), now: 1_000, holds: noHolds, tasks, ...over });
}

/** Decides one tend for a single task and returns its plan. */
function one(over: TaskOver, input: Partial<Omit<TendInput, 'tasks'>> = {}): TaskTendPlan {
  return tend([task(over)], input).tasks[0];
}

/** Carries a task's state into the next tend, with a new window. */
function next(plan: TaskTendPlan, window: TaskWindow): TaskTendInput {
  const { ramp: _ramp, ...state } = plan;
  return task({ ...state, window });
}

/** Runs one tend per window, carrying the task's state from each into the next. */
function run(first: TaskTendInput, windows: TaskWindow[]): TaskTendPlan[] {
  const plans: TaskTendPlan[] = [];
  let state = first;
  for (const window of windows) {
    const plan = tend([{ ...state, window }]).tasks[0];
    plans.push(plan);
    state = next(plan, window);
  }
  return plans;
}

describe('climb', () => {
  test('all six gates held: up one step, with the reason', () => {
    const plan = tend([task()]);
    expect(plan.tasks[0]).toMatchObject({ setpoint: 120, ramp: { state: 'climbing' } });
    expect(plan.changes).toEqual([
      {
        task: 't',
        kind: 'setpoint',
        from: 100,
        to: 120,
        reason: 'climb: saturated, no pushback',
        at: 1_000,
      },
    ]);
  });

  test.each<[string, TaskOver, Partial<Omit<TendInput, 'tasks'>>, string]>([
    ['not saturated', { window: { saturated: false } }, {}, 'not saturated'],
    [
      'a 429 in the window',
      { window: { rateLimitEpisodes: 1 } },
      {},
      'rate-limit pushback (1 consecutive window)',
    ],
    [
      'a controller cut',
      { window: { controllerCuts: 1 } },
      {},
      'rate-limit pushback (1 consecutive window)',
    ],
    ['a sample errored', { window: { sampleErrors: 1 } }, {}, '1 sample error(s)'],
    [
      'HTTP retries surged (26 > 0.25 x 100)',
      { window: { httpRetries: 26 } },
      {},
      'HTTP retries surged (26 > 0.25 x 100)',
    ],
    [
      'a hold on all tasks',
      {},
      { holds: { global: hold('provider unhappy'), tasks: {} } },
      'provider unhappy',
    ],
    ['a hold on this task', {}, { holds: { global: null, tasks: { t: hold('mine') } } }, 'mine'],
    [
      'docker out of networks',
      { window: { networkCapacityErrors: 2 } },
      {},
      'docker is out of networks',
    ],
    [
      'model calls queued for a connection half the window',
      { window: { connectionQueuedShare: 0.5 } },
      {},
      'connection-bound: model calls queued for a connection 50% of the window',
    ],
    [
      "a host's memory headroom under 10% of its RAM",
      {},
      { memory: { host: 'gpu-box:41', lowestHeadroomShare: 0.0995 } },
      'host memory low (gpu-box:41: headroom 9.9% of RAM < 10%)',
    ],
  ])('blocked by %s alone', (_name, over, input, reason) => {
    const plan = tend([task(over)], input);
    expect(plan.tasks[0].setpoint).toBe(100);
    expect(plan.changes.filter((change) => change.kind === 'setpoint')).toEqual([]);
    expect(plan.tasks[0].ramp.reason).toBe(reason);
  });

  test('calls queued for a connection under half the window do not block the climb', () => {
    expect(one({ window: { connectionQueuedShare: 0.49 } }).setpoint).toBe(120);
  });

  test('headroom at 10% of RAM, or no host reporting its memory, does not block the climb', () => {
    expect(one({}, { memory: { host: 'h:1', lowestHeadroomShare: 0.1 } }).setpoint).toBe(120);
    expect(one({}, { memory: null }).setpoint).toBe(120);
  });

  test('low memory holds the climb but not a reversal, nor a range clamp down', () => {
    const memory = { host: 'h:1', lowestHeadroomShare: 0.02 };
    expect(one({ pushbackWindows: 1, window: pushback }, { memory }).setpoint).toBe(80);
    const narrowed = settings({ samples: { ...rampMode, hi: 90 } });
    expect(one({}, { memory, settings: narrowed }).setpoint).toBe(90);
  });

  test('retries at exactly 0.25 x setpoint are no surge', () => {
    expect(one({ window: { httpRetries: 25 } }).setpoint).toBe(120);
  });

  test.each([
    ['capped by hi', { setpoint: 190 }, 200, 'climb: saturated, no pushback (capped at hi 200)'],
    [
      'capped by remaining samples',
      { remainingSamples: 110 },
      110,
      'climb: saturated, no pushback (capped by 110 remaining samples)',
    ],
  ])('%s', (_name, over, setpoint, reason) => {
    const plan = tend([task(over)]);
    expect(plan.tasks[0].setpoint).toBe(setpoint);
    expect(plan.changes[0].reason).toBe(reason);
  });

  test('at hi: no climb, at_ceiling', () => {
    expect(one({ setpoint: 200 })).toMatchObject({ setpoint: 200, ramp: { state: 'at_ceiling' } });
  });

  test('no more remaining samples than the setpoint: no climb', () => {
    expect(one({ remainingSamples: 100 })).toMatchObject({
      setpoint: 100,
      ramp: { state: 'steady', reason: 'capped by 100 remaining samples' },
    });
  });

  test('capped by the sandbox budget, lowest setpoint first', () => {
    const plan = tend(
      [
        task({ name: 'a', sandboxed: true, setpoint: 120 }),
        task({ name: 'b', sandboxed: true, setpoint: 100 }),
        task({ name: 'c', sandboxed: false, setpoint: 100 }),
      ],
      { settings: settings({ maxSandboxes: 235 }) },
    );
    expect(plan.tasks.map((t) => t.setpoint)).toEqual([120, 115, 120]);
    expect(plan.changes.find((change) => change.task === 'b')?.reason).toBe(
      'climb: saturated, no pushback (capped by max_sandboxes 235)',
    );
    expect(plan.tasks[0].ramp).toEqual({
      state: 'steady',
      reason: 'budget: max_sandboxes 235 in use',
    });
    expect(plan.budget).toEqual({ limit: 235, used: 235 });
  });

  test('the way back up after a reversal is stepwise, through the same gates', () => {
    const windows = [pushback, { ...clean, saturated: false }, clean, clean];
    expect(
      run(task({ setpoint: 100, pushbackWindows: 1 }), windows).map((p) => p.setpoint),
    ).toEqual([80, 80, 100, 120]);
  });
});

describe('reversal', () => {
  const quiet: TaskWindow = { ...clean, saturated: false };

  test.each<[string, TaskWindow[], number[], number[]]>([
    ['one pushback window: no reversal', [pushback], [100], [1]],
    ['two consecutive: one step down', [pushback, pushback], [100, 80], [1, 2]],
    [
      'three: once per tend while it lasts',
      [pushback, pushback, pushback],
      [100, 80, 60],
      [1, 2, 3],
    ],
    ['interrupted: the count starts over', [pushback, quiet, pushback], [100, 100, 100], [1, 0, 1]],
    ['pushback ends: no further step', [pushback, pushback, quiet], [100, 80, 80], [1, 2, 0]],
    [
      'only controller cuts count too',
      [
        { ...quiet, controllerCuts: 1 },
        { ...quiet, controllerCuts: 1 },
      ],
      [100, 80],
      [1, 2],
    ],
  ])('%s', (_name, windows, setpoints, counts) => {
    const plans = run(task(), windows);
    expect(plans.map((plan) => plan.setpoint)).toEqual(setpoints);
    expect(plans.map((plan) => plan.pushbackWindows)).toEqual(counts);
  });

  test('reason, display state and change', () => {
    const plan = tend([task({ pushbackWindows: 1, window: pushback })]);
    expect(plan.tasks[0].ramp).toEqual({
      state: 'backing_off',
      reason: 'rate-limit pushback in 2 consecutive windows',
    });
    expect(plan.changes[0]).toMatchObject({
      kind: 'setpoint',
      from: 100,
      to: 80,
      reason: 'reversal: rate-limit pushback in 2 consecutive windows',
    });
  });

  test.each([
    [60, 50],
    [50, 50],
  ])('never below lo: %i -> %i', (setpoint, after) => {
    expect(one({ setpoint, pushbackWindows: 1, window: pushback }).setpoint).toBe(after);
  });

  test.each<[string, number | null, number, number | null]>([
    ['clamped to where the controllers fell', 45, 45, 45],
    ['never below 20', 12, 20, 20],
    ['controllers above the ceiling: unchanged', 250, 200, null],
    ['no controller reported: unchanged', null, 200, null],
  ])('connection ceiling %s', (_name, controllerLimit, ceiling, clamp) => {
    const plan = one({ pushbackWindows: 1, window: { ...pushback, controllerLimit } });
    expect(plan).toMatchObject({ connectionCeiling: ceiling, connectionClamp: clamp });
  });

  test('one pushback window does not clamp connections', () => {
    expect(one({ window: { ...pushback, controllerLimit: 45 } }).connectionCeiling).toBe(200);
  });

  test('fixed max_connections stay put while the setpoint steps down', () => {
    const plan = one(
      { connectionCeiling: 30, pushbackWindows: 1, window: { ...pushback, controllerLimit: 10 } },
      { settings: settings({ connections: { type: 'fixed', n: 30 } }) },
    );
    expect(plan).toMatchObject({ setpoint: 80, connectionCeiling: 30, connectionClamp: null });
  });

  test('a hold does not stop it', () => {
    const plan = one(
      { pushbackWindows: 1, window: { ...pushback, controllerLimit: 40 } },
      { holds: { global: hold('watching'), tasks: {} } },
    );
    expect(plan).toMatchObject({
      setpoint: 80,
      connectionCeiling: 40,
      ramp: { state: 'backing_off' },
    });
  });
});

describe('connection ceiling', () => {
  test('equals hi while the ramp is active', () => {
    expect(one({}).connectionCeiling).toBe(200);
    const widened = settings({ samples: { ...rampMode, hi: 300 } });
    const plan = tend([task()], { settings: widened });
    expect(plan.tasks[0].connectionCeiling).toBe(300);
    expect(plan.changes).toContainEqual(
      expect.objectContaining({ kind: 'connections', from: 200, to: 300 }),
    );
  });

  test('after a reversal, climbs one step per clean window back to hi', () => {
    const first = task({ setpoint: 60, connectionCeiling: 145, connectionClamp: 145 });
    const plans = run(first, [clean, clean, clean, clean]);
    expect(plans.map((plan) => [plan.connectionCeiling, plan.connectionClamp])).toEqual([
      [165, 165],
      [185, 185],
      [200, null],
      [200, null],
    ]);
  });

  test('a connection-bound window lifts a clamped ceiling but not the setpoint', () => {
    const plan = one({
      setpoint: 110,
      connectionCeiling: 98,
      connectionClamp: 98,
      window: { connectionQueuedShare: 0.9 },
    });
    expect(plan).toMatchObject({ setpoint: 110, connectionCeiling: 118, connectionClamp: 118 });
  });

  test.each<[string, TaskOver, Partial<Omit<TendInput, 'tasks'>>]>([
    ['not saturated', { window: { saturated: false } }, {}],
    ['a sample error', { window: { sampleErrors: 1 } }, {}],
    ['a hold', {}, { holds: { global: hold('h'), tasks: {} } }],
  ])('a clamped ceiling stays clamped under %s', (_name, over, input) => {
    const plan = one({ connectionCeiling: 45, connectionClamp: 45, ...over }, input);
    expect(plan).toMatchObject({ connectionCeiling: 45, connectionClamp: 45 });
  });

  test('a hold also freezes a widened range', () => {
    const input = {
      settings: settings({ samples: { ...rampMode, hi: 300 } }),
      holds: { global: hold('h'), tasks: {} },
    };
    expect(one({}, input)).toMatchObject({ connectionCeiling: 200, connectionClamp: 200 });
  });

  test.each<[string, SamplesMode, ConnectionsMode, number]>([
    ['pinned: the adaptive max', { type: 'pinned', value: 80 }, adaptive, 100],
    ['ramp off: the adaptive max', { type: 'fixed', value: 50 }, adaptive, 100],
    ['fixed connections', rampMode, { type: 'fixed', n: 64 }, 64],
  ])(
    'without an active ramp or adaptive controller: %s',
    (_name, samples, connections, ceiling) => {
      const plan = one(
        { connectionCeiling: ceiling, connectionClamp: 50 },
        { settings: settings({ samples, connections }) },
      );
      expect(plan).toMatchObject({ connectionCeiling: ceiling, connectionClamp: null });
    },
  );
});

describe('connection wall', () => {
  const at = (level: number): TaskWindow => ({ ...pushback, pushbackLevel: level });
  /** Runs one tend per [seconds, window], carrying the task's state. */
  function timeline(first: TaskTendInput, steps: Array<[number, TaskWindow]>, input = {}) {
    const plans: Array<{ plan: TaskTendPlan; changes: RampChange[] }> = [];
    let state = first;
    for (const [seconds, window] of steps) {
      const decided = tend([{ ...state, window }], { now: seconds * 1000, ...input });
      plans.push({ plan: decided.tasks[0], changes: decided.changes });
      state = next(decided.tasks[0], window);
    }
    return plans;
  }
  const ceilings = (plans: Array<{ plan: TaskTendPlan }>) =>
    plans.map(({ plan }) => plan.connectionCeiling);
  /** A window whose controllers sat at `limit` without pushback. */
  const calm = (limit: number): TaskWindow => ({ ...clean, controllerLimit: limit });

  test('pushback holds the ceiling one step below the level it came at', () => {
    const [{ plan, changes }] = timeline(task({ setpoint: 130 }), [[10, at(121)]]);
    expect(plan).toMatchObject({
      setpoint: 130,
      connectionCeiling: 120,
      wall: { level: 121, probeAt: 10_000 + WALL_PROBE_WAIT_MS, waitMs: WALL_PROBE_WAIT_MS },
    });
    expect(changes).toContainEqual(
      expect.objectContaining({
        kind: 'connections',
        from: 200,
        to: 120,
        reason:
          'wall: the provider pushed back at 121 connections; held at 120 for 120 s before trying 121 again',
      }),
    );
  });

  test.each([
    [121, 120],
    [125, 120],
    [160, 155],
    [11, 20],
    [3, 20],
  ])('a wall at %i holds the ceiling at %i (never below 20)', (level, ceiling) => {
    expect(timeline(task(), [[0, at(level)]])[0].plan.connectionCeiling).toBe(ceiling);
  });

  test('clean windows neither raise the ceiling nor stop the setpoint climbing, until the probe', () => {
    const wait = WALL_PROBE_WAIT_MS / 1000;
    const plans = timeline(task({ setpoint: 110 }), [
      [0, at(121)],
      [5, calm(120)],
      [wait - 1, calm(120)],
      [wait, calm(120)],
    ]);
    expect(ceilings(plans)).toEqual([120, 120, 120, 121]);
    expect(plans.map(({ plan }) => plan.setpoint)).toEqual([110, 130, 150, 170]);
    expect(plans[3].changes).toContainEqual(
      expect.objectContaining({
        kind: 'connections',
        from: 120,
        to: 121,
        reason: 'probe: 120 s under the wall at 121; trying 121 again',
      }),
    );
  });

  test('pushback during a probe doubles the wait, up to the longest', () => {
    let seconds = 0;
    const steps: Array<[number, TaskWindow]> = [[seconds, at(121)]];
    let wait = WALL_PROBE_WAIT_MS;
    const waits = [wait];
    while (wait < WALL_PROBE_MAX_WAIT_MS) {
      seconds += wait / 1000;
      wait = Math.min(WALL_PROBE_MAX_WAIT_MS, wait * 2);
      steps.push([seconds, at(121)]);
      waits.push(wait);
    }
    seconds += wait / 1000;
    steps.push([seconds, at(121)]);
    waits.push(WALL_PROBE_MAX_WAIT_MS);
    const plans = timeline(task(), steps);
    expect(plans.map(({ plan }) => plan.wall?.waitMs)).toEqual(waits);
    expect(waits).toEqual([120_000, 240_000, 480_000, 600_000, 600_000]);
  });

  test('pushback before the probe moves the wall and starts the wait again', () => {
    const plans = timeline(task(), [
      [0, at(121)],
      [WALL_PROBE_WAIT_MS / 1000, at(121)], // the probe failed: 240 s
      [300, at(91)], // capacity fell while held below the wall
    ]);
    expect(plans.map(({ plan }) => plan.wall)).toEqual([
      { level: 121, probeAt: 120_000, waitMs: 120_000 },
      { level: 121, probeAt: 360_000, waitMs: 240_000 },
      { level: 91, probeAt: 420_000, waitMs: 120_000 },
    ]);
    expect(ceilings(plans)).toEqual([120, 120, 90]);
  });

  test('a probe window at the level without pushback lifts the wall', () => {
    const wait = WALL_PROBE_WAIT_MS / 1000;
    const plans = timeline(task(), [
      [0, at(121)],
      [wait, calm(120)], // the probe starts: ceiling 121
      [wait + 5, calm(120)], // the controllers did not reach 121 yet: still probing
      [wait + 10, calm(121)],
    ]);
    expect(ceilings(plans)).toEqual([120, 121, 121, 200]);
    expect(plans[3].plan.wall).toBeNull();
    expect(plans[3].changes).toContainEqual(
      expect.objectContaining({
        kind: 'connections',
        from: 121,
        to: 200,
        reason: 'wall at 121 lifted: a window there without pushback',
      }),
    );
  });

  test('a hold defers the probe and the lift; pushback still moves the wall', () => {
    const held = { holds: { global: hold('h'), tasks: {} } };
    const wait = WALL_PROBE_WAIT_MS / 1000;
    const plans = timeline(
      task(),
      [
        [0, at(121)],
        [wait, calm(121)],
        [wait + 5, at(101)],
      ],
      held,
    );
    expect(ceilings(plans)).toEqual([120, 120, 100]);
    expect(plans[1].plan.wall).toEqual({ level: 121, probeAt: wait * 1000, waitMs: 120_000 });
    expect(plans[2].plan.wall).toMatchObject({ level: 101 });
  });

  test('a reversal clamp below the wall wins, and clamp raises stop at the wall', () => {
    const wait = WALL_PROBE_WAIT_MS / 1000;
    const first = task({ setpoint: 130, pushbackWindows: 1 });
    const plans = timeline(first, [
      [0, { ...at(121), controllerLimit: 95 }],
      [5, calm(95)],
      [10, calm(115)],
      [wait, calm(120)],
    ]);
    expect(plans.map(({ plan }) => [plan.connectionCeiling, plan.connectionClamp])).toEqual([
      [95, 95],
      [115, 115],
      [120, null],
      [121, null],
    ]);
  });

  test.each<[string, SamplesMode, ConnectionsMode, number]>([
    ['pinned samples', { type: 'pinned', value: 80 }, adaptive, 100],
    ['fixed connections', rampMode, { type: 'fixed', n: 64 }, 64],
  ])(
    'is not kept without a ramp of adaptive connections: %s',
    (_name, samples, connections, ceiling) => {
      const [{ plan }] = timeline(task({ connectionCeiling: ceiling }), [[0, at(50)]], {
        settings: settings({ samples, connections }),
      });
      expect(plan).toMatchObject({ connectionCeiling: ceiling, wall: null });
    },
  );

  test('a ceiling carried above a standing wall comes down to it, saying why', () => {
    const wall = { level: 121, probeAt: 60_000, waitMs: WALL_PROBE_WAIT_MS };
    const [{ plan, changes }] = timeline(task({ connectionCeiling: 200, wall }), [[0, clean]]);
    expect(plan).toMatchObject({ connectionCeiling: 120, wall });
    expect(changes).toContainEqual(
      expect.objectContaining({
        from: 200,
        to: 120,
        reason: 'held below the wall at 121 connections',
      }),
    );
  });

  test('state carried from before walls existed has none', () => {
    const older = task();
    expect(older).not.toHaveProperty('wall');
    expect(tend([older]).tasks[0]).toMatchObject({ connectionCeiling: 200, wall: null });
  });
});

describe('narrowing a live run', () => {
  const narrowed = settings({ samples: { ...rampMode, hi: 100 } });
  const raised = settings({ samples: { ...rampMode, lo: 80, hi: 300 } });
  const everythingWrong: TaskOver['window'] = {
    saturated: false,
    sampleErrors: 4,
    rateLimitEpisodes: 1,
  };

  test('above the new hi: down to it at once, no window or hold checks', () => {
    const plan = tend([task({ setpoint: 200, window: everythingWrong })], {
      settings: narrowed,
      holds: { global: hold('h'), tasks: {} },
    });
    expect(plan.tasks[0]).toMatchObject({ setpoint: 100, connectionCeiling: 100 });
    expect(plan.changes).toEqual([
      expect.objectContaining({
        kind: 'setpoint',
        from: 200,
        to: 100,
        reason: 'range narrowed to [50, 100]',
      }),
      expect.objectContaining({
        kind: 'connections',
        from: 200,
        to: 100,
        reason: 'range narrowed to [50, 100]',
      }),
    ]);
  });

  test('below the new lo: up to it, no window or hold checks', () => {
    const plan = tend([task({ setpoint: 50, window: everythingWrong })], {
      settings: raised,
      holds: { global: hold('h'), tasks: {} },
    });
    expect(plan.tasks[0].setpoint).toBe(80);
    expect(plan.changes[0]).toMatchObject({
      from: 50,
      to: 80,
      reason: 'up to lo 80 (range [80, 300])',
    });
  });

  test('with a reversal in the same tend: one step from where the task stood', () => {
    const plan = tend([task({ setpoint: 110, pushbackWindows: 1, window: pushback })], {
      settings: narrowed,
    });
    expect(plan.tasks[0].setpoint).toBe(90);
    expect(
      plan.changes.filter((change) => change.kind === 'setpoint').map((c) => [c.from, c.to]),
    ).toEqual([
      [110, 100],
      [100, 90],
    ]);
  });

  test('a range narrowed below a clamped ceiling drops the clamp', () => {
    const plan = one({ connectionCeiling: 150, connectionClamp: 150 }, { settings: narrowed });
    expect(plan).toMatchObject({ connectionCeiling: 100, connectionClamp: null });
  });
});

describe('hold', () => {
  const held = { holds: { global: null, tasks: { t: hold('provider looks unhappy') } } };

  test('shown with its reason; a hold on another task does not apply', () => {
    expect(one({}, held).ramp).toEqual({ state: 'held', reason: 'provider looks unhappy' });
    expect(one({ name: 'other' }, held).setpoint).toBe(120);
    expect(one({ name: 'constructor' }, held).setpoint).toBe(120);
  });

  test('does not stop a budget cut', () => {
    const plan = tend(
      [task({ name: 't', sandboxed: true }), task({ name: 'u', sandboxed: true })],
      { ...held, settings: settings({ maxSandboxes: 100 }) },
    );
    expect(plan.tasks.map((t) => t.setpoint)).toEqual([50, 50]);
  });
});

describe('sandbox budget', () => {
  const sandboxed = (name: string, setpoint: number, over: TaskOver = {}) =>
    task({ name, sandboxed: true, setpoint, window: { saturated: false }, ...over });

  test('a fleet over budget cuts each task above an even share, even below lo', () => {
    const plan = tend(
      [
        sandboxed('a', 50),
        sandboxed('b', 50),
        sandboxed('c', 50),
        task({ name: 'n', setpoint: 50, window: { saturated: false } }),
      ],
      { settings: settings({ maxSandboxes: 60 }) },
    );
    expect(plan.tasks.map((t) => t.setpoint)).toEqual([20, 20, 20, 50]);
    expect(plan.changes[0].reason).toBe(
      'budget: fleet 150 over max_sandboxes 60, cut to even share 20',
    );
    expect(plan.tasks[0].ramp).toEqual({ state: 'steady', reason: 'budget: cut to even share 20' });
    expect(plan.budget).toEqual({ limit: 60, used: 60 });
  });

  test('tasks at or below the share keep theirs; a cut task does not also climb', () => {
    const plan = tend(
      [sandboxed('a', 80, { window: clean }), sandboxed('b', 10), sandboxed('c', 40)],
      {
        settings: settings({ samples: { ...rampMode, lo: 10 }, maxSandboxes: 100 }),
      },
    );
    expect(plan.tasks.map((t) => t.setpoint)).toEqual([33, 10, 33]);
  });

  test('within budget after a reversal: no cut', () => {
    const plan = tend(
      [sandboxed('a', 120, { pushbackWindows: 1, window: pushback }), sandboxed('b', 90)],
      {
        settings: settings({ maxSandboxes: 200 }),
      },
    );
    expect(plan.tasks.map((t) => t.setpoint)).toEqual([100, 90]);
  });

  test('when budget frees, tasks cut below lo come back up to lo, lowest first', () => {
    const plan = tend(
      [sandboxed('a', 20), sandboxed('b', 14, { status: 'finished' }), sandboxed('c', 26)],
      {
        settings: settings({ maxSandboxes: 60 }),
      },
    );
    expect(plan.tasks.map((t) => t.setpoint)).toEqual([30, 14, 30]);
    expect(plan.changes[0].reason).toBe(
      'up to lo 50 (range [50, 200]), capped by max_sandboxes 60',
    );
  });

  test('finished tasks are not counted and come back unchanged', () => {
    const plan = tend(
      [
        sandboxed('a', 100, { window: clean }),
        sandboxed('done', 200, { status: 'finished', window: clean }),
      ],
      { settings: settings({ maxSandboxes: 150 }) },
    );
    expect(plan.tasks.map((t) => [t.setpoint, t.ramp.state])).toEqual([
      [120, 'climbing'],
      [200, 'finished'],
    ]);
  });
});

describe('pinned max_samples', () => {
  const pinned = settings({ samples: { type: 'pinned', value: 100 }, maxSandboxes: 60 });

  test.each<[string, TaskOver]>([
    ['every gate held', {}],
    ['sustained pushback', { pushbackWindows: 5, window: pushback }],
    ['over the sandbox budget', { sandboxed: true }],
  ])('never moves: %s', (_name, over) => {
    const plan = tend([task({ ...over, connectionCeiling: 100 })], { settings: pinned });
    expect(plan.tasks[0]).toMatchObject({ setpoint: 100, ramp: { state: 'pinned' } });
    expect(plan.changes).toEqual([]);
    expect(plan.budget).toBeNull();
  });
});

describe('samples_ramp false', () => {
  const off = settings({ samples: { type: 'fixed', value: 50 } });

  test.each<[string, TaskOver]>([
    ['every gate held', {}],
    ['sustained pushback', { pushbackWindows: 5, window: pushback }],
  ])('stays at 50: %s', (_name, over) => {
    const plan = one({ setpoint: 50, connectionCeiling: 100, ...over }, { settings: off });
    expect(plan).toMatchObject({
      setpoint: 50,
      ramp: { state: 'steady', reason: 'samples_ramp off' },
    });
  });

  test('the budget still cuts, and gives back up to 50 when it frees', () => {
    const budgeted = { ...off, maxSandboxes: 60 };
    const cut = tend(
      [
        task({ name: 'a', sandboxed: true, setpoint: 50 }),
        task({ name: 'b', sandboxed: true, setpoint: 50 }),
      ],
      { settings: budgeted },
    );
    expect(cut.tasks.map((t) => t.setpoint)).toEqual([30, 30]);
    const freed = tend([task({ name: 'a', sandboxed: true, setpoint: 30 })], {
      settings: budgeted,
    });
    expect(freed.tasks[0].setpoint).toBe(50);
  });
});

describe('initialSetpoints', () => {
  const starting = (count: number, sandboxed = true) =>
    Array.from({ length: count }, (_, index) => ({ name: `s${index}`, sandboxed }));

  test.each<[string, Partial<RampSettings>, number, number[]]>([
    ['no budget: start', {}, 10, Array(10).fill(50)],
    ['10 tasks, budget 400: a share of 40', { maxSandboxes: 400 }, 10, Array(10).fill(40)],
    ['2 tasks, budget 400: start, below the share', { maxSandboxes: 400 }, 2, [50, 50]],
    [
      'budget smaller than the fleet: one each while it lasts',
      { maxSandboxes: 2 },
      4,
      [1, 1, 0, 0],
    ],
    [
      'pinned ignores the budget',
      { maxSandboxes: 10, samples: { type: 'pinned', value: 80 } },
      2,
      [80, 80],
    ],
    [
      'ramp off starts at a share too',
      { maxSandboxes: 60, samples: { type: 'fixed', value: 50 } },
      3,
      [20, 20, 20],
    ],
    ['range start', { samples: { ...rampMode, lo: 60, start: 60 } }, 1, [60]],
  ])('%s', (_name, over, count, setpoints) => {
    const plan = initialSetpoints({
      settings: settings(over),
      now: 0,
      starting: starting(count),
      running: [],
    });
    expect(plan.tasks.map((t) => t.setpoint)).toEqual(setpoints);
    expect(plan.changes).toEqual([]);
  });

  test('tasks without a sandbox neither take a share nor count', () => {
    const plan = initialSetpoints({
      settings: settings({ maxSandboxes: 100 }),
      now: 0,
      starting: [...starting(2), { name: 'plain', sandboxed: false }],
      running: [{ name: 'r', sandboxed: false, setpoint: 200 }],
    });
    expect(plan.tasks.map((t) => t.setpoint)).toEqual([50, 50, 50]);
  });

  test('a newcomer pushing the fleet over budget cuts the running tasks at once', () => {
    const running = [
      { name: 'a', sandboxed: true, setpoint: 100 },
      { name: 'b', sandboxed: true, setpoint: 100 },
    ];
    const plan = initialSetpoints({
      settings: settings({ maxSandboxes: 200 }),
      now: 7,
      starting: starting(1),
      running,
    });
    expect(plan.tasks[0].setpoint).toBe(50);
    expect(plan.changes).toEqual([
      {
        task: 'a',
        kind: 'setpoint',
        from: 100,
        to: 66,
        reason: 'budget: fleet 250 over max_sandboxes 200, cut to even share 66',
        at: 7,
      },
      {
        task: 'b',
        kind: 'setpoint',
        from: 100,
        to: 66,
        reason: 'budget: fleet 250 over max_sandboxes 200, cut to even share 66',
        at: 7,
      },
    ]);
    expect(running[0].setpoint).toBe(100);
  });

  test.each<[string, Partial<RampSettings>, number]>([
    ['ramp and adaptive: hi', {}, 200],
    ['pinned and adaptive: the adaptive max', { samples: { type: 'pinned', value: 80 } }, 100],
    ['fixed connections', { connections: { type: 'fixed', n: 32 } }, 32],
  ])('connection ceiling: %s', (_name, over, ceiling) => {
    const plan = initialSetpoints({
      settings: settings(over),
      now: 0,
      starting: starting(1),
      running: [],
    });
    expect(plan.tasks[0]).toMatchObject({
      connectionCeiling: ceiling,
      connectionClamp: null,
      pushbackWindows: 0,
    });
  });
});

describe('decideTend as workflow code', () => {
  const input: TendInput = {
    settings: settings({ maxSandboxes: 300 }),
    now: 5_000,
    holds: { global: null, tasks: { b: hold('b') } },
    tasks: [
      task({ name: 'a', sandboxed: true, setpoint: 180 }),
      task({
        name: 'b',
        sandboxed: true,
        setpoint: 60,
        pushbackWindows: 1,
        window: { ...pushback, controllerLimit: 30 },
      }),
      task({ name: 'c', sandboxed: false, setpoint: 250 }),
    ],
  };

  test('deterministic, leaves its input alone, and plain JSON', () => {
    const before = JSON.stringify(input);
    const plan = decideTend(input);
    expect(JSON.stringify(input)).toBe(before);
    expect(decideTend(JSON.parse(before) as TendInput)).toEqual(plan);
    expect(JSON.parse(JSON.stringify(plan))).toEqual(plan);
  });
});

import {
  NOTHING_OBSERVED,
  addReading,
  etaMs,
  finishedHere,
  observe,
  progressRows,
  ratePerMinute,
  type Observed,
  type Reading,
} from '../../src/cli/progress-rate';
import type { EvalSetStatus, TaskStatus } from '../../src/workflows/types';
import { taskStatus } from '../helpers/task-status';

const r = (at: number, done: number): Reading => ({ at, done });

describe('addReading keeps the readings of the last window', () => {
  test.each<[string, Reading[], Reading, Reading[]]>([
    ['the first reading', [], r(0, 0), [r(0, 0)]],
    [
      'within the window',
      [r(0, 0), r(10_000, 5)],
      r(20_000, 9),
      [r(0, 0), r(10_000, 5), r(20_000, 9)],
    ],
    // The newest reading at or before the window's start stays: the window is covered whole.
    [
      'past the window',
      [r(0, 0), r(30_000, 5), r(50_000, 8)],
      r(70_000, 9),
      [r(0, 0), r(30_000, 5), r(50_000, 8), r(70_000, 9)],
    ],
    [
      'well past the window',
      [r(0, 0), r(30_000, 5), r(50_000, 8)],
      r(95_000, 9),
      [r(30_000, 5), r(50_000, 8), r(95_000, 9)],
    ],
    ['a count that went down starts over', [r(0, 0), r(10_000, 5)], r(20_000, 2), [r(20_000, 2)]],
    ['a reading from before the last starts over', [r(10_000, 5)], r(5_000, 5), [r(5_000, 5)]],
  ])('%s', (_, readings, next, expected) => {
    expect(addReading(readings, next, 60_000)).toEqual(expected);
  });
});

describe('ratePerMinute', () => {
  test.each<[string, Reading[], number | undefined]>([
    ['no readings', [], undefined],
    ['one reading', [r(0, 10)], undefined],
    ['readings spanning less than the minimum', [r(0, 0), r(4_999, 10)], undefined],
    ['10 in 5 s', [r(0, 0), r(5_000, 10)], 120],
    ['from the first to the last reading', [r(0, 100), r(30_000, 110), r(60_000, 130)], 30],
    ['nothing finished', [r(0, 7), r(60_000, 7)], 0],
  ])('%s', (_, readings, expected) => {
    expect(ratePerMinute(readings, 5_000)).toBe(expected);
  });
});

describe('etaMs', () => {
  test.each<[number, number | undefined, number | undefined]>([
    [60, 30, 120_000],
    [0, 30, 0],
    [10, undefined, undefined],
    // Nothing finishing: no ETA, rather than an infinite one.
    [10, 0, undefined],
  ])('%d left at %s/min', (remaining, perMinute, expected) => {
    expect(etaMs(remaining, perMinute)).toBe(expected);
  });
});

test('finishedHere leaves out what was resumed from the log dir', () => {
  expect(finishedHere(taskStatus({ name: 't', completed: 500, errored: 3, resumed: 480 }))).toBe(
    23,
  );
  expect(finishedHere(taskStatus({ name: 't', completed: 0, resumed: 0 }))).toBe(0);
});

function evalSet(
  tasks: TaskStatus[],
  holds: EvalSetStatus['holds'] = { global: null, tasks: {} },
): EvalSetStatus {
  return { eval_set: 'e', state: 'running', tasks, ramp_history: [], holds };
}

/** Feeds `statusAt(second)` once a second from 0 to `seconds`; returns the rows at the end. */
function watch(seconds: number, statusAt: (second: number) => EvalSetStatus) {
  let observed: Observed = NOTHING_OBSERVED;
  for (let s = 0; s <= seconds; s++) observed = observe(observed, statusAt(s), s * 1_000);
  return progressRows(observed, statusAt(seconds), seconds * 1_000);
}

describe('rows of a run', () => {
  test('none while the eval set plans: no tasks, no total', () => {
    expect(watch(3, () => ({ ...evalSet([]), state: 'planning' }))).toEqual([]);
  });

  test('rate and ETA come from the completions observed, once readings span 5 s', () => {
    const at = (s: number) =>
      evalSet([
        taskStatus({ name: 'a', samples: 100, completed: 2 * s, in_flight: 4, setpoint: 4 }),
      ]);
    expect(watch(4, at)[0]).toMatchObject({ done: 8, perMinute: undefined, etaMs: undefined });
    // 2 a second: 120 a minute, and 90 left take 45 s.
    expect(watch(45, at)[0]).toMatchObject({
      done: 90,
      perMinute: 120,
      etaMs: 5_000,
      elapsedMs: 45_000,
    });
  });

  test('the rate follows the last minute, not the average since the launch', () => {
    // 1 a second for 2 minutes, then 3 a second for a minute.
    const done = (s: number) => (s <= 120 ? s : 120 + 3 * (s - 120));
    const rows = watch(180, (s) =>
      evalSet([taskStatus({ name: 'a', samples: 10_000, completed: done(s) })]),
    );
    expect(rows[0].perMinute).toBe(180);
  });

  test('samples resumed from the log dir do not count as finishes', () => {
    // Planned at second 3 with 900 of 1000 already done; then 1 a second.
    const at = (s: number) =>
      evalSet([
        s < 3
          ? taskStatus({ name: 'a', state: 'waiting', samples: 1_000 })
          : taskStatus({ name: 'a', samples: 1_000, completed: 900 + (s - 3), resumed: 900 }),
      ]);
    const [task, total] = watch(13, at);
    expect(task).toMatchObject({ done: 910, perMinute: 60, etaMs: 90_000, elapsedMs: 10_000 });
    expect(total).toMatchObject({ name: 'total', done: 910, total: 1_000, perMinute: 60 });
  });

  test('a launch that re-attaches measures from its first reading, not from zero', () => {
    // 600 done by the detached fleet before this launch's first reading; then 2 a second.
    const rows = watch(30, (s) =>
      evalSet([taskStatus({ name: 'a', samples: 1_000, completed: 600 + 2 * s })]),
    );
    expect(rows[0]).toMatchObject({ done: 660, perMinute: 120, etaMs: 170_000 });
  });

  test('a finished task keeps its elapsed time and shows no rate; a waiting one nothing', () => {
    const rows = watch(20, (s) =>
      evalSet([
        taskStatus({
          name: 'a',
          samples: 10,
          completed: Math.min(10, s),
          state: s >= 10 ? 'done' : 'running',
        }),
        taskStatus({ name: 'b', state: 'waiting' }),
      ]),
    );
    expect(rows[0]).toEqual(
      expect.objectContaining({ state: 'done', done: 10, elapsedMs: 10_000 }),
    );
    expect(rows[0].perMinute).toBeUndefined();
    expect(rows[0].etaMs).toBeUndefined();
    expect(rows[1]).toEqual(expect.objectContaining({ state: 'waiting', done: 0 }));
    expect(rows[1].elapsedMs).toBeUndefined();
    expect(rows[2]).toMatchObject({ name: 'total', done: 10, total: 1_010, elapsedMs: 20_000 });
  });

  test('the total sums the tasks, and its rate is theirs together', () => {
    const rows = watch(60, (s) =>
      evalSet([
        taskStatus({
          name: 'a',
          samples: 1_000,
          completed: s,
          errored: 1,
          in_flight: 3,
          setpoint: 4,
          rate_limit_episodes: 2,
        }),
        taskStatus({
          name: 'b',
          samples: 1_000,
          completed: 2 * s,
          in_flight: 5,
          setpoint: 6,
          rate_limit_episodes: 1,
        }),
      ]),
    );
    expect(rows[2]).toMatchObject({
      name: 'total',
      done: 181,
      total: 2_000,
      errors: 1,
      inFlight: 8,
      setpoint: 10,
      rateLimitEpisodes: 3,
      perMinute: 180,
    });
  });

  test.each<[string, EvalSetStatus['holds'], (string | undefined)[]]>([
    ['no hold', { global: null, tasks: {} }, [undefined, undefined, undefined]],
    [
      'a task hold',
      { global: null, tasks: { b: { reason: 'flaky' } } },
      [undefined, 'flaky', '1 task'],
    ],
    ['a global hold', { global: { reason: 'quota' }, tasks: {} }, ['quota', 'quota', 'quota']],
  ])('holds: %s', (_, holds, expected) => {
    const rows = watch(1, () =>
      evalSet([taskStatus({ name: 'a' }), taskStatus({ name: 'b' })], holds),
    );
    expect(rows.map((row) => row.hold)).toEqual(expected);
  });
});

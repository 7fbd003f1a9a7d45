/** The dashboard's numbers from tend records: rate, ETA, a finished run. Pure, no Temporal. */
import { dashboardData, taskRate } from '../src/dashboard/model';
import { dashboardSpec } from '../src/dashboard/charts';
import type { TendRecord, TendTaskRecord } from '../src/workflows/tend-record';
import type { EvalSetResult } from '../src/workflows/types';

const T0 = Date.parse('2026-12-02T10:00:00Z');

function tend(
  seconds: number,
  completed: number,
  state: TendTaskRecord['state'] = 'running',
): TendRecord {
  return {
    time: new Date(T0 + seconds * 1000).toISOString(),
    tasks: [
      {
        task: 'a',
        state,
        samples: 100,
        completed,
        errored: 0,
        limited: 0,
        stuck: 0,
        in_flight: 4,
        setpoint: 4,
        connection_ceiling: 8,
        rate_limit_episodes: 0,
        ramp_state: 'steady',
      },
    ],
    accounts: [],
  };
}

describe('taskRate', () => {
  test.each([
    ['no tends', [], null],
    ['one tend', [tend(0, 5)], null],
    ['10 samples in 60 s', [tend(0, 0), tend(30, 4), tend(60, 10)], 10],
    // Only the last five minutes count: 600 s at 1/s, then 300 s at 2/s.
    ['the last five minutes', [tend(0, 0), tend(600, 600), tend(900, 1200)], 120],
    // Once done, the whole run; records after the end add no idle time.
    [
      'a finished task',
      [tend(0, 0), tend(60, 50), tend(120, 100, 'done'), tend(600, 100, 'done')],
      50,
    ],
  ])('%s', (_, tends, rate) => {
    expect(taskRate('a', tends)).toBe(rate);
  });
});

test('a finished eval set: ETA 0, the last setpoint and ceiling, charts for each task', () => {
  const result: EvalSetResult = {
    eval_set: 'hello',
    status: 'success',
    log_dir: '/logs',
    tasks: [{ name: 'a', samples: 100, completed: 100, errored: 0, resumed: 0, metrics: null }],
  };
  const data = dashboardData({
    name: 'hello',
    workflowId: 'steward-hello',
    live: { kind: 'completed', result },
    tends: [tend(0, 0), tend(60, 50), tend(120, 100, 'done')],
    history: [],
    now: T0 + 200_000,
  });
  expect(data.tasks[0]).toMatchObject({
    state: 'done',
    completed: 100,
    setpoint: 4,
    connection_limit: 8,
    rate_per_min: 50,
    eta_seconds: 0,
  });
  const spec = JSON.stringify(dashboardSpec(data));
  expect(spec).toContain('a: concurrency');
  expect(spec).toContain('a: throughput');
});

test('an eval set that does not exist: no tasks', () => {
  const data = dashboardData({
    name: 'hello',
    workflowId: 'steward-hello',
    live: { kind: 'missing' },
    tends: [],
    history: [],
    now: T0,
  });
  expect(data).toMatchObject({ state: 'missing', tasks: [] });
});

test('a running eval set with a failing workflow task: the dashboard carries the failing step', () => {
  const failing = {
    workflow_id: 'steward-hello/a',
    step: 'workflow task',
    attempt: 5,
    error: '[TMPRL1100] Nondeterminism error: No command scheduled for event',
  };
  const data = dashboardData({
    name: 'hello',
    workflowId: 'steward-hello',
    live: {
      kind: 'running',
      status: {
        eval_set: 'hello',
        state: 'running',
        tasks: [],
        ramp_history: [],
        holds: { global: null, tasks: {} },
      },
      stuck: [failing],
    },
    tends: [],
    history: [],
    now: T0,
  });
  expect(data.failing).toEqual([failing]);
});

import {
  statusFromMemo,
  withRecords,
  type LiveStatus,
  type LogDirCheck,
  type TaskSource,
} from '../src/client/status';
import { ExitCode, expectedFailure } from '../src/errors';
import { STATUS_MEMO_KEY, parseStatusMemo, type StatusMemo } from '../src/workflows/status-memo';
import { statusJson, statusText } from '../src/cli/status-view';
import type { EvalSetStatus, RampHistoryEntry, TaskStatus } from '../src/workflows/types';
import { taskStatus } from './helpers/task-status';

function task(over: Partial<TaskStatus> & Pick<TaskStatus, 'name'>): TaskStatus {
  return taskStatus({
    taskQueue: `steward-task-hello-${over.name}`,
    samples: 200,
    in_flight: 50,
    waiting: 150,
    setpoint: 50,
    connection_limit: 20,
    ramp_state: 'climbing',
    ...over,
  });
}

/** A line's cells (separated by two or more spaces) and where each starts and ends. */
function cells(line: string): { text: string; start: number; end: number }[] {
  return [...line.matchAll(/\S+(?: \S+)*/g)].map((m) => ({
    text: m[0],
    start: m.index,
    end: m.index + m[0].length,
  }));
}

function entry(over: Partial<RampHistoryEntry>): RampHistoryEntry {
  return {
    time: '2025-03-01T12:00:00.000Z',
    task: 'arithmetic',
    kind: 'setpoint',
    from: 50,
    to: 70,
    reason: 'every climb gate held',
    ...over,
  };
}

function running(over: Partial<EvalSetStatus> = {}): LiveStatus {
  return {
    kind: 'running',
    status: {
      eval_set: 'hello',
      state: 'running',
      tasks: [],
      ramp_history: [],
      holds: { global: null, tasks: {} },
      ...over,
    },
  };
}

describe('statusText of a running eval set', () => {
  const status = running({
    tasks: [
      task({
        name: 'arithmetic',
        setpoint: 70,
        in_flight: 68,
        waiting: 12,
        completed: 118,
        errored: 2,
        limited: 3,
        stuck: 1,
        retries: 4,
      }),
      task({
        name: 'capitals',
        ramp_state: 'held',
        ramp_reason: 'provider looks unhappy',
        connection_limit: null,
        rate_limit_episodes: 3,
      }),
      task({ name: 'spelling', ramp_state: 'backing_off', ramp_reason: '429s in 2 windows' }),
      task({ name: 'math', ramp_state: 'pinned', setpoint: 30 }),
      task({ name: 'geo', ramp_state: 'at_ceiling', setpoint: 200 }),
      task({ name: 'logic', ramp_state: 'steady' }),
      task({ name: 'trivia', state: 'done', ramp_state: 'finished', in_flight: 0, waiting: 0 }),
    ],
    holds: {
      global: null,
      tasks: { capitals: { reason: 'provider looks unhappy', by: 'ops@box' } },
    },
  });
  const lines = statusText('steward-hello', status).split('\n');

  test('heads the table with the eval set and one column per number users watch', () => {
    expect(lines[0]).toBe('hello (steward-hello): running');
    expect(lines[1].trim().split(/\s{2,}/)).toEqual([
      'task',
      'state',
      'setpoint',
      'in flight',
      'waiting',
      'done',
      'errors',
      'limited',
      'stuck',
      'retries',
      'conn limit',
      'rate limits',
      'ramp',
    ]);
  });

  test.each([
    [
      'arithmetic',
      ['running', '70', '68', '12', '120/200', '2', '3', '1', '4', '20', '0', 'climbing'],
    ],
    [
      'capitals',
      [
        'running',
        '50',
        '50',
        '150',
        '0/200',
        '0',
        '0',
        '0',
        '0',
        '-',
        '3',
        'held by ops@box: provider looks unhappy',
      ],
    ],
    [
      'spelling',
      [
        'running',
        '50',
        '50',
        '150',
        '0/200',
        '0',
        '0',
        '0',
        '0',
        '20',
        '0',
        'backing off: 429s in 2 windows',
      ],
    ],
    ['math', ['running', '30', '50', '150', '0/200', '0', '0', '0', '0', '20', '0', 'pinned']],
    ['geo', ['running', '200', '50', '150', '0/200', '0', '0', '0', '0', '20', '0', 'at ceiling']],
    ['logic', ['running', '50', '50', '150', '0/200', '0', '0', '0', '0', '20', '0', 'steady']],
    ['trivia', ['done', '50', '0', '0', '0/200', '0', '0', '0', '0', '20', '0', 'finished']],
  ])('shows %s as %j', (name, cells) => {
    const row = lines.find((l) => l.trim().startsWith(`${name} `)) as string;
    // The ramp column may itself hold double spaces only if a reason does; these do not.
    expect(row.trim().split(/\s{2,}/)).toEqual([name, ...cells]);
  });

  test('aligns the columns: numbers to the right, text to the left', () => {
    const [header, ...rows] = lines.slice(1, 9).map(cells);
    for (const row of rows) {
      row.forEach((cell, i) => {
        if (['task', 'state', 'ramp'].includes(header[i].text))
          expect(cell.start).toBe(header[i].start);
        else expect(cell.end).toBe(header[i].end);
      });
    }
  });

  test('names who holds the ramp, falling back to a hold of every task', () => {
    const held = running({
      tasks: [task({ name: 'a', ramp_state: 'held', ramp_reason: 'budget review' })],
      holds: { global: { reason: 'budget review', by: 'lead@desk' }, tasks: {} },
    });
    expect(statusText('steward-hello', held)).toContain('held by lead@desk: budget review');
    const anonymous = running({ tasks: [task({ name: 'a', ramp_state: 'held' })] });
    expect(statusText('steward-hello', anonymous).split('\n')[2]).toMatch(/ held$/);
  });

  test('shows only the header while the eval set is planning', () => {
    expect(statusText('steward-x', running({ eval_set: 'x', state: 'planning' }))).toBe(
      'x (steward-x): planning',
    );
  });
});

describe('statusText ramp history', () => {
  test('lists time, task, change and reason, with who asked for holds, resumes and ranges', () => {
    const text = statusText(
      'steward-hello',
      running({
        ramp_history: [
          entry({}),
          entry({
            time: '2025-03-01T12:01:00.500Z',
            kind: 'connections',
            from: 20,
            to: 40,
            reason: 'ramp active',
          }),
          entry({
            time: '2025-03-01T12:02:00Z',
            task: '*',
            kind: 'hold',
            from: null,
            to: null,
            reason: 'provider looks unhappy',
            by: 'ops@box',
          }),
          entry({
            time: '2025-03-01T12:03:00Z',
            task: 'arithmetic',
            kind: 'resume',
            from: null,
            to: null,
            reason: '',
            by: 'ops@box',
          }),
          entry({
            time: '2025-03-01T12:04:00Z',
            task: '*',
            kind: 'range',
            from: null,
            to: 100,
            reason: 'samples_ramp [50, 100]',
            by: 'ops@box',
          }),
        ],
      }),
    );
    expect(text.split('\n').slice(1)).toEqual([
      'ramp history:',
      '  2025-03-01T12:00:00Z  arithmetic  setpoint 50 → 70     every climb gate held',
      '  2025-03-01T12:01:00Z  arithmetic  connections 20 → 40  ramp active',
      '  2025-03-01T12:02:00Z  all tasks   hold                 provider looks unhappy (ops@box)',
      '  2025-03-01T12:03:00Z  arithmetic  resume               (ops@box)',
      '  2025-03-01T12:04:00Z  all tasks   range - → 100        samples_ramp [50, 100] (ops@box)',
    ]);
  });

  test('shows the latest ten entries, oldest first', () => {
    const history = Array.from({ length: 25 }, (_, i) => entry({ from: i, to: i + 1 }));
    const status = running({ ramp_history: history, log_dir: '/runs/hello' });
    const lines = statusText('steward-hello', status).split('\n');
    expect(lines[1]).toBe('ramp history (latest 10 of 25; all in /runs/hello/ramp-history.jsonl):');
    expect(lines.slice(2).map((l) => /setpoint (\d+)/.exec(l)?.[1])).toEqual([
      '15',
      '16',
      '17',
      '18',
      '19',
      '20',
      '21',
      '22',
      '23',
      '24',
    ]);
  });
});

describe('statusJson', () => {
  test('a running eval set keeps the field names scripts rely on', () => {
    const status = running({
      tasks: [task({ name: 'arithmetic', setpoint: 70, in_flight: 68, completed: 118 })],
      ramp_history: [entry({})],
    });
    const json = JSON.parse(JSON.stringify(statusJson('steward-hello', status))) as {
      tasks: Record<string, unknown>[];
      ramp_history: Record<string, unknown>[];
    };
    expect(json).toMatchObject({
      workflow_id: 'steward-hello',
      eval_set: 'hello',
      state: 'running',
    });
    expect(json.tasks[0]).toMatchObject({
      name: 'arithmetic',
      setpoint: 70,
      in_flight: 68,
      completed: 118,
      samples: 200,
      connection_limit: 20,
      ramp_state: 'climbing',
    });
    expect(json.ramp_history[0]).toMatchObject({
      time: '2025-03-01T12:00:00.000Z',
      task: 'arithmetic',
      from: 50,
      to: 70,
      reason: 'every climb gate held',
    });
  });

  test.each<[LiveStatus, unknown]>([
    [{ kind: 'missing' }, { workflow_id: 'steward-x', state: 'missing' }],
    [
      { kind: 'failed', status: 'TERMINATED', message: 'by ops' },
      { workflow_id: 'steward-x', state: 'terminated', error: 'by ops' },
    ],
  ])('an eval set that is not running: %j', (live, expected) => {
    expect(statusJson('steward-x', live)).toEqual(expected);
  });
});

describe('status with no worker answering', () => {
  const recordedAt = '2026-12-01T11:00:00.000Z';
  const memo: StatusMemo = {
    recorded_at: recordedAt,
    eval_set: 'hello',
    state: 'running',
    log_dir: '/runs/hello',
    definition: '/defs/hello/evalset.yaml',
    tasks: [
      {
        name: 'arithmetic',
        taskQueue: 'steward-task-hello-arithmetic',
        resumed: 0,
        saturations: 4,
        runs: 1,
        network_errors: 0,
        state: 'running',
        samples: 100,
        completed: 0,
        errored: 0,
        in_flight: 10,
        waiting: 90,
        setpoint: 10,
        connection_limit: 20,
        rate_limit_episodes: 0,
        ramp_state: 'pinned',
      },
    ],
    holds: { global: null, tasks: {} },
  };

  function silent(records?: number): LiveStatus & { kind: 'running' } {
    const status = statusFromMemo(memo);
    const source: TaskSource = { from: 'memo', at: recordedAt, completed_from: 'memo' };
    const sources = {
      arithmetic: records === undefined ? source : withRecords(status.tasks[0], source, records),
    };
    return {
      kind: 'running',
      status,
      workers: { answering: false, reason: 'no answer within 5 s' },
      sources,
      recorded_at: recordedAt,
      log_dir: { state: 'counted', path: '/runs/hello', at: '2026-12-01T11:05:00.123Z' },
    };
  }

  test('says that no workers answer, when the state was recorded, and how to start them', () => {
    const lines = statusText('steward-hello', silent(21)).split('\n');
    expect(lines[0]).toBe(
      'hello (steward-hello): running; no workers answer (no answer within 5 s)',
    );
    expect(lines[1]).toBe('showing the state it last recorded, at 2026-12-01T11:00:00Z');
    expect(lines[2]).toBe(
      "done counted from the records in /runs/hello at 2026-12-01T11:05:00Z (ahead of Temporal's numbers) for arithmetic",
    );
    const row = lines.find((l) => l.trim().startsWith('arithmetic '));
    expect(row?.trim().split(/\s{2,}/)).toEqual([
      'arithmetic',
      'running',
      '10',
      '10',
      '69',
      '21/100',
      '0',
      '0',
      '0',
      '0',
      '20',
      '0',
      'pinned',
    ]);
    expect(lines.at(-1)).toBe(
      'start its workers with `steward workers hello`, or run `steward launch /defs/hello/evalset.yaml` again',
    );
  });

  test.each<[string, number, number, string]>([
    ['records ahead of the memo win', 21, 21, 'log_dir'],
    ['records equal to the memo keep the memo as the source', 0, 0, 'memo'],
    ['records beyond the task (an old dataset) count up to its samples', 500, 100, 'log_dir'],
  ])('%s', (_, records, completed, from) => {
    const s = silent(records);
    expect(s.status.tasks[0].completed).toBe(completed);
    expect(s.sources?.arithmetic).toMatchObject({
      completed_from: from,
      log_dir_records: records,
    });
  });

  test('records behind the numbers (a log dir emptied by hand) never lower them', () => {
    const t = statusFromMemo(memo).tasks[0];
    t.completed = 30;
    const source: TaskSource = { from: 'memo', at: recordedAt, completed_from: 'memo' };
    expect(withRecords(t, source, 10)).toEqual({ ...source, log_dir_records: 10 });
    expect(t.completed).toBe(30);
  });

  test('--json says where each number came from and when', () => {
    const json = statusJson('steward-hello', silent(21)) as Record<string, unknown>;
    expect(json).toMatchObject({
      workflow_id: 'steward-hello',
      state: 'running',
      workers: 'not answering',
      workers_reason: 'no answer within 5 s',
      workers_hint:
        'start its workers with `steward workers hello`, or run `steward launch /defs/hello/evalset.yaml` again',
      recorded_at: recordedAt,
      log_dir_check: { state: 'counted', path: '/runs/hello' },
      tasks: [
        {
          name: 'arithmetic',
          completed: 21,
          source: { from: 'memo', at: recordedAt, completed_from: 'log_dir', log_dir_records: 21 },
        },
      ],
    });
  });

  test.each<[string, LogDirCheck, string]>([
    [
      'gone',
      { state: 'gone', path: '/runs/hello' },
      "the log dir /runs/hello is gone: done counts are Temporal's",
    ],
    [
      'unreadable',
      { state: 'unreadable', path: '/runs/hello', reason: 'permission denied' },
      "cannot read the log dir /runs/hello (permission denied): done counts are Temporal's",
    ],
  ])('a log dir that is %s is said so', (_, check, line) => {
    const s = { ...silent(), log_dir: check };
    expect(statusText('steward-hello', s).split('\n')[2]).toBe(line);
  });

  test('an eval set that recorded nothing yet says so', () => {
    const s: LiveStatus = {
      kind: 'running',
      status: {
        eval_set: 'x',
        state: 'planning',
        tasks: [],
        ramp_history: [],
        holds: { global: null, tasks: {} },
      },
      workers: { answering: false, reason: 'no answer within 5 s' },
    };
    expect(statusText('steward-x', s).split('\n')).toEqual([
      'x (steward-x): planning; no workers answer (no answer within 5 s)',
      'Temporal has no recorded state of it yet (it has not planned, or it predates recording)',
      'start its workers with `steward workers x`, or run `steward launch <definition>` again',
    ]);
  });

  test('a terminated eval set shows what it last recorded', () => {
    const text = statusText('steward-hello', {
      kind: 'failed',
      status: 'TERMINATED',
      message: 'by ops',
      last: memo,
    });
    expect(text.split('\n').slice(0, 2)).toEqual([
      'steward-hello: terminated: by ops',
      'last recorded at 2026-12-01T11:00:00Z:',
    ]);
    expect(text).toContain('0/100');
  });
});

describe('parseStatusMemo', () => {
  const good = {
    recorded_at: '2026-12-01T11:00:00.000Z',
    eval_set: 'hello',
    state: 'running',
    tasks: [
      {
        name: 't',
        taskQueue: 'steward-task-hello-t',
        resumed: 0,
        saturations: 0,
        runs: 1,
        network_errors: 0,
        state: 'running',
        samples: 1,
        completed: 0,
        errored: 0,
        in_flight: 1,
        waiting: 0,
        setpoint: 1,
        connection_limit: null,
        rate_limit_episodes: 0,
        ramp_state: 'steady',
      },
    ],
    holds: { global: null, tasks: {} },
  };

  test('reads what the workflow records', () => {
    expect(parseStatusMemo({ [STATUS_MEMO_KEY]: good })).toEqual(good);
  });

  test.each<[string, unknown]>([
    ['no memo', undefined],
    ['not an object', 'running'],
    ['a bad time', { ...good, recorded_at: 'yesterday' }],
    ['an unknown state', { ...good, state: 'exploded' }],
    ['a negative count', { ...good, tasks: [{ ...good.tasks[0], completed: -1 }] }],
    ['a task with no name', { ...good, tasks: [{ ...good.tasks[0], name: 3 }] }],
    ['a task without its counters', { ...good, tasks: [{ ...good.tasks[0], runs: undefined }] }],
    ['tasks not a list', { ...good, tasks: {} }],
  ])('ignores a memo with %s (anyone can write a memo)', (_, value) => {
    expect(parseStatusMemo(value === undefined ? undefined : { [STATUS_MEMO_KEY]: value })).toBe(
      undefined,
    );
  });
});

describe('expectedFailure', () => {
  function grpcError(code: number, details: string): Error {
    return Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
  }

  test.each<[string, unknown, string | undefined]>([
    [
      'Temporal gone mid-command',
      new Error('Failed to describe workflow', { cause: grpcError(14, 'Connection refused') }),
      'Temporal stopped answering (Connection refused): check that it runs (`steward server`, or the cluster TEMPORAL_ADDRESS names) and retry; a running eval set loses nothing meanwhile',
    ],
    [
      'Temporal too busy',
      grpcError(4, 'Deadline exceeded'),
      'Temporal did not answer in time (Deadline exceeded): check that it runs (`steward server`, or the cluster TEMPORAL_ADDRESS names) and retry; a running eval set loses nothing meanwhile',
    ],
    [
      'a namespace that does not exist',
      new Error('list failed', { cause: grpcError(5, 'Namespace nope is not found.') }),
      'Temporal has no such namespace (Namespace nope is not found.): check TEMPORAL_NAMESPACE',
    ],
    [
      'a namespace that does not exist, as the client names it',
      Object.assign(new Error("Namespace not found: 'nope'"), { name: 'NamespaceNotFoundError' }),
      "Temporal has no such namespace (Namespace not found: 'nope'): check TEMPORAL_NAMESPACE",
    ],
    [
      'credentials refused',
      grpcError(16, 'Request unauthorized.'),
      'Temporal refused the request (Request unauthorized.): check TEMPORAL_API_KEY and TEMPORAL_NAMESPACE',
    ],
    [
      'a race with another launch',
      Object.assign(new Error('Workflow execution already started'), {
        name: 'WorkflowExecutionAlreadyStartedError',
      }),
      'another `steward launch` started this eval set at the same moment: launch again to re-attach to it',
    ],
    ['a refusal is not an outage', grpcError(3, 'invalid argument'), undefined],
    [
      'a workflow not found elsewhere is not a namespace',
      grpcError(5, 'workflow not found'),
      undefined,
    ],
    ['a bug', new TypeError('x is undefined'), undefined],
  ])('%s', (_, err, message) => {
    const expected = expectedFailure(err);
    expect(expected?.message).toBe(message);
    if (expected) expect(expected.exitCode).toBe(ExitCode.environment);
  });

  test('a workflow gone mid-command is a usage error naming it', () => {
    const gone = Object.assign(new Error('Workflow not found: steward-x'), {
      name: 'WorkflowNotFoundError',
    });
    expect(expectedFailure(gone)).toMatchObject({
      message:
        "the eval set's workflow is gone (Workflow not found: steward-x): `steward status` lists the running ones",
      exitCode: ExitCode.usage,
    });
  });
});

describe('steps that keep failing', () => {
  test('are listed under the head, with the workflow, the step, the attempt and the error', () => {
    const s: LiveStatus = {
      ...(running() as LiveStatus & { kind: 'running' }),
      stuck: [
        {
          workflow_id: 'steward-hello/arithmetic',
          step: 'activity planTask',
          attempt: 26,
          error: '/defs/evalset.yaml: definition file not found',
        },
      ],
    };
    expect(statusText('steward-hello', s).split('\n')).toEqual([
      'hello (steward-hello): running',
      'failing: steward-hello/arithmetic: activity planTask, attempt 26: /defs/evalset.yaml: definition file not found',
    ]);
    expect(statusJson('steward-hello', s)).toMatchObject({
      stuck: [{ workflow_id: 'steward-hello/arithmetic', step: 'activity planTask', attempt: 26 }],
    });
  });
});

describe('statusText provider accounts', () => {
  test('one row per account: ceiling, limit, in flight, wall, pacing and 429s, and its moves in the history', () => {
    const account = 'openai-api/sim/m at http://127.0.0.1:4000/v1 key 507a9a8b';
    const text = statusText(
      'steward-hello',
      running({
        tasks: [
          task({ name: 't1', connection_limit: 40 }),
          task({ name: 't2', connection_limit: 40 }),
        ],
        accounts: [
          {
            account,
            tasks: ['t1', 't2'],
            connection_ceiling: 40,
            controller_limit: 40,
            in_flight: 38,
            wall: { level: 41, probe_at: '2025-03-01T12:02:00.000Z' },
            clamp: null,
            pacing: { pacing: true, binding: 'requests', spacing_ms: 500 },
            rate_limit_episodes: 3,
            hosts: [
              { host: 'gpu-a:311', share: 10, demand: 12, in_flight: 9 },
              { host: 'gpu-b:97', share: 30, demand: 35, in_flight: 29 },
            ],
          },
        ],
        ramp_history: [
          entry({
            task: 't1,t2',
            account,
            kind: 'connections',
            from: 400,
            to: 40,
            reason: 'wall: the provider pushed back at 41 connections',
          }),
        ],
      }),
    );
    const lines = text.split('\n');
    const header = lines.findIndex((l) => l === 'provider accounts:');
    expect(cells(lines[header + 1]).map((c) => c.text)).toEqual([
      'account',
      'tasks',
      'ceiling',
      'limit',
      'in flight',
      'wall',
      'pacing',
      'rate limits',
      'hosts',
    ]);
    expect(cells(lines[header + 2]).map((c) => c.text)).toEqual([
      account,
      't1,t2',
      '40',
      '40',
      '38',
      '41 (probe 2025-03-01T12:02:00Z)',
      'requests: 1 per 500 ms',
      '3',
      // Several hosts: each one's share of the ceiling.
      'gpu-a:311 10, gpu-b:97 30',
    ]);
    expect(text).toContain(`account ${account} (t1,t2)`);
    expect(text).toContain('connections 400 → 40');
  });
});

describe('statusText hosts', () => {
  const GiB = 1024 ** 3;
  const host = (name: string, headroomGiB: number, lowestShare: number) => ({
    host: name,
    total_bytes: 24 * GiB,
    headroom_bytes: headroomGiB * GiB,
    lowest_headroom_share: lowestShare,
    fleet_resident_bytes: 1.5 * GiB,
    processes: 4,
    reported_at: '2025-03-01T12:02:00.000Z',
  });

  test("each host's memory: RAM, headroom now and at its lowest, the fleet's resident total", () => {
    const lines = statusText(
      'steward-hello',
      running({
        tasks: [task({ name: 't1' })],
        hosts: [host('a:1', 20, 0.8), host('b:2', 3, 0.0998)],
      }),
    ).split('\n');
    const header = lines.findIndex((l) => l === 'hosts:');
    expect(header).toBeGreaterThan(0);
    expect(lines.slice(header + 1, header + 4).map((l) => cells(l).map((c) => c.text))).toEqual([
      ['host', 'RAM', 'headroom', 'lowest', 'fleet resident', 'processes'],
      ['a:1', '24.0 GiB', '20.0 GiB (83%)', '80%', '1.5 GiB', '4'],
      // Under the gate's floor, even by a hair: it says the climbs are held.
      ['b:2', '24.0 GiB', '3.0 GiB (12.5%)', '9.9% (climbs held)', '1.5 GiB', '4'],
    ]);
  });

  test('no host reported: no hosts table', () => {
    expect(statusText('steward-hello', running({ tasks: [task({ name: 't1' })] }))).not.toContain(
      'hosts:',
    );
  });
});

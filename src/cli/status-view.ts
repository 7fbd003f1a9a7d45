/**
 * What `steward status` prints: a table per eval set for people, stable JSON for scripts. Pure:
 * the command reads the workflows and hands the result here.
 */
import { alignColumns } from './table';
import { statusFromMemo, type LiveStatus } from '../client/status';
import { MEMORY_FLOOR } from '../core/slots';
import type {
  AccountStatus,
  EvalSetStatus,
  HostStatus,
  PauseStatus,
  RampHistoryEntry,
  RampState,
  TaskStatus,
} from '../workflows/types';
import { resultJson, resultTable } from './table';

/** Ramp history entries shown under the table; the log directory keeps them all. */
const HISTORY_SHOWN = 10;
/** The whole ramp history, in the eval set's log directory (see `EvalSetStatus.ramp_history`). */
const HISTORY_FILE = 'ramp-history.jsonl';

/**
 * The `--json` view of one eval set. A running one is its `status` query answer (or, with no
 * worker answering, the status its memo recorded), with `tasks[]` of `name, setpoint, in_flight,
 * completed, samples, connection_limit, ramp_state` (and more), `ramp_history[]` of `time, task,
 * from, to, reason`; plus where the numbers came from: `workers` (`answering` or `not answering`),
 * `recorded_at` when the memo is shown, each task's `source` (`from`, `at`, `completed_from`,
 * `log_dir_records`), and `log_dir_check` when the log dir's records were counted.
 */
export function statusJson(workflowId: string, s: LiveStatus): unknown {
  switch (s.kind) {
    case 'running': {
      const { tasks, ...rest } = s.status;
      return {
        workflow_id: workflowId,
        ...rest,
        ...(s.workers === undefined
          ? {}
          : s.workers.answering
            ? { workers: 'answering' }
            : {
                workers: 'not answering',
                workers_reason: s.workers.reason,
                workers_hint: startWorkersHint(s.status),
              }),
        ...(s.recorded_at === undefined ? {} : { recorded_at: s.recorded_at }),
        ...(s.log_dir === undefined ? {} : { log_dir_check: s.log_dir }),
        ...(s.stuck === undefined ? {} : { stuck: s.stuck }),
        tasks: tasks.map((t) => {
          const source = s.sources?.[t.name];
          return source === undefined ? t : { ...t, source };
        }),
      };
    }
    case 'completed':
      return { workflow_id: workflowId, state: 'done', ...(resultJson(s.result) as object) };
    case 'failed':
      return {
        workflow_id: workflowId,
        state: s.status.toLowerCase(),
        error: s.message,
        ...(s.last ? { last_recorded: s.last } : {}),
      };
    case 'missing':
      return { workflow_id: workflowId, state: 'missing' };
  }
}

/** The text view of one eval set: a task table, then the latest ramp history when running. */
export function statusText(workflowId: string, s: LiveStatus): string {
  switch (s.kind) {
    case 'running':
      return runningText(workflowId, s);
    case 'completed':
      return `${s.result.eval_set} (${workflowId}): ${s.result.status}\n${resultTable(s.result)}`;
    case 'failed': {
      const head = `${workflowId}: ${s.status.toLowerCase()}: ${s.message}`;
      if (!s.last) return head;
      const last = statusFromMemo(s.last);
      return [head, `last recorded at ${shortTime(s.last.recorded_at)}:`, ...taskTable(last)].join(
        '\n',
      );
    }
    case 'missing':
      return `${workflowId}: not found`;
  }
}

/** How to bring back the workers of an eval set that has none answering. */
export function startWorkersHint(status: EvalSetStatus): string {
  const launch = status.definition
    ? `\`steward launch ${status.definition}\``
    : '`steward launch <definition>`';
  return `start its workers with \`steward workers ${status.eval_set}\`, or run ${launch} again`;
}

const TASK_COLUMNS = [
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
];
/** Columns read as text, left-aligned; the others are numbers. */
const TEXT_COLUMNS = new Set(['task', 'state', 'ramp']);

/** Rows of a table, indented under the header line. */
function table(rows: string[][], rightAligned: boolean[]): string[] {
  return alignColumns(rows, rightAligned).map((line) => `  ${line}`);
}

function runningText(workflowId: string, s: LiveStatus & { kind: 'running' }): string {
  const status = s.status;
  const lines = [`${status.eval_set} (${workflowId}): ${status.state}`];
  if (s.workers && !s.workers.answering) {
    lines[0] += `; no workers answer (${s.workers.reason})`;
    lines.push(
      s.recorded_at === undefined
        ? 'Temporal has no recorded state of it yet (it has not planned, or it predates recording)'
        : `showing the state it last recorded, at ${shortTime(s.recorded_at)}`,
    );
  }
  if (status.paused) lines.push(pausedLine(status.eval_set, status.paused));
  for (const step of s.stuck ?? [])
    lines.push(
      `failing: ${step.workflow_id}: ${step.step}, attempt ${step.attempt}: ${step.error}`,
    );
  lines.push(...sourceNotes(s));
  lines.push(...taskTable(status));
  const accounts = status.accounts ?? [];
  if (accounts.length > 0) {
    lines.push('provider accounts:');
    lines.push(
      ...table(
        [ACCOUNT_COLUMNS, ...accounts.map(accountRow)],
        ACCOUNT_COLUMNS.map((c) => !ACCOUNT_TEXT_COLUMNS.has(c)),
      ),
    );
  }
  const hosts = status.hosts ?? [];
  if (hosts.length > 0) {
    lines.push('hosts:');
    lines.push(
      ...table(
        [HOST_COLUMNS, ...hosts.map(hostRow)],
        HOST_COLUMNS.map((c) => c !== 'host'),
      ),
    );
  }
  const history = status.ramp_history.slice(-HISTORY_SHOWN);
  if (history.length > 0) {
    lines.push(`ramp history${historyNote(history.length, status)}:`);
    lines.push(...table(history.map(historyRow), [false, false, false, false]));
  }
  if (s.workers && !s.workers.answering) lines.push(startWorkersHint(status));
  return lines.join('\n');
}

/** Where the numbers that are not live came from, when the log dir was asked. */
function sourceNotes(s: LiveStatus & { kind: 'running' }): string[] {
  const check = s.log_dir;
  if (!check) return [];
  if (check.state === 'gone')
    return [`the log dir ${check.path} is gone: done counts are Temporal's`];
  if (check.state === 'unreadable')
    return [`cannot read the log dir ${check.path} (${check.reason}): done counts are Temporal's`];
  const fromRecords = Object.entries(s.sources ?? {})
    .filter(([, source]) => source.completed_from === 'log_dir')
    .map(([name]) => name);
  if (fromRecords.length === 0) return [];
  return [
    `done counted from the records in ${check.path} at ${shortTime(check.at)} ` +
      `(ahead of Temporal's numbers) for ${fromRecords.join(', ')}`,
  ];
}

function taskTable(status: EvalSetStatus): string[] {
  if (status.tasks.length === 0) return [];
  const rows = status.tasks.map((t) => taskRow(t, status));
  return table(
    [TASK_COLUMNS, ...rows],
    TASK_COLUMNS.map((c) => !TEXT_COLUMNS.has(c)),
  );
}

/** `paused by alice@host since ...: why`, and what that means. */
function pausedLine(evalSet: string, paused: PauseStatus): string {
  const since = shortTime(new Date(paused.since).toISOString());
  const by = paused.by ? ` by ${paused.by}` : '';
  return (
    `paused${by} since ${since}: ${paused.reason} ` +
    `(no task admits samples; \`steward resume ${evalSet}\` gives back the setpoints shown)`
  );
}

/** An ISO time to the second. */
function shortTime(iso: string): string {
  return iso.replace(/\.\d+Z$/, 'Z');
}

const ACCOUNT_COLUMNS = [
  'account',
  'tasks',
  'ceiling',
  'limit',
  'in flight',
  'wall',
  'pacing',
  'rate limits',
  'hosts',
];
const ACCOUNT_TEXT_COLUMNS = new Set(['account', 'tasks', 'wall', 'pacing', 'hosts']);

function accountRow(a: AccountStatus): string[] {
  const wall = a.wall ? `${a.wall.level} (probe ${a.wall.probe_at.replace(/\.\d+Z$/, 'Z')})` : '-';
  const pacing = a.pacing?.pacing
    ? `${a.pacing.binding ?? 'on'}: 1 per ${a.pacing.spacing_ms} ms`
    : a.pacing
      ? 'off'
      : '-';
  return [
    a.account,
    a.tasks.join(','),
    String(a.connection_ceiling) + (a.clamp === null ? '' : ' (clamped)'),
    a.controller_limit === null ? '-' : String(a.controller_limit),
    a.in_flight === null ? '-' : String(a.in_flight),
    wall,
    pacing,
    String(a.rate_limit_episodes),
    hostsCell(a),
  ];
}

/** One host: its count. Several: each one's share of the ceiling, as the last split gave it. */
function hostsCell(a: AccountStatus): string {
  const hosts = a.hosts ?? [];
  if (hosts.length <= 1) return String(hosts.length);
  return hosts.map((h) => `${h.host} ${h.share ?? '-'}`).join(', ');
}

const HOST_COLUMNS = ['host', 'RAM', 'headroom', 'lowest', 'fleet resident', 'processes'];

/**
 * A host's memory: its headroom (available plus free swap) now and at its lowest in the last
 * window, where the memory gate holds climbs under {@link MEMORY_FLOOR} of RAM, and what its
 * supervisor and worker processes hold resident.
 */
export function hostRow(h: HostStatus): string[] {
  const share = h.headroom_bytes / h.total_bytes;
  const low = h.lowest_headroom_share < MEMORY_FLOOR ? ' (climbs held)' : '';
  return [
    h.host,
    gib(h.total_bytes),
    `${gib(h.headroom_bytes)} (${percent(share)})`,
    `${percent(h.lowest_headroom_share)}${low}`,
    gib(h.fleet_resident_bytes),
    String(h.processes),
  ];
}

function gib(bytes: number): string {
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}

/** Whole percent, with a decimal near the gate's floor; rounded down, as the gate reads it. */
function percent(share: number): string {
  const digits = share < 2 * MEMORY_FLOOR ? 1 : 0;
  return `${(Math.floor(share * 100 * 10 ** digits) / 10 ** digits).toFixed(digits)}%`;
}

/** Where the rest of a shortened history is. */
function historyNote(shown: number, status: EvalSetStatus): string {
  const total = status.ramp_history.length;
  if (shown === total) return '';
  const file = status.log_dir === undefined ? '' : `; all in ${status.log_dir}/${HISTORY_FILE}`;
  return ` (latest ${shown} of ${total}${file})`;
}

function taskRow(t: TaskStatus, status: EvalSetStatus): string[] {
  return [
    t.name,
    t.state,
    String(t.setpoint),
    String(t.in_flight),
    String(t.waiting),
    `${t.completed + t.errored}/${t.samples}`,
    String(t.errored),
    String(t.limited ?? 0),
    String(t.stuck ?? 0),
    String(t.retries ?? 0),
    t.connection_limit === null ? '-' : String(t.connection_limit),
    String(t.rate_limit_episodes),
    rampText(t, status),
  ];
}

const RAMP_LABELS: Record<RampState, string> = {
  climbing: 'climbing',
  held: 'held',
  backing_off: 'backing off',
  pinned: 'pinned',
  at_ceiling: 'at ceiling',
  steady: 'steady',
  finished: 'finished',
};

function rampText(t: TaskStatus, status: EvalSetStatus): string {
  const label = RAMP_LABELS[t.ramp_state];
  if (t.ramp_state === 'held') {
    // A task's own hold is the one in force when both exist.
    const by = (status.holds.tasks[t.name] ?? status.holds.global)?.by;
    return `${label}${by ? ` by ${by}` : ''}${t.ramp_reason ? `: ${t.ramp_reason}` : ''}`;
  }
  return t.ramp_reason ? `${label}: ${t.ramp_reason}` : label;
}

function historyRow(e: RampHistoryEntry): string[] {
  const moved = e.from === null && e.to === null ? '' : ` ${e.from ?? '-'} → ${e.to ?? '-'}`;
  return [
    shortTime(e.time),
    e.account ? `account ${e.account} (${e.task})` : e.task === '*' ? 'all tasks' : e.task,
    `${e.kind}${moved}`,
    [e.reason, e.by && `(${e.by})`].filter(Boolean).join(' '),
  ];
}

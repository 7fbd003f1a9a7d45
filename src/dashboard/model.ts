/**
 * What the dashboard and `steward plot` show of one eval set: the live status (the same numbers
 * as `steward status --json`) with each task's rate and ETA, beside the run over time from
 * `tend.jsonl` and `ramp-history.jsonl`. Pure: src/dashboard/source.ts reads the world.
 */
import { statusFromMemo, type LiveStatus, type StuckStep } from '../client/status';
import type { TendRecord } from '../workflows/tend-record';
import type {
  AccountStatus,
  HostStatus,
  EvalSetStatus,
  RampHistoryEntry,
  TaskStatus,
} from '../workflows/types';

/** The rate is measured over the tends of this last stretch of the run. */
export const RATE_WINDOW_MS = 5 * 60_000;

export interface DashboardTask {
  name: string;
  state: TaskStatus['state'];
  samples: number;
  completed: number;
  errored: number;
  limited: number;
  stuck: number;
  in_flight: number | null;
  setpoint: number | null;
  connection_limit: number | null;
  rate_limit_episodes: number | null;
  ramp_state: string | null;
  ramp_reason: string | null;
  /** The hold in force on the task (its own, else the global one): its reason; null: none. */
  held: string | null;
  /** Samples ended (completed or errored) per minute over the last tends; null: not known yet. */
  rate_per_min: number | null;
  /** Seconds until every sample has ended at that rate; 0 when done; null: not known. */
  eta_seconds: number | null;
}

export interface DashboardData {
  eval_set: string;
  workflow_id: string;
  /** `running`, `planning`, `done`, `failed`, `missing`... as `steward status --json` says. */
  state: string;
  error?: string;
  log_dir: string | null;
  /** ISO time these numbers were read. */
  read_at: string;
  /**
   * Whether the eval set's workers answered (then the numbers are live); null: it has ended.
   * Not answering, the numbers are those Temporal recorded at `recorded_at`.
   */
  workers: 'answering' | 'not answering' | null;
  recorded_at?: string;
  /** Steps that keep failing (a workflow task that fails again and again: the run is stuck). */
  failing: StuckStep[];
  tasks: DashboardTask[];
  accounts: AccountStatus[];
  /** The hosts serving it, with their memory and their fleet's (live runs only). */
  hosts: HostStatus[];
  history: RampHistoryEntry[];
  tends: TendRecord[];
}

/** The dashboard's numbers from the live status and the log dir's records. */
export function dashboardData(args: {
  name: string;
  workflowId: string;
  live: LiveStatus;
  tends: TendRecord[];
  history: RampHistoryEntry[];
  now: number;
}): DashboardData {
  const { live, tends, now } = args;
  const base = {
    eval_set: args.name,
    workflow_id: args.workflowId,
    read_at: new Date(now).toISOString(),
    history: args.history,
    tends,
    failing: live.kind === 'running' ? (live.stuck ?? []) : [],
  };
  const withRates = (t: Omit<DashboardTask, 'rate_per_min' | 'eta_seconds'>): DashboardTask => {
    const rate = taskRate(t.name, tends);
    const left = t.samples - t.completed - t.errored;
    const eta =
      t.state === 'done' || left <= 0 ? 0 : rate !== null && rate > 0 ? (left / rate) * 60 : null;
    return { ...t, rate_per_min: rate, eta_seconds: eta === null ? null : Math.round(eta) };
  };
  switch (live.kind) {
    case 'running': {
      const s = live.status;
      return {
        ...base,
        state: s.state,
        workers: live.workers?.answering === false ? 'not answering' : 'answering',
        ...(live.recorded_at === undefined ? {} : { recorded_at: live.recorded_at }),
        log_dir: s.log_dir ?? null,
        tasks: s.tasks.map((t) => withRates(fromStatus(t, holdOf(t.name, s.holds)))),
        accounts: s.accounts ?? [],
        hosts: s.hosts ?? [],
      };
    }
    case 'completed':
      return {
        ...base,
        state: 'done',
        workers: null,
        log_dir: live.result.log_dir,
        tasks: live.result.tasks.map((t) =>
          withRates({
            name: t.name,
            state: 'done',
            samples: t.samples,
            completed: t.completed,
            errored: t.errored,
            limited: t.limited ?? 0,
            stuck: t.stuck ?? 0,
            in_flight: 0,
            ...lastLevels(t.name, tends),
            held: null,
          }),
        ),
        accounts: [],
        hosts: [],
      };
    case 'failed': {
      const last = live.last && statusFromMemo(live.last);
      return {
        ...base,
        state: live.status.toLowerCase(),
        error: live.message,
        workers: null,
        ...(live.last ? { recorded_at: live.last.recorded_at } : {}),
        log_dir: last?.log_dir ?? null,
        tasks: (last?.tasks ?? []).map((t) => withRates(fromStatus(t, null))),
        accounts: last?.accounts ?? [],
        hosts: [],
      };
    }
    case 'missing':
      return {
        ...base,
        state: 'missing',
        workers: null,
        log_dir: null,
        tasks: [],
        accounts: [],
        hosts: [],
      };
  }
}

function fromStatus(
  t: TaskStatus,
  held: string | null,
): Omit<DashboardTask, 'rate_per_min' | 'eta_seconds'> {
  return {
    name: t.name,
    state: t.state,
    samples: t.samples,
    completed: t.completed,
    errored: t.errored,
    limited: t.limited ?? 0,
    stuck: t.stuck ?? 0,
    in_flight: t.in_flight,
    setpoint: t.setpoint,
    connection_limit: t.connection_limit,
    rate_limit_episodes: t.rate_limit_episodes,
    ramp_state: t.ramp_state,
    ramp_reason: t.ramp_reason ?? null,
    held,
  };
}

function holdOf(task: string, holds: EvalSetStatus['holds'] | undefined): string | null {
  const hold = holds?.tasks[task] ?? holds?.global;
  return hold ? hold.reason : null;
}

/** A finished task's last setpoint and ceiling, from its last tend record. */
function lastLevels(task: string, tends: TendRecord[]) {
  const last = tends
    .flatMap((r) => r.tasks.filter((t) => t.task === task))
    .filter((t) => t.state === 'running')
    .at(-1);
  return {
    setpoint: last?.setpoint ?? null,
    connection_limit: last?.connection_ceiling ?? null,
    rate_limit_episodes: null,
    ramp_state: 'finished',
    ramp_reason: null,
  };
}

/**
 * Samples ended per minute over the last {@link RATE_WINDOW_MS} of the task's tends (its whole
 * run once it is done); null with fewer than two tends.
 */
export function taskRate(task: string, tends: TendRecord[]): number | null {
  const points = tends.flatMap((r) =>
    r.tasks
      .filter((t) => t.task === task)
      .map((t) => ({ at: Date.parse(r.time), ended: t.completed + t.errored, done: t.state })),
  );
  // The run ends at its first record as done; records after it add only idle time.
  const end = points.findIndex((p) => p.done === 'done');
  const run = end < 0 ? points : points.slice(0, end + 1);
  const last = run.at(-1);
  if (!last) return null;
  const first = end < 0 ? run.find((p) => p.at >= last.at - RATE_WINDOW_MS)! : run[0];
  if (last.at <= first.at) return null;
  return ((last.ended - first.ended) / (last.at - first.at)) * 60_000;
}

/**
 * The wire contract of Steward's workflows: inputs, results, signals and queries. Everything here
 * is plain JSON, because the stock `temporal` CLI and other ops tooling start and steer the same
 * workflows. No sample inputs or outputs pass through here (they stay in the log directory), and
 * never a secret: Temporal history is readable in its UI.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { ResolvedSettings } from '../config/settings';
import type { ConcurrencySettings } from '../definition/types';

/** Input of the `evalSet` workflow (task queue `steward`, id `steward-<name>`). */
export interface EvalSetInput {
  /** Path of the definition (`evalset.yaml` or a module), as the workers can read it. */
  definition: string;
  /** Log directory; default: the definition's `log_dir`, else `logs/<name>` beside the definition. */
  log_dir?: string;
  /** Settings given at launch (CLI flags); they win over env, `_steward.yaml` and the definition. */
  settings?: ConcurrencySettings;
}

export type { ConnectionsSetting, ResolvedSettings, SamplesSetting } from '../config/settings';

/** What the `planEvalSet` activity makes of an {@link EvalSetInput}: small, so it fits in history. */
export interface EvalSetPlan {
  name: string;
  /** Absolute path of the definition. */
  definition: string;
  /** Absolute log directory of this eval set. */
  logDir: string;
  settings: ResolvedSettings;
  tasks: TaskPlan[];
}

export interface TaskPlan {
  name: string;
  taskQueue: string;
  /** Dataset size × epochs. */
  samples: number;
  model: string;
  sandboxed: boolean;
}

/** Input of the `evalTask` workflow, one per task, on the task's own queue. */
export interface EvalTaskInput {
  evalSet: string;
  task: string;
  definition: string;
  logDir: string;
  /** Workflow id of the `evalSet` parent. */
  parentId: string;
  setpoint: number;
  /** Present when this run continues an earlier one (continue-as-new). */
  carry?: EvalTaskCarry;
}

/** Half-open ranges `[start, end)` of sample indices (index = (epoch - 1) × dataset size + row). */
export type IndexRanges = [number, number][];

/** State handed from one run of `evalTask` to the next across continue-as-new. */
export interface EvalTaskCarry {
  total: number;
  /** Indices not yet admitted. */
  pending: IndexRanges;
  /** Indices admitted whose result has not arrived: they keep running across continue-as-new. */
  inFlight: number[];
  completed: number;
  errored: number;
  /** Completed before this launch (resumed, not re-run). */
  resumed: number;
  saturations: number;
  /** Samples that failed because Docker refused a network. */
  networkErrors: number;
  runs: number;
}

/** Input of the per-sample workflow. */
export interface SampleInput {
  evalSet: string;
  task: string;
  definition: string;
  logDir: string;
  index: number;
  /** Workflow id (not run id) of the `evalTask` to report to, so reports cross continue-as-new. */
  parentId: string;
  /** The first run id of that task's chain of runs (see {@link sampleWorkflowId}). */
  chain: string;
}

/** What a sample reports back to its task: ids and a small summary only. */
export interface SampleDone {
  index: number;
  ok: boolean;
  /** Short error text when `ok` is false. */
  error?: string;
  errorType?: string;
}

/** What the ramp is doing with a task, for display. */
export type RampState =
  'climbing' | 'held' | 'backing_off' | 'pinned' | 'at_ceiling' | 'steady' | 'finished';

export interface TaskStatus {
  name: string;
  state: 'waiting' | 'running' | 'done';
  taskQueue: string;
  samples: number;
  completed: number;
  errored: number;
  in_flight: number;
  waiting: number;
  setpoint: number;
  /** Samples found completed in the log directory at start: resumed, not re-run. */
  resumed: number;
  /** Times the task wanted to admit a sample but was at its setpoint (cumulative). */
  saturations: number;
  /** Runs of the task workflow so far (continue-as-new count + 1). */
  runs: number;
  /** Samples that failed because Docker refused a network (cumulative; a capacity limit). */
  network_errors: number;
  /** Model-connection ceiling sent to the task's workers. */
  connection_limit: number | null;
  /** Rate-limit episodes the task's workers reported in the last window. */
  rate_limit_episodes: number;
  ramp_state: RampState;
  /** Why: the hold's reason, the cap reached, the pushback seen. */
  ramp_reason?: string;
}

/** A task's own counters, as it reports them; the ramp's fields are the eval set's to set. */
export function taskCounters(status: TaskStatus) {
  const { completed, errored, in_flight, waiting, saturations, runs, network_errors, resumed } =
    status;
  return { completed, errored, in_flight, waiting, saturations, runs, network_errors, resumed };
}

/** One entry of the ramp history: a setpoint or ceiling change, a hold, a resume, a new range. */
export interface RampHistoryEntry {
  /** ISO time. */
  time: string;
  /** The task, or `*` for all tasks; for an account's move, the tasks on it, comma-separated. */
  task: string;
  /** For a move of a provider account's ceiling: the account (never a secret). */
  account?: string;
  kind: 'setpoint' | 'connections' | 'hold' | 'resume' | 'range';
  from: number | null;
  to: number | null;
  reason: string;
  /** Who asked (for holds, resumes and ranges), e.g. `alice@host`. */
  by?: string;
}

export interface HoldRampArgs {
  reason: string;
  /** One task; unset: every task. */
  task?: string;
  by?: string;
}

export interface ResumeRampArgs {
  task?: string;
  by?: string;
}

export interface SetSamplesRampArgs {
  /** The new `samples_ramp`: a range, or false to turn the ramp off (tasks go to 50). */
  range: [number, number] | false;
  by?: string;
}

/** What a worker process saw of one provider account during a window. */
export interface WorkerReport {
  /**
   * The provider account, named without a secret (`<model> at <base URL> key <hash>`): its
   * host's owner reports it once for all its tasks, and the tend decides its ceiling. Absent
   * from older workers, which reported per process.
   */
  account?: string;
  /** Tasks the process serves (their windows all include this report). */
  tasks: string[];
  pid: number;
  /** Current adaptive limit, or the fixed one. */
  limit: number;
  rateLimitEpisodes: number;
  cuts: number;
  retries: number;
  /** Share of the window (0-1) with model calls queued for a connection; absent from older workers. */
  queuedShare?: number;
  /**
   * Calls in flight when the refusal that began a rate-limit episode was sent, the highest in
   * the window; null or absent (older workers): none.
   */
  pushbackLevel?: number | null;
  /** The account's calls in flight on the reporting host when it reported. */
  inFlight?: number;
  /** Whether the host was pacing the account's calls from the provider's headers, and how. */
  pacing?: { pacing: boolean; binding: string | null; spacingMs: number };
}

/** A provider account the eval set's tasks use, in `status` (never a secret). */
export interface AccountStatus {
  /** `<model> at <base URL> key <first 8 hex digits of the key's SHA-256>`. */
  account: string;
  tasks: string[];
  /** The ceiling the tend set for the account's controllers (sum of its tasks' `hi`, lowered). */
  connection_ceiling: number;
  /** The controllers' limit, lowest in the last window. */
  controller_limit: number | null;
  /** Calls in flight at the last reports, summed over hosts. */
  in_flight: number | null;
  /** Where the provider pushed back, held one step below until `probe_at`. */
  wall: { level: number; probe_at: string } | null;
  /** Where reversal clamped the ceiling; null: none. */
  clamp: number | null;
  pacing: { pacing: boolean; binding: string | null; spacing_ms: number } | null;
  /** Rate-limit errors (429s) in the last window. */
  rate_limit_episodes: number;
}

export interface TaskResult {
  name: string;
  samples: number;
  completed: number;
  errored: number;
  resumed: number;
  metrics: TaskMetrics | null;
}

export interface TaskMetrics {
  accuracy: number;
  stderr: number;
  samples_scored: number;
}

export interface EvalSetStatus {
  eval_set: string;
  state: 'planning' | 'running' | 'done';
  definition?: string;
  log_dir?: string;
  settings?: ResolvedSettings;
  tasks: TaskStatus[];
  /** The provider accounts the tasks use (absent before any reported). */
  accounts?: AccountStatus[];
  /** When the task counters were last observed (ms since epoch, workflow time). */
  observed_at?: number;
  /** The latest entries, oldest first; the whole history is in `<log_dir>/ramp-history.jsonl`. */
  ramp_history: RampHistoryEntry[];
  holds: { global: HoldRampArgs | null; tasks: Record<string, HoldRampArgs> };
}

export interface EvalSetResult {
  eval_set: string;
  status: 'success' | 'error';
  log_dir: string;
  tasks: TaskResult[];
}

export const sampleDoneSignal = defineSignal<[SampleDone]>('sampleDone');
export const setLimitsSignal =
  defineSignal<[{ setpoint: number; connectionLimit: number | null }]>('setLimits');
export const holdRampSignal = defineSignal<[HoldRampArgs]>('holdRamp');
export const resumeRampSignal = defineSignal<[ResumeRampArgs]>('resumeRamp');
export const setSamplesRampSignal = defineSignal<[SetSamplesRampArgs]>('setSamplesRamp');
export const workerReportSignal = defineSignal<[WorkerReport]>('workerReport');
export const statusQuery = defineQuery<EvalSetStatus>('status');
/** What worker processes follow: polled often, so it is small and costs no history. */
export interface WorkerControl {
  /** Each task's connection ceiling (null: none set yet). */
  ceilings: Record<string, number | null>;
  /** Epoch milliseconds at which the next tend is due (null: none scheduled). */
  next_tend_at: number | null;
}
export const workerControlQuery = defineQuery<WorkerControl>('workerControl');
export const taskStatusQuery = defineQuery<TaskStatus>('status');

/** Task queue of the `evalSet` workflows and the control activities. */
export const STEWARD_TASK_QUEUE = 'steward';

export function evalSetWorkflowId(name: string): string {
  return `steward-${name}`;
}

export function taskQueueFor(evalSet: string, task: string): string {
  return `steward-task-${evalSet}-${task}`;
}

export function taskWorkflowId(parentId: string, task: string): string {
  return `${parentId}/${task}`;
}

/**
 * A sample's workflow id: unique within one chain of task runs (the chain is named by its first
 * run), so a repeated start within the chain is refused rather than run again, while a later
 * launch of the same eval set may run a sample that failed before.
 */
export function sampleWorkflowId(taskWorkflowId: string, chain: string, index: number): string {
  return `${taskWorkflowId}/${chain}/${index}`;
}

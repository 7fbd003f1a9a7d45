/**
 * The wire contract of Steward's workflows: inputs, results, signals and queries. Everything here
 * is plain JSON, because the stock `temporal` CLI and other ops tooling start and steer the same
 * workflows. No sample inputs or outputs pass through here (they stay in the log directory), and
 * never a secret: Temporal history is readable in its UI.
 */
import { defineQuery, defineSignal, defineUpdate, type Sinks } from '@temporalio/workflow';
import type { ResolvedSettings } from '../config/settings';
import type { NotifyTarget } from '../config/notify';
import type { NotifyEvent, StallState } from './notify';
import type { AccountRampState, Hold, Holds, RampSettings, TaskRampState } from '../core/ramp';
import type { IndexRanges } from '../core/ranges';
import type { ConcurrencySettings } from '../definition/types';
import type { SampleLimits } from '../config/knobs';
import type { SampleLimitType } from '../eval/limits';
import type { AttemptError } from '../eval/retries';
import type { TaskMetrics } from '../eval/metrics';

/** Input of the `evalSet` workflow (task queue `steward`, id `steward-<name>`). */
export interface EvalSetInput {
  /**
   * Absolute path of the definition (`evalset.yaml` or a module). Without `definition_hash` the
   * planning activity snapshots it into the log dir, and the eval set runs that snapshot.
   */
  definition: string;
  /**
   * sha256 of the definition's snapshot in `<log_dir>/.steward/definitions/` (64 hex digits), as
   * `steward launch` took it; every process loads the definition from there. Needs `log_dir`.
   */
  definition_hash?: string;
  /**
   * Absolute log directory; default: the definition's `log_dir`, else `logs/<name>` beside the
   * definition.
   */
  log_dir?: string;
  /**
   * The knobs the launch chose (flag > `STEWARD_*` > `_steward.yaml` > definition), defaults left
   * out; they win over the definition. Planning never reads a process's environment or files.
   */
  settings?: ConcurrencySettings;
  /** Present when this run continues an earlier one (continue-as-new); never given by users. */
  carry?: EvalSetCarry;
}

/** State handed from one run of `evalSet` to the next across continue-as-new. */
export interface EvalSetCarry {
  plan: EvalSetPlan;
  tender: TenderState;
  /** Tasks started so far, in start order (running and finished). */
  started: string[];
  /** Results of the finished tasks. */
  results: TaskResult[];
  /** When the task counters were last observed (ms since epoch). */
  observedAt?: number;
  /** Runs of the `evalSet` workflow so far (continue-as-new count + 1). */
  runs: number;
  /** Each running task's progress as the stall watch saw it (absent: notifications off). */
  stalls?: Record<string, StallState>;
  /** Notifications the last run was still delivering when it handed over: sent again. */
  deliveries?: NotifyDelivery[];
}

/** One notification to one webhook: what the `notify` activity delivers. */
export interface NotifyDelivery {
  target: NotifyTarget;
  event: NotifyEvent;
}

/** The ramp's view of one task between tends (see src/workflows/tend.ts). */
export interface TendedTask {
  plan: TaskPlan;
  status: TaskStatus;
  ramp: TaskRampState;
  /** Cumulative counters at the previous tend, to diff into a window. */
  /** `stuck`: the count last written to the ramp history (absent in states from before it). */
  seen: { saturations: number; errored: number; networkErrors: number; stuck?: number };
  workers: WorkerWindow;
}

/** What the workers of a task reported during the window so far. */
export interface WorkerWindow {
  rateLimitEpisodes: number;
  cuts: number;
  retries: number;
  lowestLimit: number | null;
  /** The largest queued share any worker of the task reported. */
  queuedShare: number;
  /** The highest pushback level any worker of the task reported (see `TaskWindow`). */
  pushbackLevel: number | null;
}

/** A provider account the eval set's tasks use, as its hosts' owners reported it. */
export interface TendedAccount {
  /** Named without a secret (see `WorkerReport.account`). */
  name: string;
  /** Tasks whose calls went through it. */
  tasks: string[];
  state: AccountRampState;
  window: WorkerWindow;
  /** The last window's rate-limit errors, for status. */
  lastRateLimitEpisodes: number;
  /** The last window's lowest controller limit, for status. */
  lastLimit: number | null;
  /** What each reporting host said most recently: in flight, demand and pacing. */
  hosts: Record<string, Pick<WorkerReport, 'inFlight' | 'pacing' | 'demand'>>;
  /**
   * The ceiling split among the hosts that reported in the last window, by their demand
   * (src/core/shares.ts); absent before the first split.
   */
  shares?: Record<string, number>;
  /** Hosts that reported in the current window. */
  reportedBy: string[];
  /** Whether a tend has decided its ceiling yet (absent: carried from before it was kept). */
  tended?: boolean;
  /**
   * Hosts silent for the whole last window: one still silent at the next tend has left, and is
   * dropped. One missed window is not enough: a report that lands just after its tend (a busy
   * host, a short window) would hand a live host's share, calls in flight and all, to the others.
   * Absent from runs that dropped a host after one silent window.
   */
  silent?: string[];
}

/**
 * What a host's owner (its supervisor) says of the host's memory, once a window, with its
 * accounts' reports (SPEC §2, gate 6). Bytes, as the kernel counts them (src/util/host-memory.ts).
 */
export interface HostReport {
  /** `<hostname>:<pid>` of the owner, as in {@link WorkerReport.host}. */
  host: string;
  /** The host's RAM. */
  totalBytes: number;
  /** Available memory plus free swap when it reported. */
  headroomBytes: number;
  /** The lowest headroom it sampled since its last report (it samples each second). */
  lowestHeadroomBytes: number;
  /** Resident memory of the owner and its worker processes, summed, when it reported. */
  fleetResidentBytes: number;
  /** How many worker processes it runs. */
  processes: number;
}

/** A host as the tend keeps it: its last report, and the lowest headroom of the window. */
export interface TendedHost {
  last: HostReport;
  /** Epoch milliseconds of the last report. */
  at: number;
  /** The lowest headroom reported in the current window; null: silent in it so far. */
  windowLowestBytes: number | null;
  /** Silent for the whole last window: still silent at the next tend, it is dropped. */
  silent: boolean;
}

/** A host in `status`: its memory, and its fleet's. */
export interface HostStatus {
  host: string;
  total_bytes: number;
  headroom_bytes: number;
  /** The lowest headroom since its report before, over RAM: what the gate read of its window. */
  lowest_headroom_share: number;
  fleet_resident_bytes: number;
  processes: number;
  /** ISO time of its last report. */
  reported_at: string;
}

/** Everything the ramp carries between tends, as plain JSON (it crosses continue-as-new). */
export interface TenderState {
  settings: RampSettings;
  /** In plan order. */
  tasks: TendedTask[];
  /** The provider accounts, in the order they first reported (absent: carried from before them). */
  accounts?: TendedAccount[];
  /** The hosts serving the eval set, by name, as their owners reported (absent: none yet). */
  hosts?: Record<string, TendedHost>;
  /**
   * Until its first tend, an account's ceiling is the sum of its tasks' ceilings, raised as
   * tasks join it (SPEC §2: the sum of their `hi`s). Absent: the lowest of the first reporting
   * tasks' ceilings, kept to the first tend, as runs started before 2026-12-07 did.
   */
  accountCeilingsSum?: boolean;
  holds: Holds;
  /** A `steward pause` in force (absent: carried from before pausing existed, or never paused). */
  pause?: Hold | null;
  /**
   * Whether the current window saw a pause: the ramp reads nothing from it (src/workflows/pause.ts).
   */
  pausedWindow?: boolean;
  /** The latest entries, oldest first. */
  history: RampHistoryEntry[];
  /** Entries not yet appended to the log (a steering signal can land just before a hand-over). */
  unsaved?: RampHistoryEntry[];
}

export type { ConnectionsSetting, ResolvedSettings, SamplesSetting } from '../config/settings';

/** What the `planEvalSet` activity makes of an {@link EvalSetInput}: small, so it fits in history. */
export interface EvalSetPlan {
  name: string;
  /** Absolute path of the definition, as launched (for people: the eval set runs the snapshot). */
  definition: string;
  /** The definition's snapshot in the log dir (see {@link EvalSetInput.definition_hash}). */
  definitionHash: string;
  /** Absolute log directory of this eval set. */
  logDir: string;
  settings: ResolvedSettings;
  tasks: TaskPlan[];
  /**
   * Worker slots (SPEC §1): each task runs on the queue of the slot it is assigned as it starts
   * ({@link slotQueueFor}). Absent from plans made before slots, whose tasks each have a queue.
   */
  slots?: number;
}

export interface TaskPlan {
  name: string;
  /** The task's own queue, in plans made before worker slots; absent since. */
  taskQueue?: string;
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
  /** The definition's snapshot in the log dir; absent only in runs started before snapshots. */
  definitionHash?: string;
  logDir: string;
  /** Workflow id of the `evalSet` parent. */
  parentId: string;
  setpoint: number;
  /** The eval set's sample limits, handed to each sample. */
  limits?: SampleLimits;
  /** Present when this run continues an earlier one (continue-as-new). */
  carry?: EvalTaskCarry;
}

export type { IndexRanges };

/** State handed from one run of `evalTask` to the next across continue-as-new. */
export interface EvalTaskCarry {
  total: number;
  /** Indices not yet admitted. */
  pending: IndexRanges;
  /** Indices admitted whose result has not arrived: they keep running across continue-as-new. */
  inFlight: number[];
  /**
   * The in-flight samples that share a workflow, each group's indices with the one its workflow
   * is named after first (absent from older carries, and when every sample has its own).
   */
  groups?: number[][];
  completed: number;
  errored: number;
  /** Completed before this launch (resumed, not re-run). */
  resumed: number;
  saturations: number;
  /** Samples that failed because Docker refused a network. */
  networkErrors: number;
  /** Samples stopped by a limit (absent in carries from before limits). */
  limited?: number;
  /** Attempts found stuck, and attempts run again within the run (absent from older carries). */
  stuck?: number;
  retries?: number;
  runs: number;
}

/** Input of the per-sample workflow. */
export interface SampleInput {
  evalSet: string;
  task: string;
  definition: string;
  /** The definition's snapshot in the log dir; absent only in runs started before snapshots. */
  definitionHash?: string;
  logDir: string;
  index: number;
  /** Workflow id (not run id) of the `evalTask` to report to, so reports cross continue-as-new. */
  parentId: string;
  /** The first run id of that task's chain of runs (see {@link sampleWorkflowId}). */
  chain: string;
  /** The eval set's sample limits, as its launch resolved them (absent: none, or an older run). */
  limits?: SampleLimits;
  /** This run's failed attempts of the sample so far, oldest first (absent: this is the first). */
  retries?: AttemptError[];
  /**
   * Runs as a local activity inside its workflow's task rather than as an activity of its own
   * (set for tasks without a sandbox): see `sampleWorkflow`. Absent: an activity, as before.
   */
  inline?: boolean;
  /**
   * Set by the workflow for an inline run: an earlier run of it was lost with its worker (a local
   * activity keeps no attempt count across workers), so the record counts an attempt more.
   */
  lostRun?: boolean;
}

/**
 * Several sandbox-free samples admitted together, run by one sample workflow (see
 * `sampleWorkflow`). Each keeps its own local activity, retries and report; what they share is
 * the workflow's start and its workflow tasks, most of the server's cost per one-call sample.
 */
export interface SampleGroup {
  group: SampleInput[];
}

/** A sample's failed attempt that is run again: the sample's workflow tells its task. */
export interface SampleRetried {
  index: number;
  /** The attempt that failed, from 1. */
  attempt: number;
  errorType?: string;
}

/** What a sample reports back to its task: ids and a small summary only. */
export interface SampleDone {
  index: number;
  ok: boolean;
  /** Short error text when `ok` is false. */
  error?: string;
  errorType?: string;
  /** The kind of limit that stopped the sample, when one did (it still completed). */
  limit?: SampleLimitType;
}

/** Several samples' reports in one signal: what a worker sends while its last signal is in flight. */
export interface SamplesDone {
  reports: SampleDone[];
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
  /** Samples stopped by a limit and scored on what they had (absent from older runs). */
  limited?: number;
  /**
   * Attempts found stuck (no progress for `stuck_after`), each retried once or failed, and failed
   * attempts run again within the run (cumulative; absent from older runs).
   */
  stuck?: number;
  retries?: number;
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
  const counters = { completed, errored, in_flight, waiting, saturations, runs, network_errors };
  return { ...counters, resumed, ...counted(status) };
}

/**
 * The counts a task added later (limits, stuck attempts, retries) that it reports: a task run
 * from before one reports none, and what is known is kept rather than overwritten by undefined.
 */
export function counted(counts: Pick<TaskStatus, 'limited' | 'stuck' | 'retries'>) {
  const { limited, stuck, retries } = counts;
  const known = Object.entries({ limited, stuck, retries }).filter(([, n]) => n !== undefined);
  return Object.fromEntries(known) as Pick<TaskStatus, 'limited' | 'stuck' | 'retries'>;
}

/** One entry of the ramp history: a setpoint or ceiling change, a hold, a resume, a new range. */
export interface RampHistoryEntry {
  /** ISO time. */
  time: string;
  /** The task, or `*` for all tasks; for an account's move, the tasks on it, comma-separated. */
  task: string;
  /** For a move of a provider account's ceiling: the account (never a secret). */
  account?: string;
  /** `refused`: a steering signal that did not parse or could not apply (the reason says why). */
  /** `stuck`: samples of the task found stuck since the last entry (`from`, `to`: the counts). */
  /** `pause`, `unpause`: the whole eval set stopped admitting samples, and started again. */
  kind:
    | 'setpoint'
    | 'connections'
    | 'hold'
    | 'resume'
    | 'range'
    | 'refused'
    | 'stuck'
    | 'pause'
    | 'unpause';
  from: number | null;
  to: number | null;
  reason: string;
  /** Who asked (for holds, resumes, ranges, pauses), e.g. `alice@host`. */
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

/** `steward pause`: no task admits samples until unpaused; running samples finish. */
export interface PauseArgs {
  reason: string;
  by?: string;
}

/** `steward resume`: every task admits again, at the setpoint the ramp kept for it. */
export interface UnpauseArgs {
  by?: string;
}

/** A pause in force, as `status` shows it. */
export interface PauseStatus {
  reason: string;
  /** Epoch milliseconds. */
  since: number;
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
  /**
   * The reporting host's owner, `<hostname>:<pid>`: the tend splits the account's ceiling among
   * hosts by this name. Absent from older workers (named by pid then).
   */
  host?: string;
  /** The most of the account's calls in flight or waiting for a slot at once on the host. */
  demand?: number;
  /** The host's last report: its fleet is stopping, and its share goes to the others at once. */
  leaving?: boolean;
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
  /**
   * The hosts calling the account, by name (`<hostname>:<pid>`): the share of the ceiling the
   * last split gave each (null: not split yet), what it wanted and had in flight when it reported.
   */
  hosts?: { host: string; share: number | null; demand: number | null; in_flight: number | null }[];
}

export interface TaskResult {
  name: string;
  samples: number;
  completed: number;
  errored: number;
  resumed: number;
  /** Samples of this run stopped by a limit, scored on what they had (absent from older runs). */
  limited?: number;
  /** Attempts of this run found stuck, and run again (absent from older runs). */
  stuck?: number;
  retries?: number;
  metrics: TaskMetrics | null;
}

/** A task's scores, declared with the code that computes them. */
export type { TaskMetrics } from '../eval/metrics';

export interface EvalSetStatus {
  eval_set: string;
  state: 'planning' | 'running' | 'done';
  definition?: string;
  /** The content hash of the definition snapshot the eval set runs. */
  definition_hash?: string;
  log_dir?: string;
  settings?: ResolvedSettings;
  tasks: TaskStatus[];
  /** The provider accounts the tasks use (absent before any reported). */
  accounts?: AccountStatus[];
  /** The hosts serving the eval set, with their memory (absent before any reported). */
  hosts?: HostStatus[];
  /** When the task counters were last observed (ms since epoch, workflow time). */
  observed_at?: number;
  /** Runs of the `evalSet` workflow so far (it continues-as-new on long runs). */
  runs?: number;
  /** The latest entries, oldest first; the whole history is in `<log_dir>/ramp-history.jsonl`. */
  ramp_history: RampHistoryEntry[];
  holds: { global: HoldRampArgs | null; tasks: Record<string, HoldRampArgs> };
  /** The pause in force; null or absent: not paused. */
  paused?: PauseStatus | null;
}

export interface EvalSetResult {
  eval_set: string;
  status: 'success' | 'error';
  log_dir: string;
  tasks: TaskResult[];
}

/** How a task ended: its result, or why it failed. */
export type TaskEnd =
  | { task: string; result: TaskResult }
  | { task: string; failure: { message: string; type?: string } };

/** What a task tells its eval set as it ends; the eval set reads how from the task's workflow. */
export interface TaskDone {
  task: string;
}

/** What a steering update answers once applied: the line recorded in the ramp history. */
export interface SteeringAnswer {
  message: string;
}

export const sampleDoneSignal = defineSignal<[SampleDone]>('sampleDone');
export const samplesDoneSignal = defineSignal<[SamplesDone]>('samplesDone');
export const sampleRetriedSignal = defineSignal<[SampleRetried]>('sampleRetried');
/**
 * From a task worker to its task: it holds the task's reports now, and every report it sent before
 * has arrived (see {@link ReportSinks}).
 */
export const reportsHeldSignal = defineSignal('reportsHeld');
export const taskDoneSignal = defineSignal<[TaskDone]>('taskDone');
export const setLimitsSignal =
  defineSignal<[{ setpoint: number; connectionLimit: number | null }]>('setLimits');
export const holdRampSignal = defineSignal<[HoldRampArgs]>('holdRamp');
export const resumeRampSignal = defineSignal<[ResumeRampArgs]>('resumeRamp');
export const setSamplesRampSignal = defineSignal<[SetSamplesRampArgs]>('setSamplesRamp');
export const pauseSignal = defineSignal<[PauseArgs]>('pause');
export const unpauseSignal = defineSignal<[UnpauseArgs]>('unpause');
export const workerReportSignal = defineSignal<[WorkerReport]>('workerReport');
export const hostReportSignal = defineSignal<[HostReport]>('hostReport');
/**
 * The steering updates: the same names and arguments as the signals, but the sender waits for
 * the answer, and a refused payload is rejected by the update's validator before anything enters
 * history (`temporal workflow update execute --name holdRamp ...`).
 */
export const holdRampUpdate = defineUpdate<SteeringAnswer, [HoldRampArgs]>('holdRamp');
export const resumeRampUpdate = defineUpdate<SteeringAnswer, [ResumeRampArgs]>('resumeRamp');
export const setSamplesRampUpdate = defineUpdate<SteeringAnswer, [SetSamplesRampArgs]>(
  'setSamplesRamp',
);
/** Pausing a paused eval set, or unpausing one that is not, is answered, and changes nothing. */
export const pauseUpdate = defineUpdate<SteeringAnswer, [PauseArgs]>('pause');
export const unpauseUpdate = defineUpdate<SteeringAnswer, [UnpauseArgs]>('unpause');
export const statusQuery = defineQuery<EvalSetStatus>('status');
/** What worker processes follow: polled often, so it is small and costs no history. */
export interface WorkerControl {
  /** Each task's connection ceiling (null: none set yet). */
  ceilings: Record<string, number | null>;
  /** Epoch milliseconds at which the next tend is due (null: none scheduled). */
  next_tend_at: number | null;
  /**
   * Each provider account's ceiling and its split among hosts (by host name); a host the split
   * does not name yet takes an equal share (src/core/shares.ts). Absent from older workflows.
   */
  accounts?: Record<string, { ceiling: number; shares: Record<string, number> }>;
}
export const workerControlQuery = defineQuery<WorkerControl>('workerControl');
export const taskStatusQuery = defineQuery<TaskStatus>('status');

/** Task queue of the `evalSet` workflows and the control activities. */
export const STEWARD_TASK_QUEUE = 'steward';

export function evalSetWorkflowId(name: string): string {
  return `steward-${name}`;
}

/** A task's own queue, as plans named it before worker slots (running eval sets still use it). */
export function taskQueueFor(evalSet: string, task: string): string {
  return `steward-task-${evalSet}-${task}`;
}

/** The queue of worker slot `k` (1-based) of an eval set. */
export function slotQueueFor(evalSet: string, k: number): string {
  return `steward-slot-${evalSet}-${k}`;
}

/** The slot a queue of {@link slotQueueFor} belongs to, or undefined for any other queue. */
export function slotOfQueue(evalSet: string, queue: string): number | undefined {
  const prefix = `steward-slot-${evalSet}-`;
  if (!queue.startsWith(prefix)) return undefined;
  const k = Number(queue.slice(prefix.length));
  return Number.isInteger(k) && k >= 1 ? k : undefined;
}

export function taskWorkflowId(parentId: string, task: string): string {
  return `${parentId}/${task}`;
}

/** The eval set's workflow id, from one of its tasks' ({@link taskWorkflowId}). */
export function evalSetIdOfTask(taskWorkflowId: string): string {
  return taskWorkflowId.slice(0, taskWorkflowId.lastIndexOf('/'));
}

/**
 * A sample's workflow id: unique within one chain of task runs (the chain is named by its first
 * run), so a repeated start within the chain is refused rather than run again, while a later
 * launch of the same eval set may run a sample that failed before.
 */
export function sampleWorkflowId(taskWorkflowId: string, chain: string, index: number): string {
  return `${taskWorkflowId}/${chain}/${index}`;
}

/**
 * How a task workflow steers the reports its own worker process sends it (a sink: no history, and
 * never called on replay). It holds them while it continues-as-new: the server refuses a
 * continue-as-new that a signal overtook, and the SDK then replays the whole run.
 */
export interface ReportSinks extends Sinks {
  reports: {
    /** Hold this workflow's reports, then signal {@link reportsHeldSignal}. */
    hold(): void;
    /** End a hold (the run before this one set it). */
    release(): void;
  };
}

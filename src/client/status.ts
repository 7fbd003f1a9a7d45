/**
 * Reads an eval set's status as users see it, from whichever owner answers:
 * - running tasks, asked directly: live;
 * - the `evalSet` workflow's `status` query: as fresh as its last tend;
 * - without workers, no query is answered: the status the workflow last recorded in its memo
 *   (src/workflows/status-memo.ts), which Temporal serves alone;
 * - the results' owner is the log dir (SPEC §1): when the numbers above are not live, each task's
 *   completed count is checked against its exactly-once records, and the records win.
 * Every number says where it came from and as of when.
 */
import { promises as fs } from 'node:fs';
import {
  WorkflowNotFoundError,
  type Client,
  type DescribeWorkflowExecutionResponse,
} from '@temporalio/client';
import { isTemporalUnavailable } from '../errors';
import { openLogStore } from '../logs/store';
import { withTimeout } from '../util/timeout';
import { parseStatusMemo, type StatusMemo } from '../workflows/status-memo';
import {
  statusQuery,
  taskCounters,
  taskStatusQuery,
  taskWorkflowId,
  type EvalSetResult,
  type EvalSetStatus,
  type TaskStatus,
} from '../workflows/types';

/** How long to wait for a worker to answer a query before showing the last known numbers. */
const QUERY_TIMEOUT_MS = 5_000;
const NO_ANSWER = 'no answer within 5 s';

/** Where a task's numbers came from. */
export type NumbersSource =
  /** The task workflow answered a query just now. */
  | 'task'
  /** The eval set answered; its numbers are as of its last tend. */
  | 'tend'
  /** No worker answered; the workflow's memo, as of its last tend. */
  | 'memo';

export interface TaskSource {
  from: NumbersSource;
  /** As of when (ISO); null if unknown (an eval set that has not tended yet). */
  at: string | null;
  /** Where `completed` came from: the numbers' source, or the log dir's records when ahead. */
  completed_from: NumbersSource | 'log_dir';
  /** Records in the log dir, when they were counted. */
  log_dir_records?: number;
}

/** The log dir, when it was read to check numbers that were not live. */
export type LogDirCheck =
  | { state: 'counted'; path: string; at: string }
  | { state: 'gone'; path: string }
  | { state: 'unreadable'; path: string; reason: string };

/** A step that keeps failing: an activity retried again and again, or a failing workflow task. */
export interface StuckStep {
  /** The workflow id it belongs to. */
  workflow_id: string;
  /** `activity <type>` or `workflow task`. */
  step: string;
  attempt: number;
  /** The last failure's message. */
  error: string;
}

export type LiveStatus =
  | {
      kind: 'running';
      status: EvalSetStatus;
      /** Steps of the eval set and its tasks that keep failing (only when `diagnose` asked). */
      stuck?: StuckStep[];
      /** Absent: not asked (the view then assumes they answered). */
      workers?: { answering: true } | { answering: false; reason: string };
      /** Per task name. */
      sources?: Record<string, TaskSource>;
      /** When the memo shown was recorded (only when it is shown). */
      recorded_at?: string;
      log_dir?: LogDirCheck;
    }
  | { kind: 'completed'; result: EvalSetResult }
  | { kind: 'failed'; message: string; status: string; last?: StatusMemo }
  | { kind: 'missing' };

export interface ReadStatusOptions {
  /**
   * Check numbers that are not live against the log dir's records, and look for steps that keep
   * failing (one `describe` per running task). @default false
   */
  thorough?: boolean;
  now?: () => number;
}

/**
 * The status of eval set `workflowId`.
 *
 * @throws what the client throws when Temporal is unreachable (see `isTemporalUnavailable`)
 */
export async function readStatus(
  client: Client,
  workflowId: string,
  options: ReadStatusOptions = {},
): Promise<LiveStatus> {
  const now = options.now ?? Date.now;
  const handle = client.workflow.getHandle(workflowId);
  let description;
  try {
    description = await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError || (err as Error).name === 'WorkflowNotFoundError')
      return { kind: 'missing' };
    throw err;
  }
  const state = description.status.name;
  const memo = parseStatusMemo(description.memo);
  if (state === 'COMPLETED')
    return { kind: 'completed', result: (await handle.result()) as EvalSetResult };
  if (state !== 'RUNNING')
    return {
      kind: 'failed',
      status: state,
      message: await failureMessage(client, workflowId),
      ...(memo ? { last: memo } : {}),
    };

  const asked = await withTimeout(handle.query(statusQuery), QUERY_TIMEOUT_MS, NO_ANSWER).then(
    (status) => ({ status }),
    (err: unknown) => {
      if (isTemporalUnavailable(err)) throw err;
      return { error: innermostCause(err).message };
    },
  );
  let status: EvalSetStatus;
  let live: LiveStatus & { kind: 'running' };
  const sources: Record<string, TaskSource> = {};
  if ('status' in asked) {
    status = asked.status;
    live = { kind: 'running', status, workers: { answering: true }, sources };
    const at = status.observed_at === undefined ? null : new Date(status.observed_at).toISOString();
    for (const t of status.tasks) sources[t.name] = { from: 'tend', at, completed_from: 'tend' };
    const liveAt = new Date(now()).toISOString();
    await Promise.all(
      status.tasks
        .filter((t) => t.state === 'running')
        .map(async (task) => {
          const answer = await withTimeout(
            client.workflow.getHandle(taskWorkflowId(workflowId, task.name)).query(taskStatusQuery),
            QUERY_TIMEOUT_MS,
            NO_ANSWER,
          ).catch(() => undefined);
          if (!answer) return;
          Object.assign(task, taskCounters(answer));
          sources[task.name] = { from: 'task', at: liveAt, completed_from: 'task' };
        }),
    );
  } else {
    status = memo ? statusFromMemo(memo) : planning(workflowId);
    live = {
      kind: 'running',
      status,
      workers: { answering: false, reason: asked.error },
      sources,
      ...(memo ? { recorded_at: memo.recorded_at } : {}),
    };
    for (const t of status.tasks)
      sources[t.name] = { from: 'memo', at: memo?.recorded_at ?? null, completed_from: 'memo' };
  }

  const stale = status.tasks.filter((t) => sources[t.name].from !== 'task' && t.state !== 'done');
  const logDir = status.log_dir ?? memo?.log_dir;
  if (options.thorough && logDir !== undefined && stale.length > 0) {
    const counted = await countRecords(
      logDir,
      stale.map((t) => t.name),
    );
    if (counted.check.state === 'counted') {
      for (const task of stale) {
        const records = counted.records.get(task.name) ?? 0;
        Object.assign(sources[task.name], withRecords(task, sources[task.name], records));
      }
    }
    live.log_dir = counted.check;
  }
  if (options.thorough) {
    const tasks = status.tasks.filter((t) => t.state === 'running');
    const found = await Promise.all([
      stuckSteps(client, workflowId, description.raw),
      ...tasks.map(async (t) => {
        const id = taskWorkflowId(workflowId, t.name);
        const raw = await client.workflow
          .getHandle(id)
          .describe()
          .then((d) => d.raw)
          .catch((err: unknown) => {
            if (isTemporalUnavailable(err)) throw err;
            return undefined; // not started yet, or just closed: nothing stuck
          });
        return raw ? stuckSteps(client, id, raw) : [];
      }),
    ]);
    live.stuck = found.flat();
  }
  return live;
}

/** An activity retried this often is shown: the first retries of a blip are not news. */
const STUCK_ATTEMPTS = 3;

/** The steps of one workflow that keep failing, from its description (and its last events). */
async function stuckSteps(
  client: Client,
  workflowId: string,
  raw: DescribeWorkflowExecutionResponse,
): Promise<StuckStep[]> {
  const steps: StuckStep[] = (raw.pendingActivities ?? [])
    .filter((a) => (a.attempt ?? 0) >= STUCK_ATTEMPTS)
    .map((a) => ({
      workflow_id: workflowId,
      step: `activity ${a.activityType?.name ?? '?'}`,
      attempt: a.attempt ?? 0,
      error: a.lastFailure?.message ?? '',
    }));
  const task = raw.pendingWorkflowTask;
  if (task && (task.attempt ?? 0) >= 2) {
    steps.push({
      workflow_id: workflowId,
      step: 'workflow task',
      attempt: task.attempt ?? 0,
      error: await lastWorkflowTaskFailure(client, workflowId),
    });
  }
  return steps;
}

/** `temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED`, without loading the protos. */
const EVENT_TYPE_WORKFLOW_TASK_FAILED = 9;

/** The message of the latest failed workflow task, from the end of the history. */
export async function lastWorkflowTaskFailure(client: Client, workflowId: string): Promise<string> {
  const { history } = await client.workflowService.getWorkflowExecutionHistoryReverse({
    namespace: client.options.namespace,
    execution: { workflowId },
    maximumPageSize: 100,
  });
  const failed = (history?.events ?? []).find(
    (e) => e.eventType === EVENT_TYPE_WORKFLOW_TASK_FAILED,
  );
  return failed?.workflowTaskFailedEventAttributes?.failure?.message ?? 'no failure recorded';
}

/**
 * Applies the log dir's count of a task's records: the records are the results' owner, so when
 * they are ahead of the numbers (which lag by up to a tend, or by however long the workers have
 * been gone), they win. Mutates `task`; returns its new source. Pure.
 */
export function withRecords(task: TaskStatus, source: TaskSource, records: number): TaskSource {
  const counted = Math.min(records, task.samples);
  if (counted <= task.completed) return { ...source, log_dir_records: records };
  task.completed = counted;
  task.waiting = Math.max(0, task.samples - task.completed - task.errored - task.in_flight);
  return { ...source, completed_from: 'log_dir', log_dir_records: records };
}

/** Each task's records in the log dir, or why they could not be counted. */
async function countRecords(
  logDir: string,
  tasks: string[],
): Promise<{ check: LogDirCheck; records: Map<string, number> }> {
  const records = new Map<string, number>();
  try {
    const stat = await fs.stat(logDir);
    if (!stat.isDirectory())
      return {
        check: { state: 'unreadable', path: logDir, reason: 'not a directory' },
        records,
      };
    const store = openLogStore(logDir);
    for (const task of tasks) records.set(task, (await store.completedKeys(task)).size);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // On another machine of the fleet the log dir may simply not be here.
    if (code === 'ENOENT') return { check: { state: 'gone', path: logDir }, records };
    return {
      check: { state: 'unreadable', path: logDir, reason: (err as Error).message },
      records,
    };
  }
  return { check: { state: 'counted', path: logDir, at: new Date().toISOString() }, records };
}

/** A running eval set's status as its memo recorded it. */
export function statusFromMemo(memo: StatusMemo): EvalSetStatus {
  return {
    eval_set: memo.eval_set,
    state: memo.state,
    ...(memo.definition === undefined ? {} : { definition: memo.definition }),
    ...(memo.log_dir === undefined ? {} : { log_dir: memo.log_dir }),
    tasks: memo.tasks.map((t) => ({ ...t })),
    observed_at: Date.parse(memo.recorded_at),
    ramp_history: [],
    holds: memo.holds,
    paused: memo.paused ?? null,
  };
}

/** An eval set that has recorded nothing yet: it has not planned, or predates the memo. */
function planning(workflowId: string): EvalSetStatus {
  return {
    eval_set: workflowId.replace(/^steward-/, ''),
    state: 'planning',
    tasks: [],
    ramp_history: [],
    holds: { global: null, tasks: {} },
  };
}

/** The message of the innermost cause of a failed workflow, for the user. */
export async function failureMessage(client: Client, workflowId: string): Promise<string> {
  try {
    await client.workflow.getHandle(workflowId).result();
    return 'completed';
  } catch (err) {
    if (isTemporalUnavailable(err)) throw err;
    return innermostCause(err).message;
  }
}

/** The innermost cause of a workflow failure: its message and, for application failures, type. */
export function innermostCause(err: unknown): { message: string; type?: string } {
  let current: unknown = err;
  while (current instanceof Error && current.cause) current = current.cause;
  const type = (current as { type?: unknown } | undefined)?.type;
  return {
    message: current instanceof Error ? current.message : String(current),
    type: typeof type === 'string' ? type : undefined,
  };
}

/** Workflow ids of the running `evalSet` workflows. */
export async function runningEvalSets(client: Client): Promise<string[]> {
  const ids: string[] = [];
  for await (const wf of client.workflow.list({
    query: "WorkflowType = 'evalSet' AND ExecutionStatus = 'Running'",
  })) {
    ids.push(wf.workflowId);
  }
  return ids;
}

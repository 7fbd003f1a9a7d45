/**
 * The eval set's last status, kept where Temporal keeps it without workers: the workflow's memo.
 * A query needs a worker to answer it; `describe` does not. So `steward status` can show what the
 * run last recorded even while no worker of the eval set runs (see src/client/status.ts).
 *
 * Each upsert is a history event that carries the memo whole, so it holds the tasks' statuses
 * (about 400 bytes a task) and the holds, not the ramp history (the log dir has it all, in
 * `ramp-history.jsonl`).
 */
import { patched, upsertMemo } from '@temporalio/workflow';
import type { EvalSetStatus, HoldRampArgs, PauseStatus, RampState, TaskStatus } from './types';

/** The memo key; its value is a {@link StatusMemo}. */
export const STATUS_MEMO_KEY = 'steward_status';
/**
 * Guards the memo's command, so that eval sets started before it existed still replay (README,
 * "Changing workflow code").
 */
export const STATUS_MEMO_PATCH = 'steward-status-memo';

/** A task's numbers as the memo keeps them: all of its status, a few hundred bytes. */
export type MemoTask = TaskStatus;

export interface StatusMemo {
  /** When the workflow recorded it (workflow time, ISO). */
  recorded_at: string;
  eval_set: string;
  state: EvalSetStatus['state'];
  log_dir?: string;
  definition?: string;
  tasks: MemoTask[];
  holds: EvalSetStatus['holds'];
  /** The pause in force; absent when none (so a memo without one is what it always was). */
  paused?: PauseStatus;
}

/** What the memo records of a plan and its tasks' statuses. Pure. */
export function statusMemo(
  at: number,
  plan: { name: string; logDir: string; definition: string },
  tasks: Iterable<{ status: TaskStatus }>,
  holds: { global: HoldRampArgs | null; tasks: Record<string, HoldRampArgs> } = {
    global: null,
    tasks: {},
  },
  paused: PauseStatus | null = null,
): StatusMemo {
  const statuses = [...tasks].map((t) => t.status);
  return {
    recorded_at: new Date(at).toISOString(),
    eval_set: plan.name,
    state: statuses.every((t) => t.state === 'done') ? 'done' : 'running',
    log_dir: plan.logDir,
    definition: plan.definition,
    tasks: statuses.map((t) => ({ ...t })),
    holds: {
      global: holds.global ? { ...holds.global } : null,
      tasks: Object.fromEntries(Object.entries(holds.tasks).map(([k, h]) => [k, { ...h }])),
    },
    ...(paused ? { paused: { ...paused } } : {}),
  };
}

/**
 * Records the eval set's status in its memo. Workflow code: call it after planning, after each
 * tend, and at the end.
 */
export function recordStatus(
  plan: { name: string; logDir: string; definition: string },
  tender: {
    tasks: Map<string, { status: TaskStatus }>;
    holds: { global: HoldRampArgs | null; tasks: Record<string, HoldRampArgs> };
    paused?: PauseStatus | null;
  },
): void {
  if (!patched(STATUS_MEMO_PATCH)) return;
  upsertMemo({
    [STATUS_MEMO_KEY]: statusMemo(
      Date.now(),
      plan,
      tender.tasks.values(),
      tender.holds,
      tender.paused,
    ),
  });
}

const STATES: readonly string[] = ['planning', 'running', 'done'];
const TASK_STATES: readonly string[] = ['waiting', 'running', 'done'];
const RAMP_STATES: readonly RampState[] = [
  'climbing',
  'held',
  'backing_off',
  'pinned',
  'at_ceiling',
  'steady',
  'finished',
];

/**
 * The memo as a {@link StatusMemo}, or undefined when there is none or it is not one: anyone with
 * access to the namespace can write a memo (`temporal workflow start --memo`), so it is checked
 * like any other input.
 */
export function parseStatusMemo(memo: Record<string, unknown> | undefined): StatusMemo | undefined {
  const value = memo?.[STATUS_MEMO_KEY];
  if (!isRecord(value)) return undefined;
  if (typeof value.recorded_at !== 'string' || Number.isNaN(Date.parse(value.recorded_at)))
    return undefined;
  if (typeof value.eval_set !== 'string' || !STATES.includes(value.state as string))
    return undefined;
  if (!Array.isArray(value.tasks) || !value.tasks.every(isMemoTask)) return undefined;
  const holds = isRecord(value.holds) && isRecord(value.holds.tasks) ? value.holds : undefined;
  return {
    recorded_at: value.recorded_at,
    eval_set: value.eval_set,
    state: value.state as StatusMemo['state'],
    ...(typeof value.log_dir === 'string' ? { log_dir: value.log_dir } : {}),
    ...(typeof value.definition === 'string' ? { definition: value.definition } : {}),
    tasks: value.tasks,
    holds: (holds as StatusMemo['holds'] | undefined) ?? { global: null, tasks: {} },
    ...(isPause(value.paused) ? { paused: value.paused } : {}),
  };
}

function isPause(value: unknown): value is PauseStatus {
  return (
    isRecord(value) &&
    typeof value.reason === 'string' &&
    Number.isFinite(value.since) &&
    (value.by === undefined || typeof value.by === 'string')
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const COUNTS = [
  'samples',
  'completed',
  'errored',
  'in_flight',
  'waiting',
  'setpoint',
  'resumed',
  'saturations',
  'runs',
  'network_errors',
  'rate_limit_episodes',
] as const;

function isMemoTask(value: unknown): value is MemoTask {
  if (!isRecord(value) || typeof value.name !== 'string') return false;
  if (typeof value.taskQueue !== 'string') return false;
  if (!TASK_STATES.includes(value.state as string)) return false;
  if (!RAMP_STATES.includes(value.ramp_state as RampState)) return false;
  if (value.connection_limit !== null && typeof value.connection_limit !== 'number') return false;
  return COUNTS.every((k) => Number.isInteger(value[k]) && (value[k] as number) >= 0);
}

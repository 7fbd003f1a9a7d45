/**
 * Which events an eval set tells its webhooks (`notify`), decided from what the workflow already
 * sees: its result or failure, the ramp history's entries, and each tend's observations of its
 * tasks. Pure and deterministic (workflow code); `notifier.ts` sends what this decides, and the
 * `notify` activity delivers it.
 */
/** What an event takes of a ramp-history entry (a `RampHistoryEntry` has it). */
interface HistoryEntry {
  time: string;
  task: string;
  kind: string;
  reason: string;
  by?: string;
}

/**
 * The ramp-history kinds that are events: a hold placed, and the eval set paused or resumed
 * (`pause`/`unpause`). A kind added to the history becomes an event by being added here.
 */
export const NOTIFY_HISTORY_KINDS = ['hold', 'pause', 'unpause'] as const;
export type NotifyHistoryKind = (typeof NOTIFY_HISTORY_KINDS)[number];

/**
 * Tend windows in a row without a sample completing (or erroring) while samples are in flight,
 * after which a task is stalled. Three windows is three minutes at the default `tend_interval`:
 * long enough that a slow batch of samples does not count, short enough to matter.
 */
export const STALL_WINDOWS = 3;

/** Counts per task, in a `finished` event. */
export interface NotifyTaskCounts {
  name: string;
  samples: number;
  completed: number;
  errored: number;
}

interface EventBase {
  eval_set: string;
  /** ISO time (workflow time). */
  time: string;
}

/** What a webhook is told: the JSON body's fields (the Slack body is made from them). */
export type NotifyEvent = EventBase &
  (
    | { kind: 'finished'; status: 'success' | 'error'; tasks: NotifyTaskCounts[] }
    | { kind: 'failed'; message: string; task?: string }
    | {
        kind: 'stalled';
        task: string;
        /** Tend windows without a completion so far. */
        windows: number;
        in_flight: number;
        completed: number;
        errored: number;
        samples: number;
        /** ISO time of the tend that last saw a sample complete (or first saw the task). */
        since: string;
      }
    | {
        /** A workflow of the eval set whose workflow task keeps failing (told by its launch). */
        kind: 'stuck';
        workflow_id: string;
        /** The failing workflow task's attempt. */
        attempt: number;
        error: string;
      }
    | {
        kind: NotifyHistoryKind;
        /** The task, or `*` for the whole eval set. */
        task: string;
        reason: string;
        by?: string;
      }
  );

/** What the eval set knows when it decides; every event carries them. */
export interface EventContext {
  evalSet: string;
  now: number;
}

const base = ({ evalSet, now }: EventContext): EventBase => ({
  eval_set: evalSet,
  time: new Date(now).toISOString(),
});

/** The ramp history's new entries that are events, in order. */
export function historyEvents(entries: readonly HistoryEntry[], ctx: EventContext): NotifyEvent[] {
  const kinds: readonly string[] = NOTIFY_HISTORY_KINDS;
  return entries
    .filter((entry) => kinds.includes(entry.kind))
    .map((entry) => ({
      eval_set: ctx.evalSet,
      time: entry.time,
      kind: entry.kind as NotifyHistoryKind,
      task: entry.task,
      reason: entry.reason,
      ...(entry.by === undefined ? {} : { by: entry.by }),
    }));
}

export function finishedEvent(
  result: { status: 'success' | 'error'; tasks: readonly NotifyTaskCounts[] },
  ctx: EventContext,
): NotifyEvent {
  const tasks = result.tasks.map(({ name, samples, completed, errored }) => ({
    name,
    samples,
    completed,
    errored,
  }));
  return { ...base(ctx), kind: 'finished', status: result.status, tasks };
}

export function failedEvent(
  failure: { message: string; task?: string },
  ctx: EventContext,
): NotifyEvent {
  const task = failure.task === undefined ? {} : { task: failure.task };
  return { ...base(ctx), kind: 'failed', message: failure.message, ...task };
}

/** A task's progress as the watch last saw it. */
export interface StallState {
  /** Samples completed or errored. */
  done: number;
  /** Windows in a row without progress while samples were in flight. */
  quiet: number;
  /** ms since epoch: when `done` last moved, or the task was first seen. */
  since: number;
  /** Told already: a stall is told once, and again only after the task made progress. */
  stalled: boolean;
}

/** What the stall watch reads of a task's status (a `TaskStatus` has it). */
interface Observed {
  name: string;
  state: 'waiting' | 'running' | 'done';
  samples: number;
  completed: number;
  errored: number;
  in_flight: number;
}

/**
 * Finds stalled tasks, one tend at a time: a task is stalled after {@link STALL_WINDOWS} windows
 * in a row in which no sample completed while samples were in flight. A window with nothing in
 * flight (the task waiting for its setpoint, or for a slot) does not count, and does not end the
 * stall either. A stall is told once; progress ends it, and a later stall is told again.
 */
export class StallWatch {
  readonly tasks: Map<string, StallState>;

  /** `saved`: what {@link save} gave the previous run (the count survives continue-as-new). */
  constructor(
    private readonly windows = STALL_WINDOWS,
    saved: Record<string, StallState> = {},
  ) {
    this.tasks = new Map(Object.entries(saved).map(([name, state]) => [name, { ...state }]));
  }

  save(): Record<string, StallState> {
    return Object.fromEntries([...this.tasks].map(([name, state]) => [name, { ...state }]));
  }

  /** The tasks observed at this tend (others are left as they were); returns the new stalls. */
  observe(observed: readonly Observed[], ctx: EventContext): NotifyEvent[] {
    const events: NotifyEvent[] = [];
    for (const task of observed) {
      const done = task.completed + task.errored;
      const seen = this.tasks.get(task.name);
      if (task.state !== 'running') {
        this.tasks.delete(task.name);
        continue;
      }
      if (!seen || done !== seen.done) {
        this.tasks.set(task.name, { done, quiet: 0, since: ctx.now, stalled: false });
        continue;
      }
      if (task.in_flight === 0) continue;
      seen.quiet++;
      if (seen.quiet < this.windows || seen.stalled) continue;
      seen.stalled = true;
      events.push({
        ...base(ctx),
        kind: 'stalled',
        task: task.name,
        windows: seen.quiet,
        in_flight: task.in_flight,
        completed: task.completed,
        errored: task.errored,
        samples: task.samples,
        since: new Date(seen.since).toISOString(),
      });
    }
    return events;
  }
}

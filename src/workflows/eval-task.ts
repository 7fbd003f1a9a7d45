/**
 * One task of an eval set: admits samples while in-flight < setpoint, one child workflow each,
 * and continues-as-new before the history limits without draining: samples in flight keep
 * running and report to the next run by workflow id.
 */
import {
  CancellationScope,
  ContinueAsNew,
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxySinks,
  setDefaultSignalHandler,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { TaskActivities } from '../activities/task';
import { ErrorType } from '../errors';
import { countRanges, takeFromRanges } from '../core/ranges';
import { cleaningUpOnCancel } from './cancel';
import { taggedEvalSet } from './search-attributes';
import { badInput } from './failures';
import { INSPECT_LOG_PATCH, InspectLogCadence, rebuildEvery } from './inspect-log';
import {
  evalTaskStartSchema,
  parse,
  sampleDoneSchema,
  sampleRetriedSchema,
  samplesDoneSchema,
  setLimitsSchema,
} from './schemas';
import {
  sampleDoneSignal,
  sampleRetriedSignal,
  samplesDoneSignal,
  reportsHeldSignal,
  setLimitsSignal,
  taskDoneSignal,
  taskStatusQuery,
  type EvalTaskCarry,
  type ReportSinks,
  type EvalTaskInput,
  type SampleDone,
  type TaskResult,
} from './types';

// Bad input (a definition that does not load, a task that is not in it, a changed task) fails
// these at once, non-retryable. What is left to retry is the world: a worker killed, the log dir
// or Temporal briefly unreachable. That is bounded (about 10 minutes here, 5 for admission): past
// it the task fails with its cause, which `steward status` shows, instead of retrying for ever.
const { planTask, finishTask, awaitSamplesClosed, cancelSamples } = proxyActivities<TaskActivities>(
  {
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: '30 seconds',
    retry: { maximumInterval: '30 seconds', maximumAttempts: 20 },
  },
);

// Admission is an activity, not a local activity. This loop decides on state that sample reports
// (signals) change at any moment; a local activity's resolution is not ordered against them in
// history, and on replay the SDK (1.24) may hand it to the workflow together with signals that
// originally came after it, or before ones that came first. The loop then takes another branch
// and the replay fails with a nondeterminism error: a restarted worker could not carry the task
// on. An activity's completion is an event, ordered with the signals, so replay sees what the
// first execution saw. It costs three history events per admission batch.
const { startSamples, findClosedSamples } = proxyActivities<TaskActivities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumInterval: '10 seconds', maximumAttempts: 30 },
});

// The running task's Inspect log: a rebuild that fails is only a stale view (the records are
// the results, and the task's end writes the log again), so it is not retried for long. It
// heartbeats: a worker lost mid-rebuild must not hold up the task's hand-over or end for minutes.
const { writeInspectLog } = proxyActivities<TaskActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { maximumInterval: '10 seconds', maximumAttempts: 3 },
});

const { reports } = proxySinks<ReportSinks>();

/**
 * Runs that continue-as-new hold their worker's reports first (see {@link holdReports}); runs
 * started before did not.
 */
export const HOLD_REPORTS_PATCH = 'hold-reports-to-continue-as-new';
/** The most a continue-as-new waits for its worker to hold the reports, then goes on without. */
const REPORTS_HOLD_WAIT = '5 seconds';

/** How long handed-over samples may stay silent before their workflows are asked directly. */
const HANDED_OVER_SILENCE = '15 seconds';

/** Past this many events we continue-as-new even if the server has not suggested it yet. */
const HISTORY_EVENTS_CEILING = 20_000;

/**
 * Runs the task and tells its eval set how it ended, by the eval set's workflow id: every run of
 * the eval set answers to it, so the end reaches it across its continue-as-new too.
 */
export async function evalTask(input: EvalTaskInput): Promise<TaskResult> {
  const parsed = parse(evalTaskStartSchema, input, 'evalTask input');
  if (!parsed.ok) throw badInput(parsed.message);
  try {
    const result = await runTask(input);
    await tellEvalSet(input);
    return result;
  } catch (err) {
    if (!(err instanceof ContinueAsNew) && !isCancellation(err)) await tellEvalSet(input);
    throw err;
  }
}

/** Tells the eval set this task is ending; it reads the result (or failure) from this workflow. */
async function tellEvalSet(input: EvalTaskInput): Promise<void> {
  try {
    await getExternalWorkflowHandle(input.parentId).signal(taskDoneSignal, { task: input.task });
  } catch (err) {
    // The eval set is gone (terminated, or a task started by hand): nobody is waiting.
    log.warn('the eval set did not take the task end', { error: (err as Error).message });
  }
}

async function runTask(input: EvalTaskInput): Promise<TaskResult> {
  const { workflowId, taskQueue, firstExecutionRunId } = workflowInfo();
  // The whole run id: run ids are UUIDv7, whose leading characters are a timestamp, so a prefix
  // is shared by launches a minute apart and a relaunch's samples would collide with the last's.
  const chain = firstExecutionRunId;
  // Its samples carry the eval set's search attribute if this task was started with it.
  const tag = taggedEvalSet();
  let setpoint = input.setpoint;
  let connectionLimit: number | null = null;
  let changed = false;
  // Runs started before the task rewrote its Inspect log as it goes keep not doing so.
  const rewritesLog = patched(INSPECT_LOG_PATCH);
  const carry: EvalTaskCarry = input.carry ?? (await startCarry(input));
  const inFlight = new Set(carry.inFlight);
  // In-flight samples that share a workflow: each to the index its workflow is named after.
  const groupOf = new Map<number, number>();
  const joinGroups = (groups: number[][]): void => {
    for (const group of groups) for (const index of group) groupOf.set(index, group[0]!);
  };
  joinGroups(carry.groups ?? []);
  /** The workflows that run the given samples, by the index each is named after. */
  const workflowsOf = (indices: Iterable<number>): number[] => [
    ...new Set([...indices].map((index) => groupOf.get(index) ?? index)),
  ];
  /** The in-flight groups, for the next run: each the index it is named after first. */
  const groupsInFlight = (): number[][] => {
    const byFirst = new Map<number, number[]>();
    for (const index of inFlight) {
      const first = groupOf.get(index);
      if (first === undefined) continue;
      const members = byFirst.get(first) ?? [first];
      if (index !== first) members.push(index);
      byFirst.set(first, members);
    }
    return [...byFirst.values()];
  };
  const logCadence = rewritesLog
    ? new InspectLogCadence(rebuildEvery(carry.total), Date.now())
    : undefined;
  const ref = {
    evalSet: input.evalSet,
    task: input.task,
    definition: input.definition,
    definitionHash: input.definitionHash,
    logDir: input.logDir,
  };
  /** Rebuilds the log in the background; its end wakes the loop, which may start the next. */
  const rebuildLog = (cadence: InspectLogCadence): void => {
    cadence.start(Date.now());
    // Out of a cancellation's reach: the cancelled task writes its final log after this ends.
    void CancellationScope.nonCancellable(() => writeInspectLog(ref))
      .catch((err: unknown) =>
        log.warn('the Inspect log was not rewritten', { error: (err as Error).message }),
      )
      .finally(() => {
        cadence.finish(Date.now());
        changed = true;
      });
  };
  // One timer at a time wakes the loop when a rebuild falls due by time: a timeout on each wait
  // below would start and cancel a timer for every report.
  let logTimer = false;
  const wakeForLog = (cadence: InspectLogCadence): void => {
    const wake = cadence.wakeIn(Date.now());
    if (wake === undefined || logTimer) return;
    logTimer = true;
    void sleep(wake).then(
      () => {
        logTimer = false;
        changed = true;
      },
      // Cancelled with the task: nothing to wake.
      () => undefined,
    );
  };
  /** Waits for a rebuild in progress: one writer at a time, and none left behind by this run. */
  const logSettled = async (): Promise<void> => {
    if (logCadence?.inProgress) await condition(() => !logCadence.inProgress);
  };

  const count = (done: SampleDone): void => {
    logCadence?.noteSample();
    if (done.ok) carry.completed++;
    else carry.errored++;
    if (done.errorType === ErrorType.networkPoolExhausted) carry.networkErrors++;
    if (done.limit) carry.limited = (carry.limited ?? 0) + 1;
    if (done.errorType === ErrorType.stuck) carry.stuck = (carry.stuck ?? 0) + 1;
    changed = true;
  };
  // Samples handed over by the previous run. A report that reached the previous run after it
  // decided to continue-as-new (the SDK delivers such signals to a workflow that has already
  // returned) is in that run's history, not here: if one of these stays silent, ask its workflow.
  const handedOver = new Set(input.carry?.inFlight ?? []);
  const take = (done: SampleDone): void => {
    handedOver.delete(done.index);
    // A report for a sample not in flight is a repeat (a sample retried after reporting). None can
    // come ahead of its admission: the admission activity starts samples only once it is recorded.
    if (inFlight.delete(done.index)) count(done);
    groupOf.delete(done.index);
  };
  // A sample workflow reports its failure alone; workers report successes in batches.
  setHandler(sampleDoneSignal, (payload) => {
    const parsed = parse(sampleDoneSchema, payload, sampleDoneSignal.name);
    if (!parsed.ok) return log.warn('signal refused', { message: parsed.message });
    take(parsed.value);
  });
  setHandler(samplesDoneSignal, (payload) => {
    const parsed = parse(samplesDoneSchema, payload, samplesDoneSignal.name);
    if (!parsed.ok) return log.warn('signal refused', { message: parsed.message });
    for (const done of parsed.value.reports) take(done);
  });
  // A failed attempt that runs again (the sample stays in flight): counted, for status and the ramp.
  setHandler(sampleRetriedSignal, (payload) => {
    const parsed = parse(sampleRetriedSchema, payload, sampleRetriedSignal.name);
    if (!parsed.ok) return log.warn('signal refused', { message: parsed.message });
    carry.retries = (carry.retries ?? 0) + 1;
    if (parsed.value.errorType === ErrorType.stuck) carry.stuck = (carry.stuck ?? 0) + 1;
  });
  setHandler(setLimitsSignal, (payload) => {
    const parsed = parse(setLimitsSchema, payload, setLimitsSignal.name);
    if (!parsed.ok) return log.warn('signal refused', { message: parsed.message });
    const limits = parsed.value;
    setpoint = limits.setpoint;
    connectionLimit = limits.connectionLimit;
    changed = true;
  });
  let reportsHeld = false;
  setHandler(reportsHeldSignal, () => {
    reportsHeld = true;
  });
  // The run before this one held the reports of its worker to continue-as-new: they come here.
  if (input.carry) reports.release();
  /**
   * Asks this run's worker process to hold its reports and waits until it does: then no report
   * signal is on its way, and the continue-as-new that follows is not refused for one that
   * overtook it (the server refuses a run's end over signals it has not seen, and the SDK then
   * replays the whole run: about 3 s for 4,000 events, with the worker's samples waiting). Reports
   * from other hosts' workers and the eval set's signals can still overtake it, rarely.
   */
  const holdReports = async (): Promise<void> => {
    if (!patched(HOLD_REPORTS_PATCH)) return;
    reportsHeld = false;
    reports.hold();
    if (!(await condition(() => reportsHeld, REPORTS_HOLD_WAIT))) {
      log.warn('continuing as new without the reports held', { wait: REPORTS_HOLD_WAIT });
    }
  };
  setDefaultSignalHandler((name) =>
    log.warn('signal refused', { message: `unknown signal "${name}"` }),
  );
  setHandler(taskStatusQuery, () => ({
    name: input.task,
    state: 'running',
    taskQueue,
    samples: carry.total,
    completed: carry.completed,
    errored: carry.errored,
    in_flight: inFlight.size,
    waiting: countRanges(carry.pending),
    setpoint,
    resumed: carry.resumed,
    saturations: carry.saturations,
    runs: carry.runs,
    network_errors: carry.networkErrors,
    limited: carry.limited ?? 0,
    stuck: carry.stuck ?? 0,
    retries: carry.retries ?? 0,
    connection_limit: connectionLimit,
    // The ramp's view belongs to the eval set, which tends this task.
    rate_limit_episodes: 0,
    ramp_state: 'steady',
  }));

  const admit = async (indices: number[]): Promise<void> => {
    for (const index of indices) inFlight.add(index);
    // Whole or not at all: a cancellation must not leave a sample starting after its cancel.
    const started = await CancellationScope.nonCancellable(() =>
      startSamples({
        taskQueue,
        ...(tag === undefined ? {} : { evalSetAttribute: tag }),
        samples: indices.map((index) => ({
          evalSet: input.evalSet,
          task: input.task,
          definition: input.definition,
          definitionHash: input.definitionHash,
          logDir: input.logDir,
          index,
          parentId: workflowId,
          chain,
          ...(input.limits ? { limits: input.limits } : {}),
        })),
      }),
    );
    // Admissions recorded before samples shared workflows returned nothing.
    joinGroups(started?.groups ?? []);
  };

  // Cancelled (the eval set was, or by hand): the samples in flight are cancelled, each tearing
  // its sandbox down, and the task's logs are written as cancelled.
  const cancelled = async (): Promise<void> => {
    await logSettled();
    await cancelSamples({ parentId: workflowId, chain, indices: workflowsOf(inFlight) });
    await finishTask({ ...ref, resumed: carry.resumed, cancelled: true });
  };
  return cleaningUpOnCancel(async () => {
    for (;;) {
      // Reset before the state is read, not after the admission below: reports that arrive while
      // it awaits change that state, and clearing them afterwards could wait forever for a report
      // that already came (every sample in flight finished during the admission).
      changed = false;
      const room = setpoint - inFlight.size;
      if (room > 0 && countRanges(carry.pending) > 0) {
        await admit(takeFromRanges(carry.pending, room));
      }
      // Saturated: samples wait and in-flight has reached the setpoint (the ramp's first gate).
      if (countRanges(carry.pending) > 0 && inFlight.size >= setpoint) carry.saturations++;
      if (countRanges(carry.pending) === 0 && inFlight.size === 0) break;
      if (logCadence?.due(Date.now())) rebuildLog(logCadence);
      else if (logCadence) wakeForLog(logCadence);
      if (shouldContinueAsNew()) {
        await logSettled();
        await holdReports();
        await condition(allHandlersFinished);
        await continueAsNew<typeof evalTask>({
          ...input,
          setpoint,
          carry: {
            ...carry,
            inFlight: [...inFlight],
            groups: groupsInFlight(),
            runs: carry.runs + 1,
          },
        });
      }
      // Without a timeout `condition` resolves to undefined, not true: only a timed wait can mean
      // that handed-over samples went silent.
      if (handedOver.size === 0) {
        await condition(() => changed);
        continue;
      }
      if (!(await condition(() => changed, HANDED_OVER_SILENCE))) {
        const closed = await findClosedSamples({
          parentId: workflowId,
          chain,
          indices: workflowsOf(handedOver),
        });
        // A group's workflow answers for all its members, reported or not.
        for (const done of closed) take(done);
      }
    }

    await awaitSamplesClosed({ taskQueue });
    await logSettled();
    // It also writes the task's final Inspect log.
    const metrics = await finishTask({ ...ref, resumed: carry.resumed });
    return {
      name: input.task,
      samples: carry.total,
      completed: carry.completed,
      errored: carry.errored,
      resumed: carry.resumed,
      limited: carry.limited ?? 0,
      stuck: carry.stuck ?? 0,
      retries: carry.retries ?? 0,
      metrics,
    };
  }, cancelled);
}

async function startCarry(input: EvalTaskInput): Promise<EvalTaskCarry> {
  const plan = await planTask({
    evalSet: input.evalSet,
    task: input.task,
    definition: input.definition,
    definitionHash: input.definitionHash,
    logDir: input.logDir,
  });
  return {
    total: plan.total,
    pending: plan.pending,
    inFlight: [],
    completed: plan.resumed,
    errored: 0,
    resumed: plan.resumed,
    saturations: 0,
    networkErrors: 0,
    runs: 1,
  };
}

function shouldContinueAsNew(): boolean {
  const info = workflowInfo();
  return info.continueAsNewSuggested || info.historyLength > HISTORY_EVENTS_CEILING;
}

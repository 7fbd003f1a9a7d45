/**
 * One eval set: plans it, runs its tasks as children (at most `max_tasks` at once), and tends
 * them on a durable timer: every `tend_interval` it observes each running task, decides the ramp
 * (src/core/ramp via Tender) and sends each task its new limits. It owns the run's state (ranges,
 * holds, setpoints): every input is parsed before it touches that state (src/workflows/schemas),
 * and a long run continues-as-new with that state, never draining its running tasks.
 */
import {
  ApplicationFailure,
  ParentClosePolicy,
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  patched,
  proxyActivities,
  setDefaultSignalHandler,
  setHandler,
  sleep,
  startChild,
  workflowInfo,
  type SignalDefinition,
} from '@temporalio/workflow';
import type { UpdateDefinition } from '@temporalio/common';
import type { z } from 'zod';
import type { ControlActivities } from '../activities/control';
import { evalTask } from './eval-task';
import { cleaningUpOnCancel } from './cancel';
import { Notifier } from './notifier';
import { showNotify } from '../config/notify';
import { badInput } from './failures';
import { recordStatus } from './status-memo';
import { inheritedAttributes } from './search-attributes';
import {
  evalSetCarrySchema,
  evalSetStartSchema,
  holdRampArgsSchema,
  parse,
  pauseArgsSchema,
  unpauseArgsSchema,
  resumeRampArgsSchema,
  setSamplesRampArgsSchema,
  taskDoneSchema,
  workerReportSchema,
  hostReportSchema,
} from './schemas';
import { leastLoadedSlot } from '../core/slots';
import { Tender, type Steering } from './tend';
import { TEND_RECORD_PATCH, tendRecord } from './tend-record';
import {
  evalSetWorkflowId,
  holdRampSignal,
  holdRampUpdate,
  pauseSignal,
  pauseUpdate,
  unpauseSignal,
  unpauseUpdate,
  resumeRampSignal,
  resumeRampUpdate,
  setLimitsSignal,
  setSamplesRampSignal,
  setSamplesRampUpdate,
  statusQuery,
  counted,
  taskCounters,
  taskDoneSignal,
  slotOfQueue,
  slotQueueFor,
  taskQueueFor,
  taskWorkflowId,
  workerControlQuery,
  workerReportSignal,
  hostReportSignal,
  type EvalSetCarry,
  type EvalSetInput,
  type EvalSetPlan,
  type EvalSetResult,
  type TaskDone,
  type TaskEnd,
  type SamplesSetting,
  type SteeringAnswer,
  type TaskPlan,
  type TaskStatus,
} from './types';

/** Runs started before the default signal handler came after every other keep the old order. */
export const UNKNOWN_SIGNALS_LAST_PATCH = 'unknown-signals-last';

/**
 * A run that decided to hand over starts no further task. Without it, a task end that freed a
 * slot in the same workflow task as the hand-over's wait for handlers started the next task
 * there: the start went out with the continue-as-new, the server never started a child for a
 * closed run, and every later run waited for a task that did not exist.
 */
export const HAND_OVER_HOLDS_STARTS_PATCH = 'hand-over-holds-starts';

/**
 * New runs start an account at the sum of its tasks' ceilings, not the lowest of them (see
 * `TenderState.accountCeilingsSum`): a hundred tasks on one account were held to 200 calls in
 * flight until the first tend, a minute in.
 */
export const ACCOUNT_CEILINGS_SUM_PATCH = 'account-ceilings-sum';

// Bad input fails these at once (non-retryable); the attempts are for infrastructure (a disk, a
// restarting server), about ten minutes of it, after which the eval set fails saying why. They
// heartbeat: a launch killed while it planned has its plan retried within the heartbeat timeout
// by the next launch's workers, not after the ten minutes (the soak's stalled relaunch).
const { planEvalSet, writeEvalSetSummary } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { maximumInterval: '30 seconds', maximumAttempts: 20 },
});

// Activities, not local activities: on replay a local activity can resolve in the same
// activation as a worker report or a task's completion that originally came after it, and the
// tend or the next task's start would then be decided on different state. A tend is worth its
// three history events.
const { appendRampHistory } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumInterval: '10 seconds', maximumAttempts: 10 },
});
// A tend that cannot observe its tasks (Temporal busy, a worker gone) decides on what it last saw
// rather than wait: the next tend looks again.
const { observeTasks } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumInterval: '5 seconds', maximumAttempts: 3 },
});

/** How long a task that said it is ending may take to close before the tend looks again. */
const TASK_END_WAIT_MS = 30_000;

/** How long a cancelled eval set waits for its tasks to close (inside observeTasks' minute). */
const TASK_CANCEL_WAIT_MS = 50_000;

/** Past this many events we continue-as-new even if the server has not suggested it yet. */
const HISTORY_EVENTS_CEILING = 10_000;

export async function evalSet(raw: EvalSetInput): Promise<EvalSetResult> {
  const parentId = workflowInfo().workflowId;
  const input = startInput(raw);
  const carry = input.carry;
  let plan: EvalSetPlan | undefined = carry?.plan;
  let tender: Tender | undefined = carry ? new Tender(carry.tender) : undefined;
  let observedAt = carry?.observedAt;
  const runs = carry?.runs ?? 1;
  const started: string[] = [...(carry?.started ?? [])];
  const results = new Map((carry?.results ?? []).map((r) => [r.name, r]));
  let failure: { task: string; message: string; type?: string } | undefined;
  let starting = 0;
  /** Set once this run hands over: the next run starts what is still queued. */
  let handingOver = false;
  let nextTendAt: number | null = null;
  // Steering that arrives while planning waits for the tender.
  const early: ((t: Tender) => void)[] = [];
  const withTender = (act: (t: Tender) => void): void =>
    tender ? act(tender) : void early.push(act);

  // Declared before the handlers: a buffered signal may call it as soon as they are set.
  function taskEnded(done: TaskEnd): void {
    if (results.has(done.task)) return;
    if ('failure' in done) {
      failure ??= { task: done.task, ...done.failure };
      return;
    }
    const { result } = done;
    results.set(done.task, result);
    Object.assign(tender!.tasks.get(done.task)!.status, {
      state: 'done',
      completed: result.completed,
      errored: result.errored,
      in_flight: 0,
      waiting: 0,
      resumed: result.resumed,
      ...counted(result),
      ramp_state: 'finished',
    });
    // Its last stuck attempts reach the history even if it ended between two tends.
    tender!.noteStuck(done.task, Date.now());
  }

  /** Sends each named task the limits the tender has for it. */
  async function sendLimitsOf(t: Tender, names: string[]): Promise<void> {
    await Promise.all(
      names.map(async (name) => {
        try {
          await getExternalWorkflowHandle(taskWorkflowId(parentId, name)).signal(
            setLimitsSignal,
            t.limits(name),
          );
        } catch (err) {
          // The task closed before its end reached this workflow (a tend or a budget cut raced
          // its last sample): its limits no longer matter, and its result is on the way.
          log.info('setLimits not delivered: the task has closed', {
            task: name,
            error: (err as Error).message,
          });
        }
      }),
    );
  }

  /** A pause or an unpause reaches the running tasks now, not at the next tend. */
  function applyPause(command: Steering, t: Tender): Promise<void> | undefined {
    if (command.kind !== 'pause' && command.kind !== 'unpause') return undefined;
    return sendLimitsOf(
      t,
      started.filter((name) => !results.has(name) && t.tasks.has(name)),
    );
  }

  setHandler(statusQuery, () => {
    const tasks = tender ? [...tender.tasks.values()].map((t) => t.status) : [];
    return {
      eval_set: plan?.name ?? parentId.replace(/^steward-/, ''),
      state: !plan ? 'planning' : tasks.every((t) => t.state === 'done') ? 'done' : 'running',
      definition: plan?.definition,
      definition_hash: plan?.definitionHash,
      log_dir: plan?.logDir,
      settings:
        plan &&
        tender &&
        showNotify({ ...plan.settings, samples: tender.settings.samples as SamplesSetting }),
      tasks,
      accounts: tender?.accountStatus() ?? [],
      hosts: tender?.hostStatus() ?? [],
      observed_at: observedAt,
      runs,
      ramp_history: [...(tender?.history ?? [])],
      holds: {
        global: tender?.holds.global ? { ...tender.holds.global } : null,
        tasks: Object.fromEntries(
          Object.entries(tender?.holds.tasks ?? {}).map(([k, h]) => [k, { ...h, task: k }]),
        ),
      },
      paused: tender?.paused ? { ...tender.paused } : null,
    };
  });
  setHandler(workerControlQuery, () => ({
    ceilings: Object.fromEntries(
      [...(tender?.tasks.values() ?? [])].map((t) => [t.plan.name, t.status.connection_limit]),
    ),
    next_tend_at: nextTendAt,
    accounts: tender?.accountControl() ?? {},
  }));

  // Signals: fire-and-forget, so a refusal has no sender to answer; it is logged and recorded
  // in the ramp history, where `steward status` shows it. Nothing a signal carries can throw.
  const onSignal = <A>(
    def: SignalDefinition<[A]>,
    schema: z.ZodType<A>,
    apply: (value: A, t: Tender) => void | Promise<void>,
  ): void => {
    setHandler(def, (payload: A) => {
      const parsed = parse(schema, payload, def.name);
      // What the command still has to do (a pause tells the tasks): the handler waits for it.
      let after: void | Promise<void> = undefined;
      withTender((t) => {
        const now = Date.now();
        if (!parsed.ok) return refuseSignal(t, parsed.message, now);
        try {
          after = apply(parsed.value, t);
        } catch (err) {
          refuseSignal(t, `${def.name}: ${(err as Error).message}`, now);
        }
      });
      return after;
    });
  };
  const steerBySignal = (command: Steering, t: Tender): void | Promise<void> => {
    const refused = t.refusal(command);
    if (refused !== undefined) throw new Error(refused);
    t.steer(command, Date.now());
    return applyPause(command, t);
  };
  onSignal(holdRampSignal, holdRampArgsSchema, (args, t) =>
    steerBySignal({ kind: 'hold', args }, t),
  );
  onSignal(resumeRampSignal, resumeRampArgsSchema, (args, t) =>
    steerBySignal({ kind: 'resume', args }, t),
  );
  onSignal(setSamplesRampSignal, setSamplesRampArgsSchema, (args, t) =>
    steerBySignal({ kind: 'range', args }, t),
  );
  onSignal(pauseSignal, pauseArgsSchema, (args, t) => steerBySignal({ kind: 'pause', args }, t));
  onSignal(unpauseSignal, unpauseArgsSchema, (args, t) =>
    steerBySignal({ kind: 'unpause', args }, t),
  );
  onSignal(workerReportSignal, workerReportSchema, (report, t) => t.report(report));
  onSignal(hostReportSignal, hostReportSchema, (report, t) => t.hostReport(report, Date.now()));
  // Registering it hands it every signal buffered so far that has no handler yet: a task's
  // taskDone that reached a new run before its first task was refused as unknown when this came
  // first. Runs started before keep the old order, as their histories were written with it.
  const refuseUnknown = () =>
    setDefaultSignalHandler((name) =>
      withTender((t) => refuseSignal(t, `unknown signal "${name}"`, Date.now())),
    );
  const unknownLast = patched(UNKNOWN_SIGNALS_LAST_PATCH);
  if (!unknownLast) refuseUnknown();
  // A task says it is ending, so its slot goes to the next task at once, not at the tend. The
  // signal is only a nudge: what ended, and how, is read from the task's workflow itself, so a
  // forged one changes nothing.
  const confirming = new Set<string>();
  setHandler(taskDoneSignal, async (payload: TaskDone) => {
    const parsed = parse(taskDoneSchema, payload, taskDoneSignal.name);
    if (!parsed.ok) return withTender((t) => refuseSignal(t, parsed.message, Date.now()));
    const { task } = parsed.value;
    if (tender && !tender.tasks.has(task)) {
      return refuseSignal(tender, `taskDone: no task "${task}"`, Date.now());
    }
    if (!tender || results.has(task) || confirming.has(task)) return;
    confirming.add(task);
    try {
      const [seen] = await observeTasks({
        workflowIds: [taskWorkflowId(parentId, task)],
        waitForEndMs: TASK_END_WAIT_MS,
      });
      if (seen?.kind === 'ended') taskEnded(seen);
    } catch (err) {
      // A handler must not throw: the tend looks at every running task again anyway.
      log.warn('could not confirm a task end', { task, error: (err as Error).message });
    } finally {
      confirming.delete(task);
    }
  });
  if (unknownLast) refuseUnknown();

  // Updates: the sender waits for the answer, and a payload the validator refuses never enters
  // history.
  const onUpdate = <A>(
    def: UpdateDefinition<SteeringAnswer, [A]>,
    schema: z.ZodType<A>,
    command: (args: A) => Steering,
  ): void => {
    const check = (payload: A): Steering => {
      const parsed = parse(schema, payload, def.name);
      if (!parsed.ok) throw badInput(parsed.message);
      const steering = command(parsed.value);
      // Before planning only the task names are unknown; the handler checks again once planned.
      const refused = tender?.refusal(steering);
      if (refused !== undefined) throw badInput(`${def.name}: ${refused}`);
      return steering;
    };
    setHandler(
      def,
      async (payload: A) => {
        const steering = check(payload);
        await condition(() => tender !== undefined);
        const refused = tender!.refusal(steering);
        if (refused !== undefined) throw badInput(`${def.name}: ${refused}`);
        const message = tender!.steer(steering, Date.now());
        await applyPause(steering, tender!);
        return { message };
      },
      { validator: (payload: A) => void check(payload) },
    );
  };
  onUpdate(holdRampUpdate, holdRampArgsSchema, (args) => ({ kind: 'hold', args }));
  onUpdate(resumeRampUpdate, resumeRampArgsSchema, (args) => ({ kind: 'resume', args }));
  onUpdate(setSamplesRampUpdate, setSamplesRampArgsSchema, (args) => ({ kind: 'range', args }));
  onUpdate(pauseUpdate, pauseArgsSchema, (args) => ({ kind: 'pause', args }));
  onUpdate(unpauseUpdate, unpauseArgsSchema, (args) => ({ kind: 'unpause', args }));

  if (!plan || !tender) {
    plan = await planEvalSet(input);
    // Everything finds an eval set by its name: status, steering, a relaunch.
    if (parentId !== evalSetWorkflowId(plan.name)) {
      throw badInput(
        `evalSet: the definition names eval set "${plan.name}", so its workflow id must be ` +
          `${evalSetWorkflowId(plan.name)}, not ${parentId}`,
      );
    }
    tender = Tender.fresh(plan.settings, {
      accountCeilingsSum: patched(ACCOUNT_CEILINGS_SUM_PATCH),
    });
    for (const task of plan.tasks) tender.add(task, initialStatus(task));
  }
  const planned = plan;
  const tended = tender;
  const settings = planned.settings;
  const notifier = new Notifier(planned.name, settings.notify ?? [], carry);
  for (const act of early.splice(0)) act(tended);

  const finished = (): boolean => results.size === planned.tasks.length;
  const ended = (name: string) => condition(() => results.has(name) || failure !== undefined);

  const sendLimits = (names: string[]): Promise<void> => sendLimitsOf(tended, names);

  // A task's queue: its worker slot's, the least loaded by running tasks, decided from this
  // workflow's own state and recorded in history by the start; a plan made before slots gave
  // each task a queue of its own.
  const queueFor = (task: TaskPlan): string => {
    if (planned.slots === undefined) return task.taskQueue ?? taskQueueFor(planned.name, task.name);
    const running: number[] = [];
    for (const { status } of tended.tasks.values()) {
      const k =
        status.state === 'running' ? slotOfQueue(planned.name, status.taskQueue) : undefined;
      if (k !== undefined) running.push(k);
    }
    return slotQueueFor(planned.name, leastLoadedSlot(planned.slots, running));
  };

  const runTask = async (task: TaskPlan): Promise<void> => {
    const entry = tended.tasks.get(task.name)!;
    const taskQueue = queueFor(task);
    entry.status.taskQueue = taskQueue;
    entry.status.state = 'running';
    started.push(task.name);
    const cut = tended.start(task.name, Date.now());
    starting++;
    try {
      await startChild(evalTask, {
        workflowId: taskWorkflowId(parentId, task.name),
        taskQueue,
        // The task finishes what it admitted even if this workflow is terminated, reset, or
        // continues-as-new: it reports its end by this workflow's id, which every run answers to.
        parentClosePolicy: ParentClosePolicy.ABANDON,
        ...inheritedAttributes(),
        args: [
          {
            evalSet: planned.name,
            task: task.name,
            definition: planned.definition,
            definitionHash: planned.definitionHash,
            logDir: planned.logDir,
            parentId,
            setpoint: tended.limits(task.name).setpoint,
            // Absent from plans made before limits (a run that continued-as-new across them).
            ...(planned.settings.limits ? { limits: planned.settings.limits } : {}),
          },
        ],
      });
    } finally {
      starting--;
    }
    await sendLimits([task.name, ...cut]);
    await ended(task.name);
  };

  // Each slot runs tasks one after another; a task a previous run started holds its slot first.
  const scheduler = (async () => {
    const queue = planned.tasks.filter((t) => !started.includes(t.name));
    const inherited = started.filter((name) => !results.has(name));
    const width = Math.min(settings.maxTasks ?? planned.tasks.length, planned.tasks.length);
    const slot = async (first: string | undefined): Promise<void> => {
      if (first !== undefined) await ended(first);
      while (!failure && !handingOver) {
        const task = queue.shift();
        if (!task) return;
        await runTask(task);
      }
    };
    await Promise.all(
      Array.from({ length: Math.max(width, inherited.length) }, (_, i) => slot(inherited[i])),
    );
  })();

  // After a tend and at the end, with the tend's record (`tend.jsonl`) in the same activity.
  const flushHistory = async (afterTend = false): Promise<void> => {
    const entries = tended.takeUnsaved();
    notifier.history(entries);
    const tend =
      afterTend && patched(TEND_RECORD_PATCH)
        ? tendRecord(
            Date.now(),
            [...tended.tasks.values()].map((t) => t.status),
            tended.accountStatus(),
            tended.hostStatus(),
          )
        : undefined;
    if (entries.length > 0 || tend)
      await appendRampHistory({ logDir: planned.logDir, entries, ...(tend ? { tend } : {}) });
  };

  // Cancelled: the tasks still running are cancelled too (each cancels its samples, which remove
  // their sandboxes, and writes its logs as cancelled), and the eval set ends once they have
  // closed, or after a while if their workers are away.
  const cancelTasks = async (): Promise<void> => {
    const ids = started
      .filter((name) => !results.has(name))
      .map((name) => taskWorkflowId(parentId, name));
    await Promise.all(
      ids.map((id) =>
        getExternalWorkflowHandle(id)
          .cancel()
          .catch(() => undefined),
      ),
    );
    await observeTasks({ workflowIds: ids, waitForEndMs: TASK_CANCEL_WAIT_MS }).catch(() => []);
    await flushHistory();
  };

  return cleaningUpOnCancel(async () => {
    // The tend loop: a durable timer.
    while (!finished() && !failure) {
      // After planning, then after each tend: `steward status` reads it without workers.
      recordStatus(planned, tended);
      // Workers time their reports to arrive just before it (see workers/report.ts).
      nextTendAt = Date.now() + settings.tendIntervalMs;
      await Promise.race([
        sleep(settings.tendIntervalMs),
        scheduler,
        condition(() => failure !== undefined),
      ]);
      if (finished() || failure) break;
      const runningIds = started.filter((name) => !results.has(name));
      const observed = await observeTasks({
        workflowIds: runningIds.map((name) => taskWorkflowId(parentId, name)),
      }).catch((err: unknown) => {
        log.warn('tend without observations', { error: (err as Error).message });
        return [];
      });
      observedAt = Date.now();
      const watched: TaskStatus[] = [];
      for (const seen of observed) {
        // An end this workflow did not hear of (its signal reached a run that had already handed
        // over, or the task was terminated) is found here.
        if (seen.kind !== 'running') {
          if (tended.tasks.has(seen.task)) taskEnded(seen);
          continue;
        }
        const entry = tended.tasks.get(seen.status.name);
        if (entry?.status.state !== 'running') continue;
        Object.assign(entry.status, taskCounters(seen.status));
        watched.push(entry.status);
      }
      notifier.tend(watched);
      await sendLimits(tended.tend(Date.now()));
      await flushHistory(true);
      if (shouldContinueAsNew() && !finished() && !failure) {
        // Before the wait: a slot freed while it waits (or as it ends) starts nothing here.
        if (patched(HAND_OVER_HOLDS_STARTS_PATCH)) handingOver = true;
        await condition(() => allHandlersFinished() && starting === 0);
        const next: EvalSetCarry = {
          plan: planned,
          tender: tended.save(),
          started,
          results: [...results.values()],
          observedAt,
          runs: runs + 1,
          ...(await notifier.carry()),
        };
        await continueAsNew<typeof evalSet>({ ...input, carry: next });
      }
    }
    if (failure) {
      await flushHistory();
      notifier.failed(failure);
      await notifier.drain();
      throw ApplicationFailure.create({
        message: failure.message,
        type: failure.type,
        nonRetryable: true,
      });
    }
    await scheduler;
    await flushHistory(true);

    const tasks = planned.tasks.map((t) => results.get(t.name)!);
    const result: EvalSetResult = {
      eval_set: planned.name,
      status: tasks.every((t) => t.completed === t.samples) ? 'success' : 'error',
      log_dir: planned.logDir,
      tasks,
    };
    await writeEvalSetSummary(result);
    recordStatus(planned, tended);
    notifier.finished(result);
    await notifier.drain();
    return result;
  }, cancelTasks);
}

/** The start input, parsed; a workflow started with a bad one fails at once, saying why. */
function startInput(raw: unknown): EvalSetInput {
  const isObject = typeof raw === 'object' && raw !== null && !Array.isArray(raw);
  const { carry, ...start } = isObject ? (raw as { carry?: unknown }) : { carry: undefined };
  const parsed = parse(evalSetStartSchema, isObject ? start : raw, 'evalSet input');
  if (!parsed.ok) throw badInput(parsed.message);
  if (carry === undefined) return parsed.value;
  const carried = parse(evalSetCarrySchema, carry, 'evalSet input: carry');
  if (!carried.ok) throw badInput(carried.message);
  return { ...parsed.value, carry: carried.value as unknown as EvalSetCarry };
}

function refuseSignal(t: Tender, message: string, now: number): void {
  log.warn('signal refused', { message });
  t.refuse(message, now);
}

function shouldContinueAsNew(): boolean {
  const info = workflowInfo();
  return info.continueAsNewSuggested || info.historyLength > HISTORY_EVENTS_CEILING;
}

function initialStatus(task: TaskPlan) {
  return {
    name: task.name,
    state: 'waiting' as const,
    // A slot's queue is assigned as the task starts.
    taskQueue: task.taskQueue ?? '',
    samples: task.samples,
    completed: 0,
    errored: 0,
    in_flight: 0,
    waiting: task.samples,
    setpoint: 0,
    resumed: 0,
    saturations: 0,
    runs: 0,
    network_errors: 0,
    connection_limit: null,
    rate_limit_episodes: 0,
    ramp_state: 'steady' as const,
  };
}

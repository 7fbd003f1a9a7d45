/**
 * One eval set: plans it, runs its tasks as children (at most `max_tasks` at once), and tends
 * them on a durable timer: every `tend_interval` it observes each running task, decides the ramp
 * (src/core/ramp via Tender) and sends each task its new limits.
 */
import {
  ParentClosePolicy,
  condition,
  log,
  proxyActivities,
  setHandler,
  sleep,
  startChild,
  workflowInfo,
  type ChildWorkflowHandle,
} from '@temporalio/workflow';
import type { ControlActivities } from '../activities/control';
import { evalTask } from './eval-task';
import { Tender } from './tend';
import {
  holdRampSignal,
  resumeRampSignal,
  setLimitsSignal,
  setSamplesRampSignal,
  statusQuery,
  taskCounters,
  taskWorkflowId,
  workerControlQuery,
  workerReportSignal,
  type EvalSetInput,
  type EvalSetPlan,
  type EvalSetResult,
  type TaskPlan,
  type TaskResult,
} from './types';

const { planEvalSet, writeEvalSetSummary } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '10 minutes',
  retry: { maximumInterval: '30 seconds' },
});

// Activities, not local activities: on replay a local activity can resolve in the same
// activation as a worker report or a child's completion that originally came after it, and the
// tend or the next task's start would then be decided on different state. A tend is worth its
// three history events.
const { observeTasks, appendRampHistory } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumInterval: '10 seconds' },
});

export async function evalSet(input: EvalSetInput): Promise<EvalSetResult> {
  const parentId = workflowInfo().workflowId;
  let plan: EvalSetPlan | undefined;
  let tender: Tender | undefined;
  let observedAt: number | undefined;
  let nextTendAt: number | null = null;
  // Signals that arrive while planning wait for the tender.
  const early: ((t: Tender) => void)[] = [];
  const withTender = (act: (t: Tender) => void): void =>
    tender ? act(tender) : void early.push(act);

  setHandler(statusQuery, () => {
    const tasks = tender ? [...tender.tasks.values()].map((t) => t.status) : [];
    return {
      eval_set: plan?.name ?? parentId.replace(/^steward-/, ''),
      state: !plan ? 'planning' : tasks.every((t) => t.state === 'done') ? 'done' : 'running',
      definition: plan?.definition,
      log_dir: plan?.logDir,
      settings: plan?.settings,
      tasks,
      accounts: tender?.accountStatus() ?? [],
      observed_at: observedAt,
      ramp_history: tender?.history ?? [],
      holds: {
        global: tender?.holds.global ? { ...tender.holds.global } : null,
        tasks: Object.fromEntries(
          Object.entries(tender?.holds.tasks ?? {}).map(([k, h]) => [k, { ...h, task: k }]),
        ),
      },
    };
  });
  setHandler(workerControlQuery, () => ({
    ceilings: Object.fromEntries(
      [...(tender?.tasks.values() ?? [])].map((t) => [t.plan.name, t.status.connection_limit]),
    ),
    next_tend_at: nextTendAt,
  }));
  setHandler(holdRampSignal, (args) => withTender((t) => t.hold(args, Date.now())));
  setHandler(resumeRampSignal, (args) => withTender((t) => t.resume(args, Date.now())));
  setHandler(setSamplesRampSignal, (args) => withTender((t) => t.setRange(args, Date.now())));
  setHandler(workerReportSignal, (report) => withTender((t) => t.report(report)));

  plan = await planEvalSet(input);
  const settings = plan.settings;
  tender = new Tender(settings);
  for (const task of plan.tasks) tender.add(task, initialStatus(task));
  for (const act of early.splice(0)) act(tender);
  const tended = tender;

  const results = new Map<string, TaskResult>();
  const running = new Map<string, ChildWorkflowHandle<typeof evalTask>>();
  const queue = [...plan.tasks];
  const finished = (): boolean => results.size === plan!.tasks.length;

  const sendLimits = async (names: string[]): Promise<void> => {
    await Promise.all(
      names.map(async (name) => {
        const task = tended.tasks.get(name)!;
        try {
          await running.get(name)?.signal(setLimitsSignal, {
            setpoint: task.ramp.setpoint,
            connectionLimit: task.ramp.connectionCeiling,
          });
        } catch (err) {
          // The task closed before its completion reached this workflow (a tend or a budget cut
          // raced its last sample): its limits no longer matter, and its result is on the way.
          log.info('setLimits not delivered: the task has closed', {
            task: name,
            error: (err as Error).message,
          });
        }
      }),
    );
  };

  const runTask = async (task: TaskPlan): Promise<void> => {
    const entry = tended.tasks.get(task.name)!;
    entry.status.state = 'running';
    const cut = tended.start(task.name, Date.now());
    const handle = await startChild(evalTask, {
      workflowId: taskWorkflowId(parentId, task.name),
      taskQueue: task.taskQueue,
      // The task finishes what it admitted even if this workflow is terminated or reset.
      parentClosePolicy: ParentClosePolicy.ABANDON,
      args: [
        {
          evalSet: plan!.name,
          task: task.name,
          definition: plan!.definition,
          logDir: plan!.logDir,
          parentId,
          setpoint: entry.ramp.setpoint,
        },
      ],
    });
    running.set(task.name, handle);
    await sendLimits([task.name, ...cut]);
    const result = await handle.result();
    running.delete(task.name);
    results.set(task.name, result);
    Object.assign(entry.status, {
      state: 'done',
      completed: result.completed,
      errored: result.errored,
      in_flight: 0,
      waiting: 0,
      resumed: result.resumed,
      ramp_state: 'finished',
    });
  };

  const scheduler = (async () => {
    const slots: Promise<void>[] = [];
    const next = async (): Promise<void> => {
      for (let task = queue.shift(); task; task = queue.shift()) await runTask(task);
    };
    const width = Math.min(settings.maxTasks ?? queue.length, queue.length);
    for (let i = 0; i < width; i++) slots.push(next());
    await Promise.all(slots);
  })();

  // The tend loop: a durable timer.
  while (!finished()) {
    // Workers time their reports to arrive just before it (see workers/report.ts).
    nextTendAt = Date.now() + settings.tendIntervalMs;
    await Promise.race([sleep(settings.tendIntervalMs), scheduler]);
    if (finished()) break;
    const observed = await observeTasks({
      workflowIds: [...running.keys()].map((t) => taskWorkflowId(parentId, t)),
    });
    observedAt = Date.now();
    for (const live of observed) {
      const entry = tended.tasks.get(live.name);
      if (entry?.status.state !== 'running') continue;
      Object.assign(entry.status, taskCounters(live));
    }
    await sendLimits(tended.tend(Date.now()));
    const entries = tended.takeUnsaved();
    if (entries.length > 0) await appendRampHistory({ logDir: plan.logDir, entries });
  }
  await scheduler;
  await condition(finished);
  const last = tended.takeUnsaved();
  if (last.length > 0) await appendRampHistory({ logDir: plan.logDir, entries: last });

  const tasks = plan.tasks.map((t) => results.get(t.name)!);
  const result: EvalSetResult = {
    eval_set: plan.name,
    status: tasks.every((t) => t.completed === t.samples) ? 'success' : 'error',
    log_dir: plan.logDir,
    tasks,
  };
  await writeEvalSetSummary(result);
  return result;
}

function initialStatus(task: TaskPlan) {
  return {
    name: task.name,
    state: 'waiting' as const,
    taskQueue: task.taskQueue,
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

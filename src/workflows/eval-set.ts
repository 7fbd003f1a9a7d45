/**
 * One eval set: plans it, runs its tasks as children (at most `max_tasks` at once), and tends
 * them on a durable timer: every `tend_interval` it observes each running task and sends it its
 * limits.
 */
import {
  ParentClosePolicy,
  condition,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  startChild,
  workflowInfo,
  type ChildWorkflowHandle,
} from '@temporalio/workflow';
import type { ControlActivities } from '../activities/control';
import { evalTask } from './eval-task';
import {
  statusQuery,
  taskWorkflowId,
  type EvalSetInput,
  type EvalSetPlan,
  type EvalSetResult,
  type TaskResult,
  type TaskStatus,
} from './types';

const { planEvalSet, writeEvalSetSummary } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '10 minutes',
  retry: { maximumInterval: '30 seconds' },
});

const { observeTasks } = proxyLocalActivities<ControlActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 2 },
});

export async function evalSet(input: EvalSetInput): Promise<EvalSetResult> {
  const name = workflowInfo().workflowId.replace(/^steward-/, '');
  const status = new Map<string, TaskStatus>();
  let plan: EvalSetPlan | undefined;
  let observedAt: number | undefined;

  setHandler(statusQuery, () => ({
    eval_set: plan?.name ?? name,
    state: !plan
      ? 'planning'
      : [...status.values()].every((t) => t.state === 'done')
        ? 'done'
        : 'running',
    definition: plan?.definition,
    log_dir: plan?.logDir,
    settings: plan?.settings,
    tasks: [...status.values()],
    observed_at: observedAt,
  }));

  plan = await planEvalSet(input);
  const settings = plan.settings;
  const initialSetpoint =
    settings.samples.type === 'ramp' ? settings.samples.start : settings.samples.value;
  for (const task of plan.tasks) {
    status.set(task.name, {
      name: task.name,
      state: 'waiting',
      taskQueue: task.taskQueue,
      samples: task.samples,
      completed: 0,
      errored: 0,
      in_flight: 0,
      waiting: task.samples,
      setpoint: initialSetpoint,
      resumed: 0,
      saturations: 0,
      runs: 0,
    });
  }

  const parentId = workflowInfo().workflowId;
  const results = new Map<string, TaskResult>();
  const running = new Map<string, ChildWorkflowHandle<typeof evalTask>>();
  const queue = [...plan.tasks];
  const maxTasks = settings.maxTasks ?? plan.tasks.length;
  const finished = (): boolean => results.size === plan!.tasks.length;

  const runTask = async (task: (typeof queue)[number]): Promise<void> => {
    const entry = status.get(task.name)!;
    entry.state = 'running';
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
          setpoint: entry.setpoint,
        },
      ],
    });
    running.set(task.name, handle);
    const result = await handle.result();
    running.delete(task.name);
    results.set(task.name, result);
    Object.assign(entry, {
      state: 'done',
      completed: result.completed,
      errored: result.errored,
      in_flight: 0,
      waiting: 0,
      resumed: result.resumed,
    });
  };

  const scheduler = (async () => {
    const slots: Promise<void>[] = [];
    const next = async (): Promise<void> => {
      for (let task = queue.shift(); task; task = queue.shift()) await runTask(task);
    };
    const width = Math.min(maxTasks, queue.length);
    for (let i = 0; i < width; i++) slots.push(next());
    await Promise.all(slots);
  })();

  // The tend loop: a durable timer. Observation keeps `status` honest between task completions.
  while (!finished()) {
    await Promise.race([sleep(settings.tendIntervalMs), scheduler]);
    if (finished()) break;
    const observed = await observeTasks({
      workflowIds: [...running.keys()].map((t) => taskWorkflowId(parentId, t)),
    });
    observedAt = Date.now();
    for (const task of observed) {
      const entry = status.get(task.name);
      if (entry && entry.state === 'running') Object.assign(entry, task, { state: 'running' });
    }
  }
  await scheduler;
  await condition(finished);

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

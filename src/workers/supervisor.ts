/**
 * The supervisor: hosts the `steward` queue (the `evalSet` workflows and control activities) in
 * its own process, keeps a worker process running for each slot whose tasks are running, and
 * owns the host's provider accounts: one connection controller per account, whose call slots
 * the workers lease over a local socket, reported to each eval set once per account.
 */
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import type { TemporalTarget } from '../temporal/connection';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import { runningEvalSets } from '../client/status';
import { bounded } from '../temporal/bounded';
import type { ResolvedSettings } from '../config/settings';
import {
  STEWARD_TASK_QUEUE,
  slotOfQueue,
  slotQueueFor,
  statusQuery,
  type EvalSetStatus,
  type TaskStatus,
} from '../workflows/types';
import { thisHostCapacity, thisWorker } from '../activities/deps';
import { slotCount, type HostCapacity } from '../core/slots';
import { AccountHost } from '../models/account-host';
import { workflowBundlePath, PACKAGE_ROOT } from './bundle';
import { Fleet, assignSlots, type FleetEvent, type WorkerSlot } from './fleet';
import { leaseSocketPath, serveLeases, type LeaseServer } from './lease-server';
import { HostWatch } from './host-watch';
import { reportAccounts } from './report';
import { installRuntime, processDeps } from './runtime';

export interface SupervisorOptions {
  client: Client;
  temporal: TemporalTarget;
  /** Workflow ids of the eval sets to serve; unset: every running `evalSet`. */
  evalSetIds?: string[];
  /** Directory for worker logs. */
  stewardDir: string;
  signal: AbortSignal;
  onFleetEvent?(event: FleetEvent): void;
  /** Called once the lease server listens (tests watch its leases). */
  onAccounts?(accounts: { host: AccountHost; leases: LeaseServer }): void;
  /**
   * The worker slots the eval set that was just started will want first ({@link expectedSlots}):
   * spawned as soon as the control worker is up, so they start while the eval set plans, and
   * kept until its status first shows a task started.
   */
  expected?: WorkerSlot[];
}

const RECONCILE_MS = 1_000;
/** How long the reconcile waits for an eval set's status: a workflow without a worker to answer. */
const STATUS_QUERY_MS = 5_000;
const WORKER_SCRIPT = path.join(PACKAGE_ROOT, 'dist', 'workers', 'task-worker.js');

/**
 * Runs until `signal` aborts; then stops every worker process it started. Rejects, once those
 * are stopped, if its control worker fails or stops without being asked.
 */
export async function runSupervisor(options: SupervisorOptions): Promise<void> {
  installRuntime();
  // The reconcile loop stops with the supervisor's stop, and with its control worker's end.
  const controlEnded = new AbortController();
  const running = AbortSignal.any([options.signal, controlEnded.signal]);
  const bundlePath = await workflowBundlePath();
  const { address, tls, apiKey } = options.temporal;
  const host = new AccountHost({ now: Date.now, owner: thisWorker() });
  const leases = await serveLeases(host, leaseSocketPath(path.join(options.stewardDir, 'run')));
  options.onAccounts?.({ host, leases });
  const fleet = new Fleet({
    script: WORKER_SCRIPT,
    temporal: { address, namespace: options.temporal.namespace, tls: tls ?? false },
    bundlePath,
    accountsSocket: leases.socketPath,
    logDir: path.join(options.stewardDir, 'workers'),
    onEvent: options.onFleetEvent,
  });
  /** Per eval set, the slots expected of it until its status shows a task started. */
  const expected = new Map<string, WorkerSlot[]>();
  for (const slot of options.expected ?? []) {
    const id = slot.reporting?.evalSetId;
    if (id !== undefined) expected.set(id, [...(expected.get(id) ?? []), slot]);
  }
  // The host's memory, for each eval set's memory gate: named as its accounts' host is.
  const memory = new HostWatch({
    host: `${thisWorker().host}:${process.pid}`,
    workerPids: () => Object.values(fleet.pids()).filter((pid) => pid !== undefined),
  });
  memory.start();
  const connection = await NativeConnection.connect({ address, tls, apiKey });
  const control = await Worker.create({
    connection,
    namespace: options.temporal.namespace,
    taskQueue: STEWARD_TASK_QUEUE,
    workflowBundle: { codePath: bundlePath },
    activities: createActivities(processDeps({ client: options.client })),
  });
  // A worker process takes most of a second of CPU to start: the expected ones start while the
  // eval set plans, not at the first reconcile after its tasks start. After the control worker,
  // which the eval set's planning waits for, so they do not take the CPU it needs.
  fleet.reconcile([...expected.values()].flat());

  /** The worker slots each served eval set wanted when its status last answered. */
  const wanted = new Map<string, WorkerSlot[]>(expected);
  /** Per served eval set, the loop that reports its accounts and takes back its ceilings. */
  const reporters = new Map<string, { stop: AbortController; done: Promise<void> }>();
  const stopReporter = async (id: string): Promise<void> => {
    const reporter = reporters.get(id);
    if (!reporter) return;
    reporters.delete(id);
    reporter.stop.abort();
    await reporter.done;
    host.forget(id);
    memory.forget(id);
  };
  const reconcile = async (): Promise<void> => {
    const ids = options.evalSetIds ?? (await runningEvalSets(options.client));
    // Bounded: a query the stopping control worker will not answer would otherwise hold the
    // stop for the server's half minute. Not cancelled by the stop: a worker that has the query
    // and answers a cancelled one logs the server's refusal.
    const statuses = await Promise.all(
      ids.map((id) =>
        bounded(options.client.connection, STATUS_QUERY_MS, () =>
          options.client.workflow.getHandle(id).query(statusQuery),
        ).catch(() => undefined),
      ),
    );
    for (const id of wanted.keys()) if (!ids.includes(id)) wanted.delete(id);
    // A query that failed (a busy or restarting server) says nothing about which workers an eval
    // set wants: stopping them would throw away its running samples. It keeps what it last had.
    for (const [i, status] of statuses.entries()) {
      // Until the eval set has planned and started its first tasks, what was expected stands.
      const started = status?.tasks.some((t) => t.state !== 'waiting') ?? false;
      if (status && expected.has(ids[i]) && !started && status.state !== 'done') continue;
      if (status) {
        expected.delete(ids[i]);
        wanted.set(ids[i], wantedSlots(ids[i], status));
      }
      const intervalMs = status?.settings?.tendIntervalMs;
      if (intervalMs !== undefined && !reporters.has(ids[i])) {
        const id = ids[i];
        const stop = new AbortController();
        const done = reportAccounts({
          client: options.client,
          host,
          evalSetId: id,
          intervalMs,
          signal: stop.signal,
          memory,
        }).then(() => {
          // Over by itself (the eval set ended): a run started again under its id gets a new one.
          if (reporters.get(id)?.stop !== stop) return;
          reporters.delete(id);
          host.forget(id);
          memory.forget(id);
        });
        reporters.set(id, { stop, done });
      }
    }
    for (const id of reporters.keys()) if (!ids.includes(id)) await stopReporter(id);
    fleet.reconcile([...wanted.values()].flat());
  };

  const loop = (async () => {
    while (!running.aborted) {
      await reconcile().catch(() => undefined);
      await delay(RECONCILE_MS, running);
    }
  })();

  try {
    const failure = await control
      .runUntil(
        new Promise<void>((resolve) => {
          if (options.signal.aborted) resolve();
          options.signal.addEventListener('abort', () => resolve(), { once: true });
        }),
      )
      .then(
        () => undefined,
        (err: unknown) => err as Error,
      );
    // Nothing serves the eval sets' workflows now: keeping their workers would hide that.
    if (!options.signal.aborted) {
      throw new Error(
        `the control worker ended, unasked: ${failure?.message ?? 'without an error'}`,
        { cause: failure },
      );
    }
    if (failure) throw failure;
  } finally {
    controlEnded.abort();
    // First, so a report or control query cut short by the stop is not taken for an outage.
    for (const reporter of reporters.values()) reporter.stop.abort();
    await loop;
    await fleet.stop();
    await Promise.all([...reporters.keys()].map(stopReporter));
    await leases.close();
    memory.stop();
    await connection.close();
  }
}

/** The worker slots an eval set wants now: those serving at least one running task. */
export function wantedSlots(evalSetId: string, status: EvalSetStatus): WorkerSlot[] {
  const settings = status.settings;
  if (!settings) return [];
  const running = (task: TaskStatus): boolean => task.state === 'running' && task.taskQueue !== '';
  return slotsServing(evalSetId, status.eval_set, status.tasks, settings, running);
}

/**
 * The worker slots an eval set about to start will want first: the slots its first tasks
 * (`max_tasks` of them) are assigned, each to the least loaded, so slots 1 to n. Sized as its
 * plan sizes them (src/core/slots.ts), on this host; the eval set's status takes over once it
 * has started tasks.
 */
export function expectedSlots(
  evalSetId: string,
  evalSetName: string,
  tasks: { name: string }[],
  settings: Pick<ResolvedSettings, 'maxTasks' | 'maxWorkers' | 'connections' | 'tendIntervalMs'>,
  host: HostCapacity = thisHostCapacity(),
): WorkerSlot[] {
  const slots = slotCount(tasks.length, settings.maxWorkers, host);
  const first = Math.min(slots, settings.maxTasks ?? tasks.length, tasks.length);
  return Array.from({ length: first }, (_, i) =>
    slotProcess(
      evalSetId,
      evalSetName,
      [slotQueueFor(evalSetName, i + 1)],
      `slot-${i + 1}`,
      settings,
    ),
  );
}

/**
 * One process for each slot queue serving a task that `serves`. A task of a plan made before
 * worker slots has a queue of its own, packed as then: `max_workers` processes at most, task i
 * of those with such queues in the process i mod `max_workers`.
 */
function slotsServing(
  evalSetId: string,
  evalSetName: string,
  tasks: TaskStatus[],
  settings: Pick<ResolvedSettings, 'maxWorkers' | 'connections' | 'tendIntervalMs'>,
  serves: (task: TaskStatus) => boolean,
): WorkerSlot[] {
  const slotted = new Set<string>();
  const own: TaskStatus[] = [];
  for (const task of tasks) {
    if (task.taskQueue === '') continue;
    if (slotOfQueue(evalSetName, task.taskQueue) === undefined) own.push(task);
    else if (serves(task)) slotted.add(task.taskQueue);
  }
  const bySlot = [...slotted]
    .map((queue) => ({ queue, k: slotOfQueue(evalSetName, queue)! }))
    .sort((a, b) => a.k - b.k)
    .map(({ queue, k }) => slotProcess(evalSetId, evalSetName, [queue], `slot-${k}`, settings));
  const packed = assignSlots(own, settings.maxWorkers)
    .filter((slot) => slot.items.some(serves))
    .map((slot) =>
      slotProcess(
        evalSetId,
        evalSetName,
        slot.items.map((t) => t.taskQueue),
        slot.id,
        settings,
      ),
    );
  return [...bySlot, ...packed];
}

function slotProcess(
  evalSetId: string,
  evalSetName: string,
  taskQueues: string[],
  id: string,
  settings: Pick<ResolvedSettings, 'connections' | 'tendIntervalMs'>,
): WorkerSlot {
  return {
    id: `${evalSetName}-${id}`,
    taskQueues,
    reporting: {
      evalSetId,
      connections: settings.connections,
      intervalMs: settings.tendIntervalMs,
    },
  };
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

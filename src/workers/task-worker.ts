/**
 * A worker process: serves one or more task queues (its tasks' `evalTask` workflows, their sample
 * workflows and sample activities). Started and restarted by the supervisor's fleet.
 */
import { Client } from '@temporalio/client';
import { openConnection } from '../temporal/open-connection';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import type { ConnectionsSetting } from '../config/settings';
import { SETTINGS_DEFAULTS } from '../config/settings';
import { thisWorker } from '../activities/deps';
import { taskReports } from '../activities/reports';
import { AccountHost, type SlotSource } from '../models/account-host';
import { ProviderAccounts } from '../models/accounts';
import { watchLineage } from '../util/lineage';
import { LeaseClient } from './lease-client';
import { watchOwners } from './owner-watch';
import { installRuntime, processDeps } from './runtime';
import { reportSinks } from './report-sinks';
import { reportAccounts } from './report';

/** What the supervisor hands a worker process (in `STEWARD_WORKER_CONFIG`); never a secret. */
export interface WorkerProcessConfig {
  address: string;
  namespace: string;
  tls: boolean;
  taskQueues: string[];
  bundlePath: string;
  /** The supervisor's pid: the worker stops when that process is gone (see runTaskWorker). */
  supervisorPid: number;
  /**
   * The supervisor's lease socket: every model call takes its slot from the host's one
   * controller of its account there. Unset: the process owns its accounts and reports them.
   */
  accountsSocket?: string;
  reporting?: {
    /** The `evalSet` workflow that tends the tasks on these queues. */
    evalSetId: string;
    connections: ConnectionsSetting;
    /** One window: the tend interval. */
    intervalMs: number;
  };
}

export const WORKER_CONFIG_ENV = 'STEWARD_WORKER_CONFIG';
/** What a worker process prints once it polls its queues (the fleet starts the next on it). */
export const WORKER_READY = 'steward worker: polling';

/**
 * Samples are bounded by the task's setpoint in the workflow, not by the worker's slots. An
 * inline sample (sampleWorkflow) holds a local-activity slot and its workflow's task, which stays
 * open, and cached, while the local activity runs: those limits are as high as the activities'.
 */
const MAX_CONCURRENT_SAMPLES = 4_000;
/** An orphaned worker exits by then, whether or not its workers have shut down. */
const ORPHAN_EXIT_MS = 15_000;

export async function runTaskWorker(config: WorkerProcessConfig): Promise<void> {
  installRuntime({ shutdownSignals: ['SIGINT', 'SIGTERM'] });
  // A worker would outlive a supervisor killed with SIGKILL: it notices it was orphaned and
  // stops, so a relaunch's fleet is the only one serving these queues. Its parent is always a
  // supervisor, which watches its own lineage. Watched from the start, by the pid the supervisor
  // gave: one killed while this process was still connecting has already left it to init.
  const workers: Worker[] = [];
  const unwatch = watchLineage(
    () => {
      console.error('steward: the supervisor that started this worker is gone; stopping');
      for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
      // Shutting down waits for running samples' grace time; it must not wait forever.
      setTimeout(() => process.exit(1), workers.length > 0 ? ORPHAN_EXIT_MS : 0).unref();
    },
    { scope: 'parent', parent: config.supervisorPid },
  );
  // The API key (Temporal Cloud) comes from this process's environment, never from the config.
  const apiKey = process.env.TEMPORAL_API_KEY || undefined;
  const target = { address: config.address, tls: config.tls || apiKey !== undefined, apiKey };
  const connection = await NativeConnection.connect(target);
  // Admission starts sample workflows, and samples report, through a client of its own.
  const client = new Client({
    connection: await openConnection(target),
    namespace: config.namespace,
  });
  // Each call names its eval set and task to its account (runtime.ts): a slot's tasks change.
  const leases = config.accountsSocket ? new LeaseClient(config.accountsSocket) : null;
  const ownHost = leases ? null : new AccountHost({ now: Date.now, owner: thisWorker() });
  const source: SlotSource = leases ?? ownHost!;
  const accounts = new ProviderAccounts({
    source,
    connections: config.reporting?.connections ?? {
      type: 'adaptive',
      ...SETTINGS_DEFAULTS.connections,
    },
    env: process.env,
  });
  // Samples report through it, and task workflows hold it while they continue-as-new.
  const reports = taskReports(client);
  const activities = createActivities(processDeps({ client, accounts, reports }));
  const sinks = reportSinks(reports, client);
  workers.push(
    ...(await Promise.all(
      config.taskQueues.map((taskQueue) =>
        Worker.create({
          connection,
          namespace: config.namespace,
          taskQueue,
          workflowBundle: { codePath: config.bundlePath },
          activities,
          sinks,
          maxConcurrentActivityTaskExecutions: MAX_CONCURRENT_SAMPLES,
          maxConcurrentLocalActivityExecutions: MAX_CONCURRENT_SAMPLES,
          maxConcurrentWorkflowTaskExecutions: MAX_CONCURRENT_SAMPLES,
          maxCachedWorkflows: MAX_CONCURRENT_SAMPLES,
          // Let running samples finish their current step briefly; Temporal re-runs the rest.
          shutdownGraceTime: '2 seconds',
        }),
      ),
    )),
  );
  console.log(`${WORKER_READY} ${config.taskQueues.join(', ')}`);
  const stopping = new AbortController();
  // Under a supervisor, the accounts' owner reports them, once per account for the whole host.
  const reporting =
    config.reporting && ownHost
      ? reportAccounts({
          client,
          host: ownHost,
          evalSetId: config.reporting.evalSetId,
          intervalMs: config.reporting.intervalMs,
          signal: stopping.signal,
        })
      : Promise.resolve();
  // A terminated eval set or task runs no code: what it started is ended from here.
  const watching = watchOwners({
    client,
    taskQueues: config.taskQueues,
    signal: stopping.signal,
  });
  try {
    await Promise.all(workers.map((w) => w.run()));
  } finally {
    unwatch();
    stopping.abort();
    await Promise.all([reporting, watching]);
    leases?.close();
    await client.connection.close();
    await connection.close();
  }
}

if (require.main === module) {
  const raw = process.env[WORKER_CONFIG_ENV];
  if (!raw) {
    console.error(
      `${WORKER_CONFIG_ENV} is not set: this process is started by the steward supervisor`,
    );
    process.exit(2);
  }
  runTaskWorker(JSON.parse(raw) as WorkerProcessConfig).then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}

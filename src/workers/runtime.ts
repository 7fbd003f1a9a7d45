/** The real dependencies of a worker process's activities. */
import type { Client } from '@temporalio/client';
import {
  DefaultLogger,
  Runtime,
  makeTelemetryFilterString,
  type LogLevel,
  type LogMetadata,
} from '@temporalio/worker';
import type Dockerode from 'dockerode';
import { loadDefinition } from '../loader/definition';
import { loadSnapshot } from '../loader/snapshot';
import type { Model } from '../definition/types';
import { openLogStore, type LogStore } from '../logs/store';
import { createModel } from '../models';
import type { ProviderAccounts } from '../models/accounts';
import { memoize, thisWorker, type ActivityDeps } from '../activities/deps';
import { taskReports, type TaskReports } from '../activities/reports';

export function processDeps(
  options: {
    client?: Client;
    env?: NodeJS.ProcessEnv;
    accounts?: ProviderAccounts;
    /** The process's sample reports, if its caller steers them too; else made from `client`. */
    reports?: TaskReports;
  } = {},
): ActivityDeps {
  const reports = options.reports ?? (options.client && taskReports(options.client));
  const env = options.env ?? process.env;
  // One model object per name and arguments; calls go through their account's controller.
  const models = new Map<string, Model>();
  const stores = new Map<string, LogStore>();
  let docker: Dockerode | undefined;
  return {
    // One load per snapshot, whatever log dir it is read from: the hash names the content. A run
    // started before snapshots (no hash) is read by path, as it was then.
    definition: memoize(
      (ref) =>
        ref.hash === undefined
          ? loadDefinition(ref.path)
          : loadSnapshot({ logDir: ref.logDir, hash: ref.hash, origin: ref.path }),
      (ref) => ref.hash ?? `path:${ref.path}`,
    ),
    model(name, args, user) {
      const key = `${name}\u0000${JSON.stringify(args)}\u0000${JSON.stringify(user ?? null)}`;
      let model = models.get(key);
      if (!model) {
        const raw = createModel(name, args, env, options.accounts?.hooks(name));
        model = options.accounts ? options.accounts.govern(name, raw, user) : raw;
        models.set(key, model);
      }
      return model;
    },
    logStore(dir) {
      let store = stores.get(dir);
      if (!store) {
        store = openLogStore(dir);
        stores.set(dir, store);
      }
      return store;
    },
    client: options.client,
    ...(reports ? { reports } : {}),
    // Created on first use: a worker whose tasks have no sandbox never touches Docker, nor loads
    // dockerode (with its ssh2, about 20 MiB resident).
    get docker() {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      docker ??= new (require('dockerode') as typeof import('dockerode'))();
      return docker;
    },
    env,
    now: Date.now,
    worker: thisWorker(),
  };
}

/**
 * The SDK's logger without two warnings that say nothing wrong:
 * - "Workflow failed": a failed eval set is reported by `steward launch` and `steward status` in
 *   the user's words (and kept in Temporal's history); the SDK's version is a dump of nested
 *   failures on the launcher's stderr;
 * - a sample workflow's task that lasted over 5 s (core's TMPRL1104): an inline sample runs
 *   inside its workflow task, so every sample longer than that (a slow answer, a wait for a
 *   connection slot) would log one. Other workflows' long tasks are still logged.
 */
export class WorkerLogger extends DefaultLogger {
  override log(level: LogLevel, message: string, meta?: LogMetadata): void {
    if (message === 'Workflow failed') return;
    if (message.startsWith(LONG_TASK_CODE) && meta?.workflowType === SAMPLE_WORKFLOW) return;
    super.log(level, message, meta);
  }
}

/** How core's warning of a workflow task over 5 s begins. */
const LONG_TASK_CODE = '[TMPRL1104]';
const SAMPLE_WORKFLOW = 'sampleWorkflow';

let runtimeInstalled = false;

/**
 * Installs the SDK runtime once per process with warnings and errors only: a worker's INFO lines
 * would drown the progress display, and its logs go to files anyway.
 */
export function installRuntime(options: { shutdownSignals?: NodeJS.Signals[] } = {}): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  Runtime.install({
    logger: new WorkerLogger('WARN'),
    // Native (core) logs go through the same logger, to stderr: stdout is `--json`'s alone.
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} },
    },
    shutdownSignals: options.shutdownSignals ?? [],
  });
}

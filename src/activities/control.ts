/**
 * Control activities, run by the supervisor on the `steward` queue: plan an eval set, observe its
 * running tasks for the tend loop, write the eval set's summary.
 */
import { once } from 'node:events';
import * as path from 'node:path';
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { innermostCause } from '../client/status';
import { resolveSettings } from '../config/settings';
import { identityRefusals } from '../definition/identity';
import { sampleCount } from '../definition/samples';
import { slotCount } from '../core/slots';
import { snapshotDefinition } from '../loader/snapshot';
import { bounded } from '../temporal/bounded';
import { writeEvalSetManifest } from '../logs/inspect/write';
import type { EvalSetDefinition } from '../definition/types';
import { ErrorType, formatIssue } from '../errors';
import { checkLogDir } from '../logs/store';
import { defaultMaxSandboxes } from '../sandbox/budget';
import {
  taskStatusQuery,
  type EvalSetInput,
  type EvalSetPlan,
  type EvalSetResult,
  type RampHistoryEntry,
  type TaskEnd,
  type TaskResult,
  type TaskStatus,
} from '../workflows/types';
import type { TendRecord } from '../workflows/tend-record';
import { whileBeating } from './beat';
import { thisHostCapacity, type ActivityDeps } from './deps';
import { failOnDefinition, failOnLogWrite } from './errors';

/** A query to a task whose worker is down would otherwise wait for one. */
const OBSERVE_TIMEOUT_MS = 3_000;

export function createControlActivities(deps: ActivityDeps) {
  return {
    async planEvalSet(input: EvalSetInput): Promise<EvalSetPlan> {
      // Heartbeating: a launch killed while it plans has the plan retried in seconds.
      return whileBeating(async () => {
        const { definition, hash, logDir } = await pinDefinition(input, deps);
        // The launch resolved flags, environment and `_steward.yaml` in its own process; this one's
        // (any process of any fleet) must not count.
        const { settings: resolved, errors } = resolveSettings({
          input: input.settings,
          definition: definition.settings,
        });
        if (errors.length > 0) {
          throw ApplicationFailure.nonRetryable(
            errors.map(formatIssue).join('\n'),
            ErrorType.config,
          );
        }
        await ensureWritable(logDir);
        // Before any task starts: a task whose records in the log dir are another task's.
        const refusals = await identityRefusals(deps.logStore(logDir), definition);
        if (refusals.length > 0) {
          throw ApplicationFailure.nonRetryable(refusals.join('\n'), ErrorType.config);
        }
        // Inspect's `eval-set.json`: `inspect view` shows the tasks' `.eval` logs as one set.
        await writeEvalSetManifest(
          logDir,
          definition.name,
          definition.tasks.map((task) => ({
            name: task.name,
            identity: definition.identities[task.name],
          })),
        ).catch((err: unknown) => {
          throw failOnLogWrite(err);
        });
        const sandboxed = definition.tasks.some((task) => task.sandbox !== undefined);
        // The sandbox budget: the definition's, else what the provider reports (Docker: 2 × CPUs).
        const settings = {
          ...resolved,
          maxSandboxes:
            resolved.maxSandboxes ??
            (sandboxed && deps.docker ? await defaultMaxSandboxes(deps.docker) : null),
        };
        return {
          name: definition.name,
          definition: definition.source,
          definitionHash: hash,
          logDir,
          settings,
          tasks: definition.tasks.map((task) => ({
            name: task.name,
            samples: sampleCount(task),
            model: task.model,
            sandboxed: task.sandbox !== undefined,
          })),
          // Sized on the host that plans: the launch's, whose supervisor starts the first slots.
          slots: slotCount(
            definition.tasks.length,
            settings.maxWorkers,
            (deps.hostCapacity ?? thisHostCapacity)(),
          ),
        };
      });
    },

    /**
     * Reads each task's counters, or how it ended: a task tells its eval set when it ends, but
     * that signal can miss (it reached a run that had already continued-as-new, or the task was
     * terminated), and this is how the eval set finds out anyway. A running task that does not
     * answer in time is left out.
     */
    async observeTasks(args: {
      workflowIds: string[];
      /** How long a running task may take to close (it said it is ending); default: no wait. */
      waitForEndMs?: number;
    }): Promise<ObservedTask[]> {
      const client = deps.client;
      if (!client) throw new Error('observeTasks needs a Temporal client');
      const wait = args.waitForEndMs ?? 0;
      // It answers with the tasks that answered in time; their calls end by then too
      // (`bounded`: the client's retries included).
      const ms = OBSERVE_TIMEOUT_MS + wait;
      // A worker that stops cancels it, and its calls: it must not hold the worker's shutdown
      // (the supervisor's, so a launch's exit) for the rest of its wait.
      const cancelled = Context.current().cancellationSignal;
      const over = AbortSignal.any([cancelled, AbortSignal.timeout(ms)]);
      const seen: (ObservedTask | undefined)[] = args.workflowIds.map(() => undefined);
      const answered = Promise.allSettled(
        args.workflowIds.map((id, i) =>
          bounded(
            client.connection,
            ms,
            () => observeTask(client, id, wait, cancelled),
            cancelled,
          ).then((task) => (seen[i] = task)),
        ),
      );
      await Promise.race([answered, over.aborted ? undefined : once(over, 'abort')]);
      cancelled.throwIfAborted();
      return seen.filter((task) => task !== undefined);
    },

    /**
     * Appends ramp history entries to `<log_dir>/ramp-history.jsonl` and the tend's record, if
     * any, to `<log_dir>/tend.jsonl`, one JSON object a line: one activity per tend.
     */
    async appendRampHistory(args: {
      logDir: string;
      entries: RampHistoryEntry[];
      tend?: TendRecord;
    }): Promise<void> {
      const store = deps.logStore(args.logDir);
      try {
        if (args.entries.length > 0) await store.appendRampHistory(args.entries);
        if (args.tend) await store.appendTendRecord(args.tend);
      } catch (err) {
        throw failOnLogWrite(err);
      }
    },

    async writeEvalSetSummary(result: EvalSetResult): Promise<void> {
      await whileBeating(() =>
        deps
          .logStore(result.log_dir)
          .writeEvalSetSummary({
            ...result,
            version: 1,
            completed_at: new Date(deps.now()).toISOString(),
          })
          .catch((err: unknown) => {
            throw failOnLogWrite(err);
          }),
      );
    },
  };
}

export type ControlActivities = ReturnType<typeof createControlActivities>;

/** A task as the tend sees it: running, with its counters, or ended. */
export type ObservedTask = { kind: 'running'; status: TaskStatus } | ({ kind: 'ended' } & TaskEnd);

async function observeTask(
  client: Client,
  workflowId: string,
  waitForEndMs: number,
  cancelled: AbortSignal,
): Promise<ObservedTask | undefined> {
  const handle = client.workflow.getHandle(workflowId);
  if (waitForEndMs > 0) {
    // Ended or not, what describe says next is the answer.
    await client.connection
      .withDeadline(Date.now() + waitForEndMs, () => handle.result())
      .catch(() => undefined);
    if (cancelled.aborted) return undefined;
  }
  const { status } = await handle.describe();
  const task = workflowId.slice(workflowId.lastIndexOf('/') + 1);
  switch (status.name) {
    case 'RUNNING':
      return { kind: 'running', status: await handle.query(taskStatusQuery) };
    case 'CONTINUED_AS_NEW':
      // Between two runs of the task: the next describe sees the new one.
      return undefined;
    case 'COMPLETED':
      return { kind: 'ended', task, result: (await handle.result()) as TaskResult };
    default: {
      // Failed, terminated, cancelled or timed out: its own words, as the eval set's failure.
      const cause: { message: string; type?: string } = await handle.result().then(
        () => ({ message: status.name }),
        (err: unknown) => innermostCause(err),
      );
      const message = `task ${task} ${status.name.toLowerCase().replace('_', ' ')}: ${cause.message}`;
      return { kind: 'ended', task, failure: { message, type: cause.type } };
    }
  }
}

/** {@link checkLogDir}, as a failure the workflow reports as a log-write error, not retried. */
async function ensureWritable(dir: string): Promise<void> {
  await checkLogDir(dir).catch((err: unknown) => {
    throw ApplicationFailure.nonRetryable((err as Error).message, ErrorType.logWrite);
  });
}

/**
 * The definition the eval set runs: the snapshot `steward launch` took (by its hash), or, for an
 * input without a hash (a stock `temporal workflow start`), a snapshot taken now from the
 * definition's absolute path. A relative path is refused: it would be read from the directory of
 * whichever process runs this activity.
 */
async function pinDefinition(
  input: EvalSetInput,
  deps: ActivityDeps,
): Promise<{ definition: EvalSetDefinition; hash: string; logDir: string }> {
  const refuse = (message: string): never => {
    throw ApplicationFailure.nonRetryable(message, ErrorType.config);
  };
  if (typeof input.definition !== 'string' || !path.isAbsolute(input.definition)) {
    refuse(
      `definition must be an absolute path (${JSON.stringify(input.definition)}): ` +
        'a relative one would be read from the directory of whichever worker plans the eval set',
    );
  }
  if (input.log_dir !== undefined && !path.isAbsolute(input.log_dir)) {
    refuse(
      `log_dir must be an absolute path (${JSON.stringify(input.log_dir)}): ` +
        'a relative one would be made in the directory of whichever worker plans the eval set',
    );
  }
  try {
    if (input.definition_hash !== undefined) {
      if (input.log_dir === undefined) {
        return refuse('definition_hash needs log_dir: the snapshot is in the log dir');
      }
      const ref = { logDir: input.log_dir, hash: input.definition_hash, path: input.definition };
      return { definition: await deps.definition(ref), hash: ref.hash, logDir: ref.logDir };
    }
    const pinned = await snapshotDefinition(
      input.definition,
      (definition) =>
        input.log_dir ??
        definition.log_dir ??
        path.join(path.dirname(definition.source), 'logs', definition.name),
    );
    return { definition: pinned.definition, hash: pinned.hash, logDir: pinned.logDir };
  } catch (err) {
    throw failOnDefinition(err);
  }
}

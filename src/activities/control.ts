/**
 * Control activities, run by the supervisor on the `steward` queue: plan an eval set, observe its
 * running tasks for the tend loop, write the eval set's summary.
 */
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { loadStewardYaml } from '../config/load';
import { resolveSettings } from '../config/settings';
import { identityRefusals } from '../definition/identity';
import { sampleCount } from '../definition/samples';
import { snapshotDefinition } from '../definition/snapshot';
import type { EvalSetDefinition } from '../definition/types';
import { ErrorType, formatIssue } from '../errors';
import { checkLogDir } from '../logs/store';
import { defaultMaxSandboxes } from '../sandbox/budget';
import {
  taskQueueFor,
  taskStatusQuery,
  type EvalSetInput,
  type EvalSetPlan,
  type EvalSetResult,
  type RampHistoryEntry,
  type TaskStatus,
} from '../workflows/types';
import { withTimeout } from '../util/timeout';
import type { ActivityDeps } from './deps';
import { failOnDefinition, failOnLogWrite } from './errors';

/** A query to a task whose worker is down would otherwise wait for one. */
const OBSERVE_TIMEOUT_MS = 3_000;

export function createControlActivities(deps: ActivityDeps) {
  return {
    async planEvalSet(input: EvalSetInput): Promise<EvalSetPlan> {
      const { definition, hash, logDir } = await pinDefinition(input, deps);
      const { settings: resolved, errors } = resolveSettings({
        flags: input.settings ?? {},
        env: deps.env,
        stewardYaml: await loadStewardYaml(process.cwd()),
        definition: definition.settings,
      });
      if (errors.length > 0) {
        throw ApplicationFailure.nonRetryable(errors.map(formatIssue).join('\n'), ErrorType.config);
      }
      await ensureWritable(logDir);
      // Before any task starts: a task whose records in the log dir are another task's.
      const refusals = await identityRefusals(deps.logStore(logDir), definition);
      if (refusals.length > 0) {
        throw ApplicationFailure.nonRetryable(refusals.join('\n'), ErrorType.config);
      }
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
          taskQueue: taskQueueFor(definition.name, task.name),
          samples: sampleCount(task),
          model: task.model,
          sandboxed: task.sandbox !== undefined,
        })),
      };
    },

    /** Reads each running task's counters; a task that does not answer in time is left out. */
    async observeTasks({ workflowIds }: { workflowIds: string[] }): Promise<TaskStatus[]> {
      const client = deps.client;
      if (!client) throw new Error('observeTasks needs a Temporal client');
      const answers = await Promise.allSettled(
        workflowIds.map((id) =>
          withTimeout(client.workflow.getHandle(id).query(taskStatusQuery), OBSERVE_TIMEOUT_MS),
        ),
      );
      return answers.flatMap((a) => (a.status === 'fulfilled' ? [a.value] : []));
    },

    /** Appends ramp history entries to `<log_dir>/ramp-history.jsonl`, one JSON object a line. */
    async appendRampHistory(args: { logDir: string; entries: RampHistoryEntry[] }): Promise<void> {
      await deps
        .logStore(args.logDir)
        .appendRampHistory(args.entries)
        .catch((err: unknown) => {
          throw failOnLogWrite(err);
        });
    },

    async writeEvalSetSummary(result: EvalSetResult): Promise<void> {
      await deps
        .logStore(result.log_dir)
        .writeEvalSetSummary({
          ...result,
          version: 1,
          completed_at: new Date(deps.now()).toISOString(),
        })
        .catch((err: unknown) => {
          throw failOnLogWrite(err);
        });
    },
  };
}

export type ControlActivities = ReturnType<typeof createControlActivities>;

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

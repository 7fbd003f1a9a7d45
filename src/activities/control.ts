/**
 * Control activities, run by the supervisor on the `steward` queue: plan an eval set, observe its
 * running tasks for the tend loop, write the eval set's summary.
 */
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { resolveSettings } from '../config/settings';
import { sampleCount } from '../definition/samples';
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
import { failOnLogWrite, toFailure } from './errors';

/** A query to a task whose worker is down would otherwise wait for one. */
const OBSERVE_TIMEOUT_MS = 3_000;

export function createControlActivities(deps: ActivityDeps) {
  return {
    async planEvalSet(input: EvalSetInput): Promise<EvalSetPlan> {
      const definition = await deps
        .loadDefinition(path.resolve(input.definition))
        .catch((err: unknown) => {
          throw toFailure(err, ErrorType.config);
        });
      // The launch resolved flags, environment and `_steward.yaml` in its own process; this one's
      // (any process of any fleet) must not count.
      const { settings: resolved, errors } = resolveSettings({
        input: input.settings,
        definition: definition.settings,
      });
      if (errors.length > 0) {
        throw ApplicationFailure.nonRetryable(errors.map(formatIssue).join('\n'), ErrorType.config);
      }
      const logDir = path.resolve(
        input.log_dir ?? definition.log_dir ?? path.join('logs', definition.name),
      );
      await ensureWritable(logDir);
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
      await deps.logStore(args.logDir).appendRampHistory(args.entries);
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

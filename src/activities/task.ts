/** Per-task activities: what is left to run, and the task's summary at the end. */
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { rangesExcept } from '../core/ranges';
import { pinTaskIdentity } from '../definition/identity';
import { indicesWithKeys, sampleCount } from '../definition/samples';
import { ErrorType } from '../errors';
import { taskMetrics } from '../eval/metrics';
import { writeTaskInspectLog } from '../logs/inspect/write';
import { sampleKey } from '../logs/store';
import {
  sampleWorkflowId,
  type IndexRanges,
  type SampleDone,
  type SampleInput,
  type TaskMetrics,
} from '../workflows/types';
import { evalSetAttributes } from '../workflows/search-attributes';
import { findTask, type ActivityDeps } from './deps';
import { whileBeating } from './beat';
import { failOnDefinition, failOnLogWrite } from './errors';

export interface TaskRef {
  evalSet: string;
  task: string;
  definition: string;
  /** The definition's snapshot in the log dir; absent only in runs started before snapshots. */
  definitionHash?: string;
  logDir: string;
}

/** How long a finished task waits for its sample workflows to close before giving up on it. */
const CLOSE_WAIT_MS = 120_000;
const CLOSE_POLL_MS = 500;

/**
 * The most sandbox-free samples one workflow runs. Most of the server's work per one-call sample
 * is per workflow (its start, its workflow tasks): 16 to a workflow cut the server's CPU per
 * sample from 30.8 ms to 3.5 ms, and 64 bought no more (docs/orchestration.md). A group shares
 * its workflow's tasks, so one member's crash or cancellation reaches all 16 at once.
 */
export const SAMPLES_PER_WORKFLOW = 16;

/** Calls at a time, so a burst of admissions does not open hundreds of RPCs at once. */
const RPC_CONCURRENCY = 50;

/** `fn` over `items`, {@link RPC_CONCURRENCY} at a time; the results in their order. */
async function inBatches<T, R>(items: T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (const batch of chunks(items, RPC_CONCURRENCY))
    results.push(...(await Promise.all(batch.map(fn))));
  return results;
}

/** `items` in runs of at most `size`, in order. */
function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Swallows "no such workflow running" (undefined); anything else is thrown again. */
function unlessNotFound(err: unknown): undefined {
  if ((err as Error).name === 'WorkflowNotFoundError') return undefined;
  throw err;
}

export function createTaskActivities(deps: ActivityDeps) {
  const loadFor = (ref: TaskRef) =>
    deps
      .definition({ logDir: ref.logDir, hash: ref.definitionHash, path: ref.definition })
      .catch((err: unknown) => {
        throw failOnDefinition(err);
      });

  return {
    /**
     * Starts sample workflows. They are not children of the task: the task continues-as-new
     * without draining, and each sample reports back by the task's workflow id. A sample this
     * chain already started (the admission ran again after a lost workflow task) is not started
     * twice: its report has arrived or will.
     *
     * Sandbox-free samples run inline, up to {@link SAMPLES_PER_WORKFLOW} to a workflow named
     * after its first sample: returned are those groups of more than one, for the task to cancel
     * and look up by. The admission decides the groups and records them with its result, so one
     * that runs again forms the same ones and its starts are refused as repeats.
     */
    async startSamples(args: {
      taskQueue: string;
      samples: SampleInput[];
      /** The eval set's `StewardEvalSet` search attribute, when its task carries it. */
      evalSetAttribute?: string;
    }): Promise<{ groups: number[][] }> {
      const client = deps.client;
      if (!client) throw new Error('startSamples needs a Temporal client');
      const first = args.samples[0];
      if (!first) return { groups: [] };
      // A sample without a sandbox runs inline, in its workflow's own task (see sampleWorkflow):
      // about a third of the server's work per sample, and a group shares what is left.
      // Samples with a sandbox keep an activity, and a workflow, each.
      const inline = findTask(await loadFor(first), first.task).sandbox === undefined;
      const groups = inline
        ? chunks(
            args.samples.map((s) => ({ ...s, inline })),
            SAMPLES_PER_WORKFLOW,
          )
        : args.samples.map((s) => [s]);
      await inBatches(groups, (group) =>
        client.workflow
          .start('sampleWorkflow', {
            workflowId: sampleWorkflowId(group[0]!.parentId, group[0]!.chain, group[0]!.index),
            taskQueue: args.taskQueue,
            args: [group.length === 1 ? group[0]! : { group }],
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
            ...(args.evalSetAttribute === undefined
              ? {}
              : { typedSearchAttributes: evalSetAttributes(args.evalSetAttribute) }),
          })
          .catch((err: unknown) => {
            if ((err as Error).name !== 'WorkflowExecutionAlreadyStartedError') throw err;
          }),
      );
      return {
        groups: groups.filter((g) => g.length > 1).map((g) => g.map((s) => s.index)),
      };
    },

    /** The samples still to run: everything not already recorded in the log directory. */
    planTask(ref: TaskRef): Promise<{ total: number; pending: IndexRanges; resumed: number }> {
      return whileBeating(async () => {
        const definition = await loadFor(ref);
        const task = findTask(definition, ref.task);
        const store = deps.logStore(ref.logDir);
        // The task's first run records what its results depend on; a later run must match it.
        const refusal = await pinTaskIdentity(
          store,
          definition,
          task.name,
          new Date(deps.now()),
        ).catch((err: unknown) => {
          throw failOnLogWrite(err);
        });
        if (refusal !== undefined) throw ApplicationFailure.nonRetryable(refusal, ErrorType.config);
        const total = sampleCount(task);
        const done = await store.completedKeys(task.name);
        const completed = indicesWithKeys(task, done, sampleKey);
        // The Inspect log appears as the task starts (status `started`, with what a relaunch
        // found already recorded), so a viewer shows the task before its first sample ends.
        await writeTaskInspectLog(store, task.name, {
          ended: false,
          sampleIds: task.dataset.map((s) => s.id),
          scoring: task.scoring,
        }).catch((err: unknown) => {
          throw failOnLogWrite(err);
        });
        return { total, pending: rangesExcept(total, completed), resumed: completed.length };
      });
    },

    /**
     * Cancels the given sample workflows, each given by the index it is named after (those not
     * running are passed over), and waits, bounded, until they have closed: each closes once its
     * activities have removed their sandboxes. Returns how many were still running at the deadline.
     */
    cancelSamples(args: { parentId: string; chain: string; indices: number[] }): Promise<number> {
      return whileBeating(async () => {
        const client = deps.client;
        if (!client) throw new Error('cancelSamples needs a Temporal client');
        let open = args.indices.map((index) =>
          client.workflow.getHandle(sampleWorkflowId(args.parentId, args.chain, index)),
        );
        await inBatches(open, (handle) => handle.cancel().catch(unlessNotFound));
        const deadline = deps.now() + CLOSE_WAIT_MS;
        while (open.length > 0 && deps.now() <= deadline) {
          const running = await inBatches(open, (handle) =>
            handle.describe().then(
              (d) => d.status.name === 'RUNNING',
              (err: unknown) => unlessNotFound(err) ?? false,
            ),
          );
          open = open.filter((_, i) => running[i]);
          if (open.length > 0) await sleep(CLOSE_POLL_MS);
        }
        return open.length;
      });
    },

    /**
     * The reports of the samples whose workflows have closed (their results), given the indices
     * the workflows are named after: a group's workflow gives every member's.
     */
    async findClosedSamples(args: {
      parentId: string;
      chain: string;
      indices: number[];
    }): Promise<SampleDone[]> {
      const client = deps.client;
      if (!client) throw new Error('findClosedSamples needs a Temporal client');
      const results = await inBatches(args.indices, async (index) => {
        const handle = client.workflow.getHandle(
          sampleWorkflowId(args.parentId, args.chain, index),
        );
        const { status } = await handle.describe();
        if (status.name !== 'COMPLETED') return [];
        const result = (await handle.result()) as SampleDone | SampleDone[];
        return Array.isArray(result) ? result : [result];
      });
      return results.flat();
    },

    /**
     * Waits until every sample workflow of the task has closed. A sample reports its result from
     * its activity, one workflow task before its workflow completes; the task's worker process must
     * outlive that last step, or the sample would stay open with no worker to close it.
     */
    async awaitSamplesClosed(_args: { taskQueue: string }): Promise<number> {
      const client = deps.client;
      if (!client) throw new Error('awaitSamplesClosed needs a Temporal client');
      // This task's samples, by their ids (sampleWorkflowId): a worker slot's queue serves other
      // tasks' samples too, which this task's end must not wait for.
      const taskId = Context.current().info.workflowExecution?.workflowId;
      if (!taskId) throw new Error('awaitSamplesClosed is run by a task workflow');
      const query =
        `WorkflowType = 'sampleWorkflow' AND WorkflowId STARTS_WITH '${taskId}/' AND ` +
        `ExecutionStatus = 'Running'`;
      const deadline = deps.now() + CLOSE_WAIT_MS;
      for (;;) {
        const { count } = await client.workflow.count(query);
        if (count === 0 || deps.now() > deadline) return count;
        Context.current().heartbeat();
        await sleep(CLOSE_POLL_MS);
      }
    },

    /**
     * Rewrites the running task's Inspect log (`.eval`) from the samples recorded so far. Its
     * workflow calls it, one at a time, so no two processes write the file at once.
     */
    writeInspectLog(ref: TaskRef): Promise<void> {
      return whileBeating(async () => {
        const task = findTask(await loadFor(ref), ref.task);
        await writeTaskInspectLog(deps.logStore(ref.logDir), task.name, {
          ended: false,
          sampleIds: task.dataset.map((s) => s.id),
          scoring: task.scoring,
        }).catch((err: unknown) => {
          throw failOnLogWrite(err);
        });
      });
    },

    /**
     * Computes the task's metrics from its recorded samples and writes its summary, then the
     * task's final Inspect log (`.eval`), built from the same records and summary.
     */
    finishTask(
      ref: TaskRef & { resumed: number; cancelled?: boolean },
    ): Promise<TaskMetrics | null> {
      return whileBeating(async () => {
        const definition = await loadFor(ref);
        const task = findTask(definition, ref.task);
        const store = deps.logStore(ref.logDir);
        const records = await store.readSamples(task.name);
        const total = sampleCount(task);
        const metrics =
          records.length === 0
            ? null
            : taskMetrics(
                records.map((r) => ({
                  sampleId: r.sample_id,
                  epoch: r.epoch,
                  value: r.score.value,
                })),
                task.scoring,
              );
        const completed = records.length;
        const written = store.writeTaskSummary({
          version: 1,
          eval_set: definition.name,
          name: task.name,
          samples: total,
          completed,
          errored: total - completed,
          resumed: ref.resumed,
          metrics,
          scorer: task.scorerName,
          model: task.model,
          completed_at: new Date(deps.now()).toISOString(),
          ...(ref.cancelled ? { cancelled: true } : {}),
        });
        await written.catch((err: unknown) => {
          throw failOnLogWrite(err);
        });
        await writeTaskInspectLog(store, task.name, {
          ended: true,
          sampleIds: task.dataset.map((s) => s.id),
          scoring: task.scoring,
        }).catch((err: unknown) => {
          throw failOnLogWrite(err);
        });
        return metrics;
      });
    },
  };
}

export type TaskActivities = ReturnType<typeof createTaskActivities>;

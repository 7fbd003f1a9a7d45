/**
 * Work whose owner is gone ends. `temporal workflow terminate` runs no workflow code: a
 * terminated eval set cannot cancel its tasks, nor a terminated task its samples (they are not
 * its children, so the server does not either). Each worker process therefore looks, every
 * {@link OWNER_WATCH_MS}, at the tasks and samples running on its task queues, and cancels those
 * whose owner has closed without them: a task whose eval set was terminated or cancelled, a
 * sample whose task's run chain has closed or been replaced (a relaunch). Cancelled, they clean
 * up as any cancellation does (src/workflows/cancel.ts): sandboxes removed, logs `cancelled`.
 *
 * {@link ownerless} decides from what was observed (pure); {@link watchOwners} observes and acts.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client, WorkflowExecutionStatusName } from '@temporalio/client';
import { evalSetIdOfTask } from '../workflows/types';

/** How often a worker looks: work whose owner is gone ends within about this long. */
export const OWNER_WATCH_MS = 20_000;

/** A workflow as its owner's describe shows it: closed or running, and which run chain. */
export interface OwnerState {
  status: WorkflowExecutionStatusName;
  /** The first run of its current chain (the `chain` its samples carry). */
  firstRunId: string;
}

export interface Observed {
  /** Running `evalTask` workflows on these queues, by workflow id. */
  tasks: string[];
  /** Running `sampleWorkflow` workflows on these queues, by workflow id. */
  samples: string[];
  /** The owners' states, by workflow id; an owner that does not exist is absent. */
  owners: Map<string, OwnerState>;
}

/** A sample's workflow id is `<task workflow id>/<chain>/<index>` (workflows/types.ts). */
export function sampleOwner(sampleId: string): { taskId: string; chain: string } {
  const parts = sampleId.split('/');
  return { taskId: parts.slice(0, -2).join('/'), chain: parts[parts.length - 2] ?? '' };
}

/** A task's workflow id is `<eval set workflow id>/<task>`. */
export const taskOwner = evalSetIdOfTask;

/** Ids of the workflows an observation needs described: the owners of what runs. */
export function ownersToDescribe(tasks: string[], samples: string[]): string[] {
  return [...new Set([...tasks.map(taskOwner), ...samples.map((id) => sampleOwner(id).taskId)])];
}

/**
 * What to cancel. A task, when its eval set was terminated or cancelled (a failed eval set's
 * tasks keep running, as before: its relaunch takes them over). A sample, when its task's latest
 * run is closed (terminated, failed, cancelled) or belongs to another chain than the sample's.
 * An owner not described (gone from Temporal, or the describe failed) decides nothing.
 */
export function ownerless(observed: Observed): { tasks: string[]; samples: string[] } {
  const tasks = observed.tasks.filter((id) => {
    const status = observed.owners.get(taskOwner(id))?.status;
    return status === 'TERMINATED' || status === 'CANCELLED';
  });
  const samples = observed.samples.filter((id) => {
    const { taskId, chain } = sampleOwner(id);
    const owner = observed.owners.get(taskId);
    if (!owner) return false;
    if (owner.status === 'RUNNING' || owner.status === 'CONTINUED_AS_NEW') {
      // A server that does not say which chain runs decides nothing about chains.
      return owner.firstRunId !== '' && owner.firstRunId !== chain;
    }
    // A task completes only after its samples: one still running after that is a stray too.
    return true;
  });
  return { tasks, samples };
}

/** Observes and cancels, every {@link OWNER_WATCH_MS}, until `signal` aborts. */
export async function watchOwners(options: {
  client: Client;
  taskQueues: string[];
  signal: AbortSignal;
  intervalMs?: number;
}): Promise<void> {
  const { client, taskQueues, signal } = options;
  const where = `TaskQueue IN (${taskQueues.map((q) => `'${q}'`).join(', ')})`;
  while (!signal.aborted) {
    await sleep(options.intervalMs ?? OWNER_WATCH_MS, undefined, { signal }).catch(() => undefined);
    if (signal.aborted) return;
    await endOwnerless(client, where).catch((err: unknown) =>
      console.error(
        `steward: could not look for work whose owner is gone: ${(err as Error).message}`,
      ),
    );
  }
}

/**
 * Cancels the running tasks and samples matching the visibility clause `where` whose owner is
 * gone ({@link ownerless}). Returns the ids it cancelled.
 */
export async function endOwnerless(client: Client, where: string): Promise<string[]> {
  const running = async (type: string): Promise<string[]> => {
    const ids: string[] = [];
    const query = `WorkflowType = '${type}' AND ${where} AND ExecutionStatus = 'Running'`;
    for await (const execution of client.workflow.list({ query })) ids.push(execution.workflowId);
    return ids;
  };
  const [tasks, samples] = await Promise.all([running('evalTask'), running('sampleWorkflow')]);
  if (tasks.length === 0 && samples.length === 0) return [];
  const owners = new Map<string, OwnerState>();
  await Promise.all(
    ownersToDescribe(tasks, samples).map(async (id) => {
      const described = await client.workflow
        .getHandle(id)
        .describe()
        .catch(() => undefined);
      if (!described) return;
      const firstRunId = described.raw.workflowExecutionInfo?.firstRunId ?? '';
      owners.set(id, { status: described.status.name, firstRunId });
    }),
  );
  const gone = ownerless({ tasks, samples, owners });
  const ids = [...gone.tasks, ...gone.samples];
  for (const id of ids) {
    console.error(`steward: cancelling ${id}: its owner is gone`);
    await client.workflow
      .getHandle(id)
      .cancel()
      .catch(() => undefined);
  }
  return ids;
}

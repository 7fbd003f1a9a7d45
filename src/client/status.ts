/**
 * Reads an eval set's status as users see it. The `evalSet` workflow's own `status` query is as
 * fresh as its last tend; for running tasks we ask each task directly, so progress is live.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import {
  statusQuery,
  taskCounters,
  taskStatusQuery,
  taskWorkflowId,
  type EvalSetResult,
  type EvalSetStatus,
} from '../workflows/types';
import { withTimeout } from '../util/timeout';

/** How long to wait for a worker to answer a query before showing the last known numbers. */
const QUERY_TIMEOUT_MS = 5_000;
const NO_ANSWER = 'no answer from the workers (are `steward launch` or `steward workers` running?)';

export type LiveStatus =
  | { kind: 'running'; status: EvalSetStatus }
  | { kind: 'completed'; result: EvalSetResult }
  | { kind: 'failed'; message: string; status: string }
  | { kind: 'missing' };

export async function readStatus(client: Client, workflowId: string): Promise<LiveStatus> {
  const handle = client.workflow.getHandle(workflowId);
  let description;
  try {
    description = await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError || (err as Error).name === 'WorkflowNotFoundError')
      return { kind: 'missing' };
    throw err;
  }
  const state = description.status.name;
  if (state === 'COMPLETED')
    return { kind: 'completed', result: (await handle.result()) as EvalSetResult };
  if (state !== 'RUNNING')
    return { kind: 'failed', status: state, message: await failureMessage(client, workflowId) };

  const status = await withTimeout(handle.query(statusQuery), QUERY_TIMEOUT_MS, NO_ANSWER);
  await Promise.all(
    status.tasks
      .filter((t) => t.state === 'running')
      .map(async (task) => {
        const live = await withTimeout(
          client.workflow.getHandle(taskWorkflowId(workflowId, task.name)).query(taskStatusQuery),
          QUERY_TIMEOUT_MS,
          NO_ANSWER,
        ).catch(() => undefined);
        if (live) Object.assign(task, taskCounters(live));
      }),
  );
  return { kind: 'running', status };
}

/** The message of the innermost cause of a failed workflow, for the user. */
export async function failureMessage(client: Client, workflowId: string): Promise<string> {
  try {
    await client.workflow.getHandle(workflowId).result();
    return 'completed';
  } catch (err) {
    return innermostCause(err).message;
  }
}

/** The innermost cause of a workflow failure: its message and, for application failures, type. */
export function innermostCause(err: unknown): { message: string; type?: string } {
  let current: unknown = err;
  while (current instanceof Error && current.cause) current = current.cause;
  const type = (current as { type?: unknown } | undefined)?.type;
  return {
    message: current instanceof Error ? current.message : String(current),
    type: typeof type === 'string' ? type : undefined,
  };
}

/** Workflow ids of the running `evalSet` workflows. */
export async function runningEvalSets(client: Client): Promise<string[]> {
  const ids: string[] = [];
  for await (const wf of client.workflow.list({
    query: "WorkflowType = 'evalSet' AND ExecutionStatus = 'Running'",
  })) {
    ids.push(wf.workflowId);
  }
  return ids;
}

/**
 * Tells a stuck eval set from a slow one. A workflow whose workflow task fails again and again (a
 * nondeterminism error, a bug that throws in workflow code) cannot make progress, however long
 * its launch waits: Temporal retries the task for ever and nothing else shows it. The launch
 * watches its eval set's workflows with this, says so within a few seconds of the second failure,
 * tells the webhooks, and ends after a bound the user may lift.
 */
import type { Client } from '@temporalio/client';
import { taskWorkflowId } from '../workflows/types';
import { lastWorkflowTaskFailure } from './status';

/** A workflow task that failed this many attempts in a row is stuck, not unlucky. */
export const STUCK_WORKFLOW_TASK_ATTEMPTS = 3;

/** One workflow of the eval set that cannot make progress. */
export interface StuckWorkflow {
  workflowId: string;
  /** The failing workflow task's attempt (2 is the first retry). */
  attempt: number;
  /** The last failure's message, from the workflow's history. */
  error: string;
}

/**
 * The eval set's workflows (itself and its running tasks) whose workflow task keeps failing: one
 * `describe` each, and the history's tail of those that fail. Sample workflows are left out: a
 * task whose samples do not report shows as slow, and `steward status` names their activities.
 */
export async function stuckWorkflows(
  client: Client,
  evalSetWorkflowId: string,
): Promise<StuckWorkflow[]> {
  const ids = [evalSetWorkflowId];
  const query =
    `WorkflowType = 'evalTask' AND ExecutionStatus = 'Running' AND ` +
    `WorkflowId STARTS_WITH '${taskWorkflowId(evalSetWorkflowId, '')}'`;
  for await (const task of client.workflow.list({ query })) ids.push(task.workflowId);
  const found = await Promise.all(
    ids.map(async (workflowId): Promise<StuckWorkflow | undefined> => {
      const description = await client.workflow
        .getHandle(workflowId)
        .describe()
        .catch(() => undefined);
      const attempt = description?.raw.pendingWorkflowTask?.attempt ?? 0;
      if (description?.status.name !== 'RUNNING' || attempt < STUCK_WORKFLOW_TASK_ATTEMPTS) {
        return undefined;
      }
      return { workflowId, attempt, error: await lastWorkflowTaskFailure(client, workflowId) };
    }),
  );
  return found.filter((stuck) => stuck !== undefined);
}

/** What a stuck workflow means for its run, and what to do about it, as the launch says it. */
export function stuckMessage(evalSetWorkflowId: string, stuck: StuckWorkflow): string {
  const nondeterminism = /TMPRL1100|[Nn]ondeterminism/.test(stuck.error);
  const cause = nondeterminism
    ? 'its history does not replay with the workflow code serving it'
    : 'its workflow code fails';
  const remedy = nondeterminism
    ? 'If workflow code changed while it ran, serve it with the build that started it (README, ' +
      '"Changing workflow code"). Otherwise its history cannot go on: '
    : 'Fix the cause, then serve it again, or: ';
  return (
    `${stuck.workflowId} cannot make progress: its workflow task failed ${stuck.attempt - 1} ` +
    `times in a row (${cause}): ${stuck.error}\n` +
    `  ${remedy}\`temporal workflow terminate --workflow-id ${evalSetWorkflowId}\`, then launch ` +
    'again: completed samples are kept and not run again.'
  );
}

export interface StuckWatchOptions {
  /** How often to look. */
  everyMs: number;
  /** How long a workflow may stay stuck before the watch gives up on the run; null: never. */
  boundMs: number | null;
  /** Told once for each newly stuck workflow (and again if its error changes). */
  onStuck: (stuck: StuckWorkflow) => void;
  now?: () => number;
}

/**
 * Watches the eval set until `stop()`; `gaveUp` settles with the workflow that stayed stuck past
 * the bound. A look that fails (Temporal briefly away) is skipped.
 */
export function watchStuck(
  client: Client,
  evalSetWorkflowId: string,
  options: StuckWatchOptions,
): { gaveUp: Promise<StuckWorkflow>; stop: () => void } {
  const now = options.now ?? Date.now;
  /** Each stuck workflow's first sighting, and the error last told. */
  const seen = new Map<string, { since: number; error: string }>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const gaveUp = new Promise<StuckWorkflow>((resolve) => {
    const look = async (): Promise<void> => {
      const stuck = await stuckWorkflows(client, evalSetWorkflowId).catch(() => undefined);
      if (stopped) return;
      if (stuck) {
        const current = new Set(stuck.map((s) => s.workflowId));
        for (const id of seen.keys()) if (!current.has(id)) seen.delete(id);
        for (const s of stuck) {
          const before = seen.get(s.workflowId);
          if (before?.error !== s.error) options.onStuck(s);
          const since = before?.since ?? now();
          seen.set(s.workflowId, { since, error: s.error });
          if (options.boundMs !== null && now() - since >= options.boundMs) return resolve(s);
        }
      }
      timer = setTimeout(() => void look(), options.everyMs);
      timer.unref();
    };
    timer = setTimeout(() => void look(), options.everyMs);
    timer.unref();
  });
  return {
    gaveUp,
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/**
 * Which running eval set a command steers: the one named with `--eval-set`, else the only one
 * running. Asks the Temporal server only (describe, list), never the workers, so it works while
 * every worker is down: signals sent then wait in the workflow's history.
 */
import { runningEvalSets } from '../client/status';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { StewardError } from '../errors';
import { evalSetWorkflowId } from '../workflows/types';

/** A running `evalSet` workflow. */
export interface EvalSetTarget {
  name: string;
  workflowId: string;
}

const ID_PREFIX = evalSetWorkflowId('');

/**
 * The eval set to act on.
 *
 * @throws StewardError when the named eval set is missing or not running, or when no name is
 *   given and not exactly one eval set is running
 */
export async function findEvalSet(client: Client, name?: string): Promise<EvalSetTarget> {
  if (name !== undefined) return namedEvalSet(client, name);
  const running = await runningEvalSets(client);
  if (running.length === 1) return { name: evalSetName(running[0]), workflowId: running[0] };
  if (running.length === 0) throw new StewardError('no eval set is running');
  const names = running.map(evalSetName).join(', ');
  throw new StewardError(
    `${running.length} eval sets are running (${names}); pick one with --eval-set NAME`,
  );
}

/** `steward-hello` -> `hello`; an id Steward did not choose (stock CLI) is its own name. */
export function evalSetName(workflowId: string): string {
  return workflowId.startsWith(ID_PREFIX) ? workflowId.slice(ID_PREFIX.length) : workflowId;
}

async function namedEvalSet(client: Client, name: string): Promise<EvalSetTarget> {
  if (name.trim() === '') throw new StewardError('--eval-set needs a name');
  const workflowId = evalSetWorkflowId(name);
  let status: string;
  try {
    status = (await client.workflow.getHandle(workflowId).describe()).status.name;
  } catch (err) {
    // Match on the name too: `instanceof` fails across module copies (see src/errors.ts).
    if (err instanceof WorkflowNotFoundError || (err as Error).name === 'WorkflowNotFoundError')
      throw new StewardError(`no eval set named "${name}" (workflow ${workflowId} not found)`);
    throw err;
  }
  if (status !== 'RUNNING')
    throw new StewardError(`eval set "${name}" is not running (${status.toLowerCase()})`);
  return { name, workflowId };
}

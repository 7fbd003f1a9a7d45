/**
 * Replays recorded histories against the built workflow bundle: a nondeterminism error means a
 * worker that lost its cache (a restart, an eviction, a retried workflow task) could not carry
 * the run on.
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_PATH } from '../../src/workers/bundle';

/**
 * Replays every run of each workflow id (continued-as-new runs included) and returns how many
 * runs replayed; throws with the first run that did not. `bundlePath` (default: this build's)
 * replays them against other workflow code, e.g. a changed copy (see README, "Changing workflow
 * code").
 */
export async function replayAllRuns(
  client: Client,
  workflowIds: string[],
  { bundlePath = WORKFLOW_BUNDLE_PATH }: { bundlePath?: string } = {},
): Promise<number> {
  let replayed = 0;
  for (const workflowId of workflowIds) {
    for await (const run of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
      const history = await client.workflow.getHandle(workflowId, run.runId).fetchHistory();
      try {
        await Worker.runReplayHistory(
          { workflowBundle: { codePath: bundlePath } },
          history,
          // The replayed workflow sees this as its own id, and derives its children's from it.
          workflowId,
        );
      } catch (err) {
        // Keep the history: it is the reproduction.
        const file = path.join(os.tmpdir(), `replay-${run.runId}.json`);
        await fs.writeFile(file, JSON.stringify(historyToJSON(history)));
        throw new Error(
          `${workflowId} (run ${run.runId}) does not replay; history in ${file}: ${(err as Error).message}`,
          { cause: err },
        );
      }
      replayed++;
    }
  }
  return replayed;
}

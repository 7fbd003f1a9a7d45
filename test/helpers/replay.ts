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
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_PATH } from '../../src/workers/bundle';
import { evalSetWorkflowId } from '../../src/workflows/types';

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

/** The workflow types Steward's bundle registers: tests' own fixture workflows are not replayed. */
export const STEWARD_WORKFLOW_TYPES = ['evalSet', 'evalTask', 'sampleWorkflow'];

/**
 * The workflows that decide on signals, queries and timers as well as on their activities'
 * results: where a history can record what a replay does not make again. A test run's closing
 * replay takes these, every run of them; sample workflows (no handlers: each decides on its own
 * activities' results) are 2,000 of a test run's 2,300 runs and cost its replay minutes, so the
 * saved-history test and the soak (scripts/soak) replay those.
 */
export const DECIDING_WORKFLOW_TYPES = ['evalSet', 'evalTask'];

/** Where tests list eval sets whose workflows replay with another bundle (set by global setup). */
export const REPLAY_BUNDLES_ENV = 'REPLAY_BUNDLES_FOR_TESTS';

/**
 * Says that eval set `name`'s workflows ran other workflow code (a changed build, see
 * helpers/variant.ts), so the run's closing replay uses `bundlePath` for them.
 */
export async function replaysWithBundle(name: string, bundlePath: string): Promise<void> {
  const file = process.env[REPLAY_BUNDLES_ENV];
  if (!file) return;
  await fs.appendFile(file, `${JSON.stringify({ prefix: evalSetWorkflowId(name), bundlePath })}\n`);
}

export interface ReplaySummary {
  runs: number;
  workflows: number;
  ms: number;
}

/**
 * Replays every run of every Steward workflow on the server `client` talks to, each against the
 * bundle it ran (this build's, unless {@link replaysWithBundle} said otherwise), through one
 * replay worker per bundle. Throws naming the runs that do not replay, their histories kept in the
 * temp dir. What the test run's global teardown and every test's own dev server end with, so no
 * history a test makes, above all by killing processes, goes unreplayed.
 */
export async function replayEveryRun(
  client: Client,
  { types = STEWARD_WORKFLOW_TYPES }: { types?: string[] } = {},
): Promise<ReplaySummary> {
  const started = Date.now();
  const others = await readBundleList();
  const runs: { workflowId: string; runId: string }[] = [];
  const query = `WorkflowType IN (${types.map((t) => `'${t}'`).join(', ')})`;
  for await (const wf of client.workflow.list({ query })) {
    runs.push({ workflowId: wf.workflowId, runId: wf.runId });
  }
  const bundleOf = (workflowId: string): string =>
    others.find(({ prefix }) => workflowId === prefix || workflowId.startsWith(`${prefix}/`))
      ?.bundlePath ?? WORKFLOW_BUNDLE_PATH;
  const byBundle = new Map<string, typeof runs>();
  for (const run of runs) {
    const bundle = bundleOf(run.workflowId);
    byBundle.set(bundle, [...(byBundle.get(bundle) ?? []), run]);
  }
  const failures: string[] = [];
  const replayShare = async (bundlePath: string, share: typeof runs): Promise<void> => {
    const results = Worker.runReplayHistories(
      { workflowBundle: { codePath: bundlePath } },
      fetchAhead(client, share, 4),
    );
    for await (const result of results) {
      if (!result.error) continue;
      const file = path.join(os.tmpdir(), `replay-${result.runId}.json`);
      const history = await client.workflow
        .getHandle(result.workflowId, result.runId)
        .fetchHistory();
      await fs.writeFile(file, JSON.stringify(historyToJSON(history)));
      failures.push(
        `${result.workflowId} (run ${result.runId}, history in ${file}): ${result.error.message}`,
      );
    }
  };
  // One replay worker per core: a replay is CPU-bound, and one worker replays one run at a time.
  const width = Math.max(1, os.availableParallelism());
  for (const [bundlePath, group] of byBundle) {
    await Promise.all(
      Array.from({ length: width }, (_, k) =>
        replayShare(
          bundlePath,
          group.filter((_, i) => i % width === k),
        ),
      ),
    );
  }
  if (failures.length > 0) {
    throw new Error(
      `${failures.length} of ${runs.length} runs do not replay:\n${failures.slice(0, 20).join('\n')}`,
    );
  }
  return {
    runs: runs.length,
    workflows: new Set(runs.map((r) => r.workflowId)).size,
    ms: Date.now() - started,
  };
}

/** The histories of `runs`, in order, with up to `width` fetched ahead. */
async function* fetchAhead(
  client: Client,
  runs: { workflowId: string; runId: string }[],
  width: number,
): AsyncGenerator<{ workflowId: string; history: temporal.api.history.v1.IHistory }> {
  const fetch = (run: { workflowId: string; runId: string }) =>
    client.workflow
      .getHandle(run.workflowId, run.runId)
      .fetchHistory()
      .then((history) => ({ workflowId: run.workflowId, history }));
  const ahead = runs.slice(0, width).map(fetch);
  for (let i = 0; i < runs.length; i++) {
    const next = await ahead[i]!;
    if (i + width < runs.length) ahead.push(fetch(runs[i + width]!));
    yield next;
  }
}

async function readBundleList(): Promise<{ prefix: string; bundlePath: string }[]> {
  const file = process.env[REPLAY_BUNDLES_ENV];
  if (!file) return [];
  const text = await fs.readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as { prefix: string; bundlePath: string });
}

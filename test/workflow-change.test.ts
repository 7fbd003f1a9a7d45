/**
 * Changing workflow code under a running eval set (README, "Changing workflow code"): a run is
 * started with this build, its fleet is killed, the workflow code is changed and rebuilt, and the
 * run is launched again with the new build. A change guarded by `patched()` carries the run on to
 * the end, every sample recorded once and no workflow task failed; the same change unguarded does
 * not replay the history the old code wrote, and the replay check says so.
 */
import * as path from 'node:path';
import { promises as fs } from 'node:fs';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { evalSetWorkflowId, taskWorkflowId } from '../src/workflows/types';
import { runCommand, runCli, tempDir, uniqueName, writeEvalSet } from './helpers/cli';
import { detachedFleet, killTree } from './helpers/detached';
import { fetchHistory, mapLimited, runsOfEvalSet, samplesRunBy } from './helpers/histories';
import { waitFor } from './helpers/processes';
import { replayAllRuns, replaysWithBundle } from './helpers/replay';
import { readSampleRecords } from './helpers/results';
import { insertBefore, workflowVariant, type Variant } from './helpers/variant';

const EventType = temporal.api.enums.v1.EventType;
const UNHANDLED_COMMAND =
  temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND;
// Long enough after the relaunch (about 26 s) that the new code tends before the run ends, even
// when the task's worker comes back well before the eval set's.
const SAMPLES = 120;
const PATCH = 'test-extra-timer-before-observing';

/** One more command at every tend: a 1 ms timer before the tasks are observed. */
const guarded = insertBefore(
  'const observed = await observeTasks(',
  `if (__patched('${PATCH}')) await __sleep(1);`,
  "import { patched as __patched, sleep as __sleep } from '@temporalio/workflow';",
);
const unguarded = insertBefore(
  'const observed = await observeTasks(',
  'await __sleep(1);',
  "import { sleep as __sleep } from '@temporalio/workflow';",
);

describe('a relaunch with changed workflow code under a running eval set', () => {
  let client: Client;
  let env: NodeJS.ProcessEnv;
  let name: string;
  let file: string;
  let logDir: string;
  let v1History: temporal.api.history.v1.IHistory;
  let v2: Variant;
  let broken: Variant;

  beforeAll(async () => {
    client = new Client({
      connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS }),
      namespace: process.env.TEMPORAL_NAMESPACE,
    });
    // Built while nothing runs yet: bundling is the slow part on a loaded machine.
    [v2, broken] = await Promise.all([
      workflowVariant('eval-set.ts', guarded),
      workflowVariant('eval-set.ts', unguarded),
    ]);
    const dir = await tempDir();
    env = { ...process.env, STEWARD_HOME: path.join(dir, '.steward') };
    name = uniqueName('change');
    // Its runs end under the guarded change: the closing replay uses that code.
    await replaysWithBundle(name, v2.bundlePath);
    file = await writeEvalSet(dir, name, [{ name: 'long', samples: SAMPLES, latencyMs: 1000 }], {
      max_samples: 4,
      tend_interval: 1,
    });
    logDir = path.join(dir, 'logs');
    const launched = await runCli(['launch', file, '--detach', '--log-dir', logDir], { env });
    expect(launched.code).toBe(0);

    // The old code runs a while: several tends, some samples recorded.
    const id = evalSetWorkflowId(name);
    await waitFor('tends and records under the old code', async () => {
      const records = await fs.readdir(path.join(logDir, 'long', 'samples')).catch(() => []);
      const history = await client.workflow.getHandle(id).fetchHistory();
      const tends = (history.events ?? []).filter(
        (e) =>
          e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
          e.activityTaskScheduledEventAttributes?.activityType?.name === 'observeTasks',
      ).length;
      return records.length >= 15 && tends >= 3 ? true : undefined;
    });
    await killTree(await waitFor('the detached fleet', () => detachedFleet(name)));
    v1History = await client.workflow.getHandle(id).fetchHistory();
  });

  afterAll(async () => {
    await client?.connection.close();
  });

  test('the replay check refuses the unguarded change against the old history', async () => {
    await expect(
      Worker.runReplayHistory(
        { workflowBundle: { codePath: broken.bundlePath } },
        v1History,
        evalSetWorkflowId(name),
      ),
    ).rejects.toMatchObject({ name: 'DeterminismViolationError' });
  });

  test('the guarded change replays the old history', async () => {
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: v2.bundlePath } },
      v1History,
      evalSetWorkflowId(name),
    );
  });

  test('launched again with the new build, the run completes, every sample recorded once', async () => {
    const again = await runCommand(
      process.execPath,
      [v2.bin, 'launch', file, '--json', '--log-dir', logDir],
      { env },
    );
    expect(again.stderr).toContain('already running: re-attaching');
    expect(again.stderr).not.toContain('internal error');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).tasks[0]).toMatchObject({
      samples: SAMPLES,
      completed: SAMPLES,
      errored: 0,
    });
    const records = await readSampleRecords(logDir, 'long');
    expect(records).toHaveLength(SAMPLES);
    expect(new Set(records.map((r) => r.sample_id)).size).toBe(SAMPLES);

    // The new code ran: its patch marker and the new timer are in the eval set's history.
    const history = await client.workflow.getHandle(evalSetWorkflowId(name)).fetchHistory();
    const events = history.events ?? [];
    const patchOf = (e: temporal.api.history.v1.IHistoryEvent): string =>
      Object.values(e.markerRecordedEventAttributes?.details ?? {})
        .flatMap((p) => p.payloads ?? [])
        .map((p) => Buffer.from(p.data ?? []).toString())
        .join(' ');
    const markers = events.filter((e) => e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED);
    expect(markers.map(patchOf).join('\n')).toContain(PATCH);
    const marker = events.findIndex((e) => markers.includes(e) && patchOf(e).includes(PATCH));
    expect(marker).toBeGreaterThan(v1History.events!.length - 1);
    expect(
      events.slice(marker).some((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED),
    ).toBe(true);

    // No workflow task of any workflow of the eval set failed (a nondeterminism error would).
    const runs = await runsOfEvalSet(client, name);
    // The eval set, its task, and the workflows that ran every sample (sandbox-free samples
    // admitted together share one).
    const sampleRuns = runs.filter((run) => run.type === 'sampleWorkflow');
    expect(new Set((await samplesRunBy(client, sampleRuns)).flat()).size).toBe(SAMPLES);
    expect(runs.length).toBeGreaterThanOrEqual(sampleRuns.length + 2);
    const failedTasks = (
      await mapLimited(runs, 8, async (run) =>
        ((await fetchHistory(client, run)).events ?? [])
          .filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)
          // The server refuses a completion when a signal arrived during the task; the worker
          // just runs the task again with the signal. That is not a failure of our code.
          .filter((e) => e.workflowTaskFailedEventAttributes?.cause !== UNHANDLED_COMMAND)
          .map(
            (e) => `${run.workflowId}: ${e.workflowTaskFailedEventAttributes?.failure?.message}`,
          ),
      )
    ).flat();
    expect(failedTasks).toEqual([]);

    // And the whole mixed history replays with the new code, as a fresh worker would.
    const ids = [evalSetWorkflowId(name), taskWorkflowId(evalSetWorkflowId(name), 'long')];
    expect(await replayAllRuns(client, ids, { bundlePath: v2.bundlePath })).toBeGreaterThanOrEqual(
      2,
    );
  });
});

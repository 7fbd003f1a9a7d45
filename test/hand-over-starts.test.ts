/**
 * An eval set that continues-as-new while a task's end is being confirmed hands the next task's
 * start to the new run, never to a run that is closing. Its `taskDone` handler resolves the old
 * task's end and, in the same workflow task, both the scheduler (a slot is free) and the hand-over
 * (every handler has finished) unblock. A start the closing run made then was carried as
 * started, but the server does not start a child for a run that has closed: the new run waited
 * for a task that never existed, and the launch never ended.
 *
 * The race, made certain: the control worker is this file's, and its confirmation of a task's
 * end waits long enough for a tend to decide a hand-over meanwhile (the dev server suggests one
 * after a few dozen events).
 */
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../src/activities';
import { processDeps, installRuntime } from '../src/workers/runtime';
import { workflowBundlePath, PACKAGE_ROOT } from '../src/workers/bundle';
import { Fleet } from '../src/workers/fleet';
import { expectedSlots } from '../src/workers/supervisor';
import { SETTINGS_DEFAULTS } from '../src/config/settings';
import { loadDefinitionFiles, writeSnapshot } from '../src/loader/snapshot';
import {
  evalSetWorkflowId,
  STEWARD_TASK_QUEUE,
  type EvalSetInput,
  type EvalSetResult,
} from '../src/workflows/types';
import { startOwnDevServer, type OwnDevServer } from './helpers/server';
import { runsOfEvalSet } from './helpers/histories';
import { within } from './helpers/processes';
import { replayAllRuns } from './helpers/replay';
import { readSampleRecords } from './helpers/results';
import { tempDir, uniqueName, writeEvalSet } from './helpers/cli';

/** How long the control worker takes to confirm a task's end: several tends. */
const CONFIRM_DELAY_MS = 1_500;
const TEND_SECONDS = 0.3;

let server: OwnDevServer;

beforeAll(async () => {
  server = await startOwnDevServer(await tempDir('steward-hand-over-'), {
    'limit.historyCount.suggestContinueAsNew': 40,
  });
});

afterAll(async () => {
  await server?.close();
});

test('a task whose start comes with a hand-over starts in the new run', async () => {
  installRuntime();
  const { client, address, namespace } = server;
  const name = uniqueName('hand-over');
  const dir = await tempDir();
  // One task at a time, so each task's end starts the next.
  const tasks = ['one', 'two', 'three', 'four'].map((t) => ({
    name: t,
    samples: 3,
    latencyMs: 50,
  }));
  const file = await writeEvalSet(dir, name, tasks, {
    max_tasks: 1,
    tend_interval: TEND_SECONDS,
  });
  const logDir = path.join(dir, 'logs');
  const { used } = await loadDefinitionFiles(file);
  const input: EvalSetInput = {
    definition: file,
    definition_hash: await writeSnapshot(used, logDir),
    log_dir: logDir,
  };
  const id = evalSetWorkflowId(name);

  const real = createActivities(processDeps({ client }));
  let confirmations = 0;
  const confirming = new Set<string>();
  const activities = {
    ...real,
    async observeTasks(args: Parameters<typeof real.observeTasks>[0]) {
      // A task's end is confirmed with a wait; meanwhile the tends' looks at that task go
      // unanswered (a slow describe), so the end comes from the confirmation.
      if (args.waitForEndMs === undefined) {
        const seen = await real.observeTasks(args);
        return seen.filter((t) => !confirming.has(t.kind === 'running' ? t.status.name : t.task));
      }
      confirmations++;
      const names = args.workflowIds.map((w) => w.slice(w.lastIndexOf('/') + 1));
      for (const n of names) confirming.add(n);
      try {
        await sleep(CONFIRM_DELAY_MS);
        return await real.observeTasks(args);
      } finally {
        for (const n of names) confirming.delete(n);
      }
    },
  };
  const connection = await NativeConnection.connect({ address });
  const control = await Worker.create({
    connection,
    namespace,
    taskQueue: STEWARD_TASK_QUEUE,
    workflowBundle: { codePath: await workflowBundlePath() },
    activities,
  });
  const fleet = new Fleet({
    script: path.join(PACKAGE_ROOT, 'dist', 'workers', 'task-worker.js'),
    temporal: { address, namespace, tls: false },
    bundlePath: await workflowBundlePath(),
    logDir: path.join(dir, 'workers'),
  });
  fleet.reconcile(
    expectedSlots(id, name, tasks, {
      maxTasks: null,
      maxWorkers: null,
      connections: { type: 'adaptive', ...SETTINGS_DEFAULTS.connections },
      tendIntervalMs: TEND_SECONDS * 1000,
    }),
  );
  try {
    const result = await control.runUntil(async () => {
      const handle = await client.workflow.start('evalSet', {
        workflowId: id,
        taskQueue: STEWARD_TASK_QUEUE,
        args: [input],
      });
      return (await within('the eval set to end', handle.result(), 120_000)) as EvalSetResult;
    });
    expect(result).toMatchObject({
      status: 'success',
      tasks: tasks.map((t) => ({ name: t.name, completed: t.samples })),
    });
  } finally {
    await fleet.stop();
    await connection.close();
  }
  // Each end but the last was confirmed while the eval set handed over at least once: a run for
  // each task at least (how many more depends on how many tends a busy machine fits in).
  expect(confirmations).toBeGreaterThanOrEqual(tasks.length - 1);
  expect((await runsOfEvalSet(client, name, ['evalSet'])).length).toBeGreaterThanOrEqual(
    tasks.length,
  );
  for (const task of tasks) {
    expect(await readSampleRecords(logDir, task.name)).toHaveLength(task.samples);
  }
  await replayAllRuns(client, [id]);
});

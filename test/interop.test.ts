/**
 * Interop and the README: an eval set started with the stock `temporal` CLI runs on
 * `steward workers`, and the quick-start command works on the embedded defaults.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { findTemporalBinary } from '../src/temporal/binary';
import { stopDevServer } from '../src/temporal/devserver';
import type { EvalSetResult } from '../src/workflows/types';
import { readSampleRecords } from './helpers/results';
import { REPO_ROOT, runCommand, tempDir, uniqueName, writeEvalSet } from './helpers/cli';
import { spawnFleet, type TestFleet } from './helpers/fleet';

describe('temporal workflow start, served by steward workers', () => {
  let workers: TestFleet;
  let client: Client;

  beforeAll(async () => {
    workers = spawnFleet();
    client = new Client({
      connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS! }),
      namespace: process.env.TEMPORAL_NAMESPACE,
    });
  });

  afterAll(async () => {
    await workers.stop();
    await client.connection.close();
  });

  test('runs an eval set whose input is plain JSON', async () => {
    const dir = await tempDir();
    const name = uniqueName('interop');
    const file = await writeEvalSet(dir, name, [
      { name: 'one', samples: 30 },
      { name: 'two', samples: 20 },
    ]);
    const logDir = path.join(dir, 'logs');
    const temporal = await findTemporalBinary();
    // The command the README shows, with this test's server and files.
    const start = await runCommand(temporal, [
      'workflow',
      'start',
      '--address',
      process.env.TEMPORAL_ADDRESS!,
      '--namespace',
      process.env.TEMPORAL_NAMESPACE ?? 'default',
      '--type',
      'evalSet',
      '--task-queue',
      'steward',
      '--workflow-id',
      `steward-${name}`,
      '--input',
      JSON.stringify({ definition: file, log_dir: logDir }),
    ]);
    expect(start.stderr).toBe('');
    expect(start.code).toBe(0);

    const result = (await client.workflow.getHandle(`steward-${name}`).result()) as EvalSetResult;
    expect(result.status).toBe('success');
    expect(result.tasks.map((t) => [t.name, t.completed])).toEqual([
      ['one', 30],
      ['two', 20],
    ]);
    expect(await readSampleRecords(logDir, 'one')).toHaveLength(30);
  });
});

describe('the README quick start', () => {
  const stewardDir = path.join(REPO_ROOT, '.steward');
  let started = false;

  afterAll(async () => {
    // Stop the embedded server only if this test started it (a developer's may be running).
    if (started) await stopDevServer(stewardDir);
  });

  test('`npx steward launch examples/hello.yaml` runs on the embedded defaults', async () => {
    const env = { ...process.env };
    delete env.TEMPORAL_ADDRESS;
    delete env.TEMPORAL_NAMESPACE;
    await fs.rm(path.join(REPO_ROOT, 'logs', 'hello'), { recursive: true, force: true });
    const wasRunning = await fs
      .access(path.join(stewardDir, 'temporal.pid'))
      .then(() => true)
      .catch(() => false);
    const run = await runCommand('npx', ['steward', 'launch', 'examples/hello.yaml'], {
      env,
      cwd: REPO_ROOT,
    });
    started = !wasRunning;
    expect(run.stderr).not.toContain('internal error');
    expect(run.code).toBe(0);
    // The table README shows: samples, completed, errored, limited, stuck, retries, reducer,
    // accuracy, stderr.
    expect(run.stdout).toMatch(/arithmetic\s+40\s+40\s+0\s+0\s+0\s+0\s+mean\s+1\.000\s+0\.000/);
    expect(run.stdout).toMatch(/capitals\s+40\s+40\s+0\s+0\s+0\s+0\s+mean\s+1\.000\s+0\.000/);
  });
});

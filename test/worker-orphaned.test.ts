/**
 * A worker process whose supervisor is killed while the worker is still starting stops anyway.
 * Its start (connecting, loading the workflow bundle) takes seconds; a supervisor SIGKILLed in
 * that time hands the worker to init before it looks at its parent, so a worker that took
 * whatever parent it found for its supervisor served its queues for good (the soak's orphans:
 * launches killed alone within seconds of starting).
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { WORKFLOW_BUNDLE_PATH } from '../src/workers/bundle';
import { WORKER_CONFIG_ENV, type WorkerProcessConfig } from '../src/workers/task-worker';
import { REPO_ROOT, uniqueName } from './helpers/cli';
import { runningOf, waitFor } from './helpers/processes';

const TASK_WORKER = path.join(REPO_ROOT, 'dist', 'workers', 'task-worker.js');

/**
 * A supervisor stand-in: starts one worker process in its own group, as the fleet does, prints
 * the worker's pid, and exits at once, before the worker has connected.
 */
const SHORT_LIVED_SUPERVISOR = `
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const config = JSON.parse(process.env.CONFIG);
config.supervisorPid = process.pid;
const log = fs.openSync(process.env.WORKER_LOG, 'a');
const child = spawn(process.execPath, [process.env.TASK_WORKER], {
  env: { ...process.env, ${JSON.stringify(WORKER_CONFIG_ENV)}: JSON.stringify(config) },
  stdio: ['ignore', log, log],
  detached: true,
});
process.stdout.write(String(child.pid));
child.unref();
process.exit(0);
`;

test('a worker whose supervisor dies while it starts stops within seconds', async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'steward-worker-orphaned-'));
  const workerLog = path.join(dir, 'worker.log');
  const config: Omit<WorkerProcessConfig, 'supervisorPid'> = {
    address: process.env.TEMPORAL_ADDRESS!,
    namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
    tls: false,
    taskQueues: [uniqueName('orphaned-worker')],
    bundlePath: WORKFLOW_BUNDLE_PATH,
  };
  const supervisor = spawn(process.execPath, ['-e', SHORT_LIVED_SUPERVISOR], {
    env: {
      ...process.env,
      CONFIG: JSON.stringify(config),
      TASK_WORKER,
      WORKER_LOG: workerLog,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  supervisor.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await new Promise((resolve) => supervisor.once('exit', resolve));
  const worker = Number(out);
  expect(worker).toBeGreaterThan(0);
  try {
    // Its supervisor already gone, the worker starts; it must notice and end on its own.
    await waitFor(
      'the orphaned worker to exit',
      async () => ((await runningOf([worker])).length === 0 ? true : undefined),
      { timeoutMs: 20_000, intervalMs: 250 },
    );
    expect(await fs.readFile(workerLog, 'utf8')).toContain(
      'the supervisor that started this worker is gone',
    );
  } finally {
    try {
      process.kill(worker, 'SIGKILL');
    } catch {
      // Already gone, as it should be.
    }
    await fs.rm(dir, { recursive: true, force: true });
  }
});

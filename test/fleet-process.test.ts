/**
 * How the fleet starts a worker process: with the worker's V8 flags (src/workers/fleet.ts,
 * `WORKER_V8_FLAGS`), which hold its heaps near their live size. A stand-in script takes the
 * worker's place and writes what it was started with to its log.
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Fleet, WORKER_V8_FLAGS } from '../src/workers/fleet';
import { WORKER_CONFIG_ENV, WORKER_READY } from '../src/workers/task-worker';

const STAND_IN = `
process.on('SIGTERM', () => process.exit(0));
process.stdout.write(JSON.stringify({ execArgv: process.execArgv }) + '\\n');
setInterval(() => undefined, 1000);
`;

test('a worker process runs with the worker V8 flags', async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'steward-fleet-process-'));
  const script = path.join(dir, 'stand-in.js');
  await fs.writeFile(script, STAND_IN);
  const logDir = path.join(dir, 'logs');
  const fleet = new Fleet({
    script,
    temporal: { address: 'localhost:0', namespace: 'default', tls: false },
    bundlePath: path.join(dir, 'unused-bundle.js'),
    logDir,
  });
  try {
    fleet.reconcile([{ id: 'worker-1', taskQueues: ['q'] }]);
    const log = path.join(logDir, 'worker-1.log');
    let line = '';
    for (let waited = 0; line === '' && waited < 10_000; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      line = (await fs.readFile(log, 'utf8').catch(() => '')).split('\n')[0];
    }
    expect(WORKER_V8_FLAGS).toContain('--heap-growing-percent=50');
    expect(JSON.parse(line)).toEqual({ execArgv: WORKER_V8_FLAGS });
  } finally {
    await fleet.stop();
    await fs.rm(dir, { recursive: true, force: true });
  }
});

/**
 * A stand-in that says it is ready as a worker does, naming its queues on the same line, after
 * `delayMs`; it writes when it started to its log.
 */
const READY_STAND_IN = (delayMs: number) => `
process.on('SIGTERM', () => process.exit(0));
const config = JSON.parse(process.env.${WORKER_CONFIG_ENV});
process.stdout.write(Date.now() + '\\n');
setTimeout(() => process.stdout.write(${JSON.stringify(WORKER_READY)} + ' ' + config.taskQueues.join(', ') + '\\n'), ${delayMs});
setInterval(() => undefined, 1000);
`;

test('the next process starts as soon as one says it polls, whatever its queues are named', async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'steward-fleet-process-'));
  const script = path.join(dir, 'stand-in.js');
  await fs.writeFile(script, READY_STAND_IN(300));
  const logDir = path.join(dir, 'logs');
  const fleet = new Fleet({
    script,
    temporal: { address: 'localhost:0', namespace: 'default', tls: false },
    bundlePath: path.join(dir, 'unused-bundle.js'),
    logDir,
    startWidth: 1,
  });
  // A long eval set name: the ready line is longer than the ready words twice over.
  const queue = (k: number) => `steward-slot-a-rather-long-eval-set-name-2026-12-07-${k}`;
  const ids = [1, 2, 3].map((k) => `slot-${k}`);
  try {
    fleet.reconcile(ids.map((id, i) => ({ id, taskQueues: [queue(i + 1)] })));
    const startedAt: number[] = [];
    for (const id of ids) {
      let first = '';
      for (let waited = 0; first === '' && waited < 20_000; waited += 50) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        first = (await fs.readFile(path.join(logDir, `${id}.log`), 'utf8').catch(() => '')).split(
          '\n',
        )[0];
      }
      startedAt.push(Number(first));
    }
    // One at a time, each once the one before said it polls (300 ms and a node start), not at
    // the 15 s start timeout.
    expect(startedAt[1] - startedAt[0]).toBeGreaterThanOrEqual(300);
    expect(startedAt[1] - startedAt[0]).toBeLessThan(5_000);
    expect(startedAt[2] - startedAt[1]).toBeLessThan(5_000);
  } finally {
    await fleet.stop();
    await fs.rm(dir, { recursive: true, force: true });
  }
});

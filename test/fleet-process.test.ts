/**
 * How the fleet starts a worker process: with the worker's V8 flags (src/workers/fleet.ts,
 * `WORKER_V8_FLAGS`), which hold its heaps near their live size. A stand-in script takes the
 * worker's place and writes what it was started with to its log.
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Fleet, WORKER_V8_FLAGS } from '../src/workers/fleet';

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

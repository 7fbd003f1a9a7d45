/**
 * Load: T tasks × N zero-latency `mockllm` samples at `max_samples` M, run by `steward launch`
 * on a fresh Temporal dev server. Prints wall time, the peak resident memory summed over every
 * process of the run (launcher and supervisor, worker processes, Temporal server) and per kind,
 * against issue 14's goals (`MEMORY_GOALS_KB`), and the largest `evalSet` / `evalTask` history
 * against Temporal's limits.
 *
 *   npm run bench:load                    # 20 tasks × 1000 samples, max_samples 100
 *   npm run bench:load -- 5 2000 200
 *   npm run bench:load -- 20 1000 100 20  # max_workers 20: a process a task, as before slots
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { throwawayDevConfig } from '../src/temporal/config';
import { ensureDevServer, stopDevServer } from '../src/temporal/devserver';
import { devServerPid } from '../test/helpers/process-tree';
import { freePort } from '../test/setup/global-setup';
import { loadTable, runLoad } from './load/measure';

function count(arg: string | undefined, fallback: number, what: string): number {
  const value = Number(arg ?? fallback);
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`${what} must be a positive integer (${arg})`);
  return value;
}

async function main(): Promise<void> {
  const [tasks, samples, maxSamples, maxWorkers] = process.argv.slice(2);
  const shape = {
    tasks: count(tasks, 20, 'tasks'),
    samplesPerTask: count(samples, 1_000, 'samples'),
    maxSamples: count(maxSamples, 100, 'max_samples'),
    ...(maxWorkers === undefined ? {} : { maxWorkers: count(maxWorkers, 1, 'max_workers') }),
  };
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'steward-bench-load-'));
  const stewardDir = path.join(dir, 'temporal');
  const port = await freePort();
  const server = await ensureDevServer(throwawayDevConfig(stewardDir, port), { stewardDir });
  const client = new Client({
    connection: await openConnection({ address: server.address }),
    namespace: server.namespace,
  });
  try {
    const serverPid = devServerPid(port);
    if (serverPid === undefined) throw new Error(`no dev server process serves port ${port}`);
    const run = await runLoad({
      shape,
      dir,
      name: 'bench-load',
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: server.address,
        TEMPORAL_NAMESPACE: server.namespace,
      },
      client,
      serverPid,
      timeoutMs: 2 * 60 * 60_000,
    });
    console.log(loadTable(run));
    if (run.cli.code !== 0) console.error(run.cli.stderr);
    process.exitCode = run.cli.code === 0 ? 0 : 1;
  } finally {
    await client.connection.close();
    await stopDevServer(stewardDir);
    await fs.rm(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

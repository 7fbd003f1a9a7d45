/**
 * Load: 20 tasks × 200 zero-latency `mockllm` samples at `max_samples` 100, through the CLI on
 * a dev server of its own (the suite's shared server carries every earlier test's workflows,
 * and its SQLite file slows with them), complete on a 2-core machine with every sample recorded, and no
 * workflow history comes near Temporal's limits. Prints the run's figures: wall time, peak
 * memory over every process of the run, the largest history. (`npm run bench:load` measures the
 * same outside Jest.)
 */
import * as path from 'node:path';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { throwawayDevConfig } from '../src/temporal/config';
import { ensureDevServer, stopDevServer } from '../src/temporal/devserver';
import { freePort } from './setup/global-setup';
import { largestHistories, loadTable, runLoad, type LoadRun } from '../scripts/load/measure';
import { tempDir, uniqueName } from './helpers/cli';
import { HISTORY_LIMITS } from './helpers/histories';
import { devServerPid } from './helpers/process-tree';
import { slotCount } from '../src/core/slots';
import { thisHostCapacity } from '../src/activities/deps';

// 200 a task, not the bench's 1,000: this build runs at 10-20 samples/s here, and the full shape
// would take most of CI's time. Twenty task workers at once, each past its setpoint of 100 for
// most of the run, is what this test needs; `npm run bench:load` keeps the full shape.
const SHAPE = { tasks: 20, samplesPerTask: 200, maxSamples: 100 };
const SAMPLES = SHAPE.tasks * SHAPE.samplesPerTask;
/** A loaded 2-core machine: generous, since what this test asserts is completion, not speed. */
const DEADLINE_MS = 45 * 60_000;

jest.setTimeout(DEADLINE_MS + 5 * 60_000);

describe(`${SHAPE.tasks} tasks × ${SHAPE.samplesPerTask} samples at max_samples ${SHAPE.maxSamples}`, () => {
  let client: Client;
  let run: LoadRun;
  let stewardDir: string;

  beforeAll(async () => {
    const dir = await tempDir('steward-load-');
    stewardDir = path.join(dir, 'temporal');
    const port = await freePort();
    const { address, namespace } = await ensureDevServer(throwawayDevConfig(stewardDir, port), {
      stewardDir,
    });
    const serverPid = devServerPid(port);
    if (serverPid === undefined)
      throw new Error(`no Temporal dev server process serves ${address}`);
    client = new Client({ connection: await openConnection({ address }), namespace });
    run = await runLoad({
      shape: SHAPE,
      dir,
      name: uniqueName('load'),
      env: { ...process.env, TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace },
      client,
      serverPid,
      timeoutMs: DEADLINE_MS,
    });
    console.log(loadTable(run));
  });

  afterAll(async () => {
    await client?.connection.close();
    if (stewardDir) await stopDevServer(stewardDir);
  });

  test('completes, exits 0 and records every sample once', () => {
    expect(run.cli.stderr).not.toContain('internal error');
    expect(run.cli.code).toBe(0);
    const summary = JSON.parse(run.cli.stdout);
    expect(summary.status).toBe('success');
    expect(summary.tasks).toHaveLength(SHAPE.tasks);
    for (const task of summary.tasks) {
      expect(task).toMatchObject({
        samples: SHAPE.samplesPerTask,
        completed: SHAPE.samplesPerTask,
        errored: 0,
      });
    }
    expect(run.records).toBe(SAMPLES);
  });

  // One process per worker slot (as many as this host holds: src/core/slots.ts), each seen by the
  // /proc sampler: it once counted 16 of 20, when workers that had exited but were not reaped
  // yet, with an empty command line, were taken for other processes (test/process-tree.test.ts).
  test('sampled the memory of every worker process and the server', () => {
    const slots = slotCount(SHAPE.tasks, null, thisHostCapacity());
    expect(run.memory.processesByKind.worker).toBeGreaterThanOrEqual(slots);
    expect(run.memory.processesByKind.temporal).toBe(1);
    expect(run.memory.peakTotalKb).toBeGreaterThan(0);
    // Shared pages counted once: never more than the RSS sum.
    expect(run.memory.peakTotalPssKb).toBeGreaterThan(0);
    expect(run.memory.peakTotalPssKb).toBeLessThanOrEqual(run.memory.peakTotalKb);
  });

  test('the largest evalSet or evalTask history stays well inside Temporal’s limits', () => {
    expect(run.historyError).toBeUndefined();
    expect(run.histories.filter((h) => h.run.type === 'evalSet')).toHaveLength(1);
    expect(run.histories.filter((h) => h.run.type === 'evalTask').length).toBeGreaterThanOrEqual(
      SHAPE.tasks,
    );
    const { byEvents, byBytes } = largestHistories(run);
    // A margin, not just under: half the hard limits.
    expect(byEvents.events).toBeLessThan(HISTORY_LIMITS.maxEvents / 2);
    expect(byBytes.bytes).toBeLessThan(HISTORY_LIMITS.maxBytes / 2);
  });
});

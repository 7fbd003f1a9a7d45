/**
 * The walking skeleton against the real dev server, through the CLI as a user types it:
 * 3 tasks × 200 samples at max_samples 20.
 */
import * as path from 'node:path';
import { promises as fs } from 'node:fs';
import { peakConcurrency, readSampleRecords } from './helpers/results';
import { runCli, tempDir, uniqueName, writeEvalSet } from './helpers/cli';
import { slotCount } from '../src/core/slots';
import { thisHostCapacity } from '../src/activities/deps';

const TASKS = ['alpha', 'beta', 'gamma'];
const SAMPLES = 200;
const MAX_SAMPLES = 20;

describe('an eval set of 3 tasks × 200 samples at max_samples 20', () => {
  let logDir: string;
  let stdout: string;
  let stderr: string;
  let code: number | null;
  let file: string;
  let name: string;

  beforeAll(async () => {
    const dir = await tempDir();
    name = uniqueName('fleet');
    file = await writeEvalSet(
      dir,
      name,
      // Long enough that every task fills its 20 slots on this 2-core machine.
      TASKS.map((t) => ({ name: t, samples: SAMPLES, latencyMs: 1_000, jitterMs: 200 })),
      { max_samples: MAX_SAMPLES },
    );
    logDir = path.join(dir, 'logs');
    ({ code, stdout, stderr } = await runCli(['launch', file, '--json', '--log-dir', logDir]));
  });

  test('completes, exits 0 and prints the JSON summary', () => {
    expect(stderr).not.toContain('internal error');
    expect(code).toBe(0);
    const summary = JSON.parse(stdout);
    expect(summary.status).toBe('success');
    expect(summary.log_dir).toBe(logDir);
    expect(summary.tasks.map((t: { name: string }) => t.name)).toEqual(TASKS);
    for (const task of summary.tasks) {
      expect(task).toMatchObject({ samples: SAMPLES, completed: SAMPLES, errored: 0 });
      expect(task.metrics).toMatchObject({ accuracy: 1, stderr: 0 });
    }
  });

  test('records every sample exactly once, scored, with no errors left behind', async () => {
    for (const task of TASKS) {
      const records = await readSampleRecords(logDir, task);
      expect(records).toHaveLength(SAMPLES);
      expect(new Set(records.map((r) => r.sample_id)).size).toBe(SAMPLES);
      expect(records.every((r) => r.score.value === 'C' && r.attempt === 1)).toBe(true);
      expect(records.every((r) => r.usage.total_tokens > 0)).toBe(true);
      await expect(fs.readdir(path.join(logDir, task, 'errors'))).rejects.toMatchObject({
        code: 'ENOENT',
      });
    }
  });

  test('runs each task in one worker process, the tasks spread over the slots this host holds', async () => {
    const pidsByTask = await Promise.all(
      TASKS.map(
        async (task) => new Set((await readSampleRecords(logDir, task)).map((r) => r.worker.pid)),
      ),
    );
    for (const pids of pidsByTask) expect(pids.size).toBe(1);
    const all = pidsByTask.map((pids) => [...pids][0]);
    // Here (2 CPUs) 3 slots for 3 tasks: a process each.
    expect(new Set(all).size).toBe(slotCount(TASKS.length, null, thisHostCapacity()));
  });

  test('never has more than max_samples in flight per task, and uses them', async () => {
    for (const task of TASKS) {
      const peak = peakConcurrency(await readSampleRecords(logDir, task));
      expect(peak).toBeLessThanOrEqual(MAX_SAMPLES);
      expect(peak).toBeGreaterThanOrEqual(MAX_SAMPLES * 0.75);
    }
  });

  test('writes the task and eval set summaries', async () => {
    const summary = JSON.parse(await fs.readFile(path.join(logDir, 'evalset.json'), 'utf8'));
    expect(summary.status).toBe('success');
    for (const task of TASKS) {
      const taskSummary = JSON.parse(
        await fs.readFile(path.join(logDir, task, 'summary.json'), 'utf8'),
      );
      expect(taskSummary).toMatchObject({
        name: task,
        samples: SAMPLES,
        completed: SAMPLES,
        errored: 0,
      });
    }
  });

  test('`steward status --json` reads the finished eval set', async () => {
    const status = await runCli(['status', name, '--json']);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      workflow_id: `steward-${name}`,
      state: 'done',
      status: 'success',
      tasks: TASKS.map((t) => ({ name: t, samples: SAMPLES, completed: SAMPLES, errored: 0 })),
    });
  });

  test('launching it again re-runs nothing and says so', async () => {
    const again = await runCli(['launch', file, '--json', '--log-dir', logDir]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain(
      `nothing to do: all ${3 * SAMPLES} samples of eval set ${name} are already completed`,
    );
    expect(JSON.parse(again.stdout).status).toBe('success');
    for (const task of TASKS) expect(await readSampleRecords(logDir, task)).toHaveLength(SAMPLES);
  });
});

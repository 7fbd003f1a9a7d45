/**
 * Epochs reducers and metrics through the CLI as a user types them, against the real dev server:
 * a task reduced by `pass_at_2` and `mean` with `accuracy` and `std` shows both reducers in the
 * `--json` summary, in the table and in the `.eval` Inspect reads; relaunched with another
 * reducer, its recorded samples are scored again without running anything.
 */
import { spawnSync } from 'node:child_process';
import { promises as fs, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { stringify } from 'yaml';
import type { TaskMetrics } from '../src/eval/metrics';
import { evalSetWorkflowId, taskWorkflowId } from '../src/workflows/types';
import { REPO_ROOT, runCli, tempDir, uniqueName } from './helpers/cli';
import { replayAllRuns } from './helpers/replay';

const PYTHON =
  process.env.STEWARD_INSPECT_PYTHON ??
  path.join(REPO_ROOT, '.tools', 'inspect-venv', 'bin', 'python');
const SCORER = path.join(__dirname, 'helpers', 'inspect_scores.py');

/** The model always answers 42: two samples right, two wrong, the same every epoch. */
function definition(name: string, reducer: string[]) {
  return stringify({
    name,
    tasks: [
      {
        name: 'answers',
        dataset: ['42', '7', '42', '9'].map((target, i) => ({ id: i + 1, input: `q${i}`, target })),
        scorer: 'match',
        epochs: { count: 2, reducer },
        metrics: ['accuracy', 'std'],
        model: 'mockllm/model',
        model_args: { outputs: ['42'], latency_ms: 0 },
      },
    ],
  });
}

describe('reducers and metrics named in a definition', () => {
  let dir: string;
  let file: string;
  let logDir: string;
  let name: string;

  beforeAll(async () => {
    dir = await tempDir();
    name = uniqueName('reducers');
    file = path.join(dir, 'evalset.yaml');
    logDir = path.join(dir, 'logs');
    await fs.writeFile(file, definition(name, ['pass_at_2', 'mean']));
  });

  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  test('the summary, the table and the .eval carry each reducer by name', async () => {
    const launched = await runCli(['launch', file, '--json', '--log-dir', logDir]);
    expect(launched.stderr).not.toContain('internal error');
    expect(launched.code).toBe(0);
    const [task] = (JSON.parse(launched.stdout) as { tasks: Array<{ metrics: TaskMetrics }> })
      .tasks;
    const std = Math.sqrt(1 / 3); // of 1, 0, 1, 0 with n - 1
    expect(task.metrics).toMatchObject({ reducer: 'pass_at_2', accuracy: 0.5, samples_scored: 4 });
    expect(task.metrics.scores.map((s) => [s.reducer, s.metrics])).toEqual([
      ['pass_at_2', { accuracy: 0.5, std: expect.closeTo(std, 12) }],
      ['mean', { accuracy: 0.5, std: expect.closeTo(std, 12) }],
    ]);

    const again = await runCli(['launch', file, '--log-dir', logDir]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      /task\s+samples\s+completed\s+errored\s+limited\s+stuck\s+retries\s+reducer\s+accuracy\s+std/,
    );
    expect(again.stdout).toMatch(/answers\s+8\s+8\s+0\s+0\s+0\s+0\s+pass_at_2\s+0\.500\s+0\.577/);
    expect(again.stdout).toMatch(/\n\s+mean\s+0\.500\s+0\.577/);

    const read = readLog();
    expect(read.config).toEqual(['pass_at_2', 'mean']);
    expect(read.scores.map((s) => [s.reducer, s.metrics.accuracy])).toEqual([
      ['pass_at_2', 0.5],
      ['mean', 0.5],
    ]);

    const client = new Client({
      connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS }),
      namespace: process.env.TEMPORAL_NAMESPACE,
    });
    try {
      const ids = [evalSetWorkflowId(name), taskWorkflowId(evalSetWorkflowId(name), 'answers')];
      expect(await replayAllRuns(client, ids)).toBeGreaterThanOrEqual(2);
    } finally {
      await client.connection.close();
    }
  });

  test('relaunched with another reducer, the same records are scored again', async () => {
    await fs.writeFile(file, definition(name, ['max']));
    const relaunched = await runCli(['launch', file, '--json', '--log-dir', logDir]);
    expect(relaunched.code).toBe(0);
    expect(relaunched.stderr).toContain('scored again under the reducers and metrics');
    const [task] = (JSON.parse(relaunched.stdout) as { tasks: Array<{ metrics: TaskMetrics }> })
      .tasks;
    expect(task.metrics.scores.map((s) => s.reducer)).toEqual(['max']);
    expect(readLog().config).toEqual(['max']);
  });

  function readLog(): {
    config: string[];
    scores: Array<{ reducer: string; metrics: Record<string, number> }>;
  } {
    const run = spawnSync(PYTHON, [SCORER, '--log', evalFile()], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(run.stderr);
    return JSON.parse(run.stdout) as ReturnType<typeof readLog>;
  }

  function evalFile(): string {
    const files = readdirSync(logDir);
    const found = files.find((f) => f.endsWith('.eval'));
    if (!found) throw new Error(`no .eval in ${logDir}: ${files.join(', ')}`);
    return path.join(logDir, found);
  }
});

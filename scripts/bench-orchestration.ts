/**
 * Temporal's orchestration cost per sample: 1 task × N zero-latency mockllm samples at
 * max_samples 200, run by `steward launch` on a fresh dev server, against a baseline in the same
 * run: the same samples solved and scored in one process with no orchestration at all.
 *
 *   npm run bench:orchestration            # N = 5000
 *   npm run bench:orchestration -- 2000
 */
import { spawn } from 'node:child_process';
import { promises as fs, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadDefinition } from '../src/loader/definition';
import { runSample } from '../src/eval/run-sample';
import { createModel } from '../src/models';
import { throwawayDevConfig } from '../src/temporal/config';
import { ensureDevServer, stopDevServer } from '../src/temporal/devserver';
import { freePort } from '../test/setup/global-setup';

const SAMPLES = Number(process.argv[2] ?? 5_000);
const CONCURRENCY = 200;
const ROOT = path.resolve(__dirname, '..');

async function main(): Promise<void> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'steward-bench-'));
  const file = await writeEvalSet(dir);

  const baselineMs = await baseline(file);

  const stewardDir = path.join(dir, '.steward');
  const server = await ensureDevServer(throwawayDevConfig(dir, await freePort()), { stewardDir });
  try {
    const run = await launch(file, path.join(dir, 'logs'), {
      ...process.env,
      TEMPORAL_ADDRESS: server.address,
      STEWARD_HOME: stewardDir,
    });
    const perSampleMs = run.wallMs / SAMPLES;
    const rows: [string, string][] = [
      ['samples', String(SAMPLES)],
      ['max_samples', String(CONCURRENCY)],
      ['steward launch wall time', `${(run.wallMs / 1000).toFixed(1)} s`],
      ['samples/s', (SAMPLES / (run.wallMs / 1000)).toFixed(1)],
      ['orchestration cost per sample', `${perSampleMs.toFixed(2)} ms`],
      ['baseline (same samples, one process, no Temporal)', `${(baselineMs / 1000).toFixed(2)} s`],
      ['ratio steward / baseline', `${(run.wallMs / baselineMs).toFixed(1)}x`],
      ['peak RSS, worker process', `${(run.workerPeakKb / 1024).toFixed(0)} MiB`],
      ['peak RSS, steward launch (supervisor)', `${(run.launchPeakKb / 1024).toFixed(0)} MiB`],
      ['exit code', String(run.code)],
    ];
    const width = Math.max(...rows.map(([k]) => k.length));
    for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
  } finally {
    await stopDevServer(stewardDir);
  }
}

async function writeEvalSet(dir: string): Promise<string> {
  const lines = Array.from({ length: SAMPLES }, (_, i) =>
    JSON.stringify({ id: i + 1, input: `q${i}`, target: String(i) }),
  );
  await fs.writeFile(path.join(dir, 'bench.jsonl'), `${lines.join('\n')}\n`);
  const file = path.join(dir, 'bench.yaml');
  await fs.writeFile(
    file,
    [
      'name: bench',
      `max_samples: ${CONCURRENCY}`,
      'tasks:',
      '  - name: bench',
      '    dataset: bench.jsonl',
      '    solver: [generate]',
      '    scorer: match',
      '    model: mockllm/model',
      "    model_args: { outputs: ['{target}'] }",
      '',
    ].join('\n'),
  );
  return file;
}

/** The same work with no orchestration: solve and score every sample, 200 at a time. */
async function baseline(file: string): Promise<number> {
  const definition = await loadDefinition(file);
  const task = definition.tasks[0];
  const model = createModel(task.model, task.modelArgs, process.env);
  const signal = new AbortController().signal;
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < task.dataset.length) {
        const sample = task.dataset[next++];
        await runSample(task, sample, 1, { model, heartbeat: () => undefined, signal });
      }
    }),
  );
  return performance.now() - started;
}

/** Runs `steward launch`, sampling the peak RSS of it and of its worker processes. */
function launch(
  file: string,
  logDir: string,
  env: NodeJS.ProcessEnv,
): Promise<{ wallMs: number; code: number | null; workerPeakKb: number; launchPeakKb: number }> {
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [path.join(ROOT, 'bin', 'steward.js'), 'launch', file, '--log-dir', logDir, '--json'],
    {
      env,
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  let workerPeakKb = 0;
  let launchPeakKb = 0;
  const sampler = setInterval(() => {
    launchPeakKb = Math.max(launchPeakKb, peakRssKb(child.pid!));
    for (const pid of childPids(child.pid!)) workerPeakKb = Math.max(workerPeakKb, peakRssKb(pid));
  }, 250);
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      clearInterval(sampler);
      resolve({ wallMs: performance.now() - started, code, workerPeakKb, launchPeakKb });
    });
  });
}

function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** VmHWM: the process's peak resident set so far. */
function peakRssKb(pid: number): number {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

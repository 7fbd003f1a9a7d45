/**
 * What orchestration costs per sample, measured the same way for Steward and Inspect AI: one
 * task of N one-call samples against `steward sim-provider` answering at once with no limits,
 * both tools at max_samples 200 and max_connections 200, so nothing but the tool bounds the
 * speed. Beside them, in the same run, the in-process baseline: Steward's own solver and scorer
 * over the same samples and the same HTTP path, 200 at a time, with no orchestration at all.
 * Shared by `npm run bench:orchestration` and CI's regression guard (test/orchestration.test.ts).
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { runSample } from '../../src/eval/run-sample';
import { loadDefinition } from '../../src/loader/definition';
import { createModel } from '../../src/models';
import { throwawayDevConfig } from '../../src/temporal/config';
import { ensureDevServer, stopDevServer } from '../../src/temporal/devserver';
import { alignColumns } from '../../src/cli/table';
import { freePort } from '../../test/setup/global-setup';
import {
  devServerPid,
  watchMemory,
  type MemoryReport,
  type ProcessKind,
} from '../../test/helpers/process-tree';
import { readSampleRecords } from '../../test/helpers/results';
import {
  API_KEY,
  MODEL,
  writeData,
  writeInspectTasks,
  writeStewardDefinition,
} from '../peers/eval-sets';
import { startSimProcess, type SimProcess } from '../peers/sim-process';
import { withoutToolSettings } from '../peers/tools';
import { launchRun, measuredRun, ROOT, type MeasuredProcess } from '../ramp/launch';

export const CONCURRENCY = 200;
const run = promisify(execFile);
const READ_INSPECT_LOGS = path.join(ROOT, 'scripts', 'peers', 'inspect_samples.py');
/** The baseline runs at least this many samples, so its rate is not a warm-up's. */
const BASELINE_MIN_SAMPLES = 3_000;

export type OrchestrationTool = 'steward' | 'inspect';

export interface ToolRun {
  tool: OrchestrationTool;
  wallMs: number;
  completed: number;
  samplesPerS: number;
  /** Requests the provider answered (one call per sample, plus whatever the tool sent besides). */
  requests: number;
  memory: MemoryReport;
  /** Why the run does not count (it failed, or did not complete every sample). */
  problem?: string;
}

export interface OrchestrationRun {
  samples: number;
  baseline: { samples: number; wallMs: number; samplesPerS: number };
  runs: ToolRun[];
}

export interface OrchestrationOptions {
  samples: number;
  tools: OrchestrationTool[];
  /** The Inspect AI venv's python (`setupInspect`), when `tools` has `inspect`. */
  python?: string;
  /** An empty directory for the data, the logs and the dev server. */
  dir: string;
  deadlineMs: number;
}

export async function runOrchestration(options: OrchestrationOptions): Promise<OrchestrationRun> {
  const { dir, samples } = options;
  const data = await writeData(dir, 1, samples);
  const definition = await writeStewardDefinition(dir, 'orchestration', data.tasks, {
    max_samples: CONCURRENCY,
    max_connections: CONCURRENCY,
  });
  const sim = await startSimProcess({ latencyMs: 0, jitterMs: 0, seed: 7 });
  const env = { ...withoutToolSettings(process.env), SIM_BASE_URL: sim.url, SIM_API_KEY: API_KEY };
  try {
    const baseline = await inProcess(await baselineDefinition(dir, samples, definition), env);
    const runs: ToolRun[] = [];
    for (const tool of options.tools) {
      // One provider serves every run: its counters carry the runs before.
      const before = (await sim.stats()).requests;
      const one =
        tool === 'steward'
          ? await runSteward(options, definition, data.tasks[0].name, sim, env)
          : await runInspect(options, data.tasks, sim, env);
      runs.push({ ...one, requests: one.requests - before });
    }
    return { samples, baseline, runs };
  } finally {
    await sim.close();
  }
}

/** The definition the baseline solves: the same, with at least its minimum of samples. */
async function baselineDefinition(dir: string, samples: number, definition: string) {
  if (samples >= BASELINE_MIN_SAMPLES) return definition;
  const baseDir = path.join(dir, 'baseline');
  await fs.mkdir(baseDir, { recursive: true });
  const data = await writeData(baseDir, 1, BASELINE_MIN_SAMPLES);
  return writeStewardDefinition(baseDir, 'baseline', data.tasks);
}

/** Solves and scores every sample in this process, 200 at a time, through the same HTTP path. */
async function inProcess(
  file: string,
  env: NodeJS.ProcessEnv,
): Promise<OrchestrationRun['baseline']> {
  const definition = await loadDefinition(file);
  const task = definition.tasks[0];
  const model = createModel(task.model, task.modelArgs, env);
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
  const wallMs = performance.now() - started;
  const samples = task.dataset.length;
  return { samples, wallMs, samplesPerS: samples / (wallMs / 1000) };
}

async function runSteward(
  options: OrchestrationOptions,
  definition: string,
  task: string,
  sim: SimProcess,
  env: NodeJS.ProcessEnv,
): Promise<ToolRun> {
  const stewardDir = path.join(options.dir, '.steward');
  const port = await freePort();
  const server = await ensureDevServer(throwawayDevConfig(stewardDir, port), { stewardDir });
  const serverPid = devServerPid(port);
  if (serverPid === undefined) throw new Error(`no Temporal dev server process on port ${port}`);
  const logDir = path.join(options.dir, 'steward-logs');
  let root: number | undefined;
  // The server's work for the run is the run's too: it is watched (memory, CPU) from here.
  const memory = watchMemory(() => (root === undefined ? [serverPid] : [serverPid, root]));
  try {
    const ran = await launchRun(sim, {
      definition,
      logDir,
      flags: [],
      env: { ...env, TEMPORAL_ADDRESS: server.address, STEWARD_HOME: stewardDir },
      cwd: options.dir,
      deadlineMs: options.deadlineMs,
      onSpawn: (pid) => (root = pid),
    });
    // Records, not the summary: a sample counts once it is recorded, exactly once.
    const records = await readSampleRecords(logDir, task).catch(() => []);
    return toolRun('steward', ran, records.length, options.samples, memory.stop());
  } finally {
    memory.stop();
    await stopDevServer(stewardDir);
  }
}

async function runInspect(
  options: OrchestrationOptions,
  tasks: Awaited<ReturnType<typeof writeData>>['tasks'],
  sim: SimProcess,
  env: NodeJS.ProcessEnv,
): Promise<ToolRun> {
  if (!options.python) throw new Error('inspect needs the venv python (setupInspect)');
  const tasksFile = await writeInspectTasks(options.dir, 'orchestration', tasks);
  const logDir = path.join(options.dir, 'inspect-logs');
  let root: number | undefined;
  const memory = watchMemory(() => (root === undefined ? [] : [root]));
  const ran = await measuredRun(
    sim,
    options.python,
    [
      '-m',
      'inspect_ai',
      'eval',
      path.basename(tasksFile),
      '--model',
      MODEL,
      '--max-samples',
      String(CONCURRENCY),
      '--max-connections',
      String(CONCURRENCY),
      '--log-dir',
      logDir,
      '--display',
      'none',
    ],
    { env, cwd: options.dir, deadlineMs: options.deadlineMs, onSpawn: (pid) => (root = pid) },
  );
  const report = memory.stop();
  // Inspect's own log says which samples completed (its reader, in its venv).
  const { stdout } = await run(options.python, [READ_INSPECT_LOGS, logDir], {
    maxBuffer: 256 * 1024 * 1024,
  });
  const logs = JSON.parse(stdout) as { tasks: { completed: number }[] };
  const completed = logs.tasks.reduce((sum, t) => sum + t.completed, 0);
  return toolRun('inspect', ran, completed, options.samples, report);
}

function toolRun(
  tool: OrchestrationTool,
  ran: MeasuredProcess,
  completed: number,
  samples: number,
  memory: MemoryReport,
): ToolRun {
  let problem: string | undefined;
  if (ran.stopped) problem = 'stopped at the deadline';
  else if (ran.code !== 0) problem = `exited ${ran.code}: ${ran.stderr.slice(-1000)}`;
  else if (completed < samples) problem = `${completed} of ${samples} samples completed`;
  return {
    tool,
    wallMs: ran.wallMs,
    completed,
    samplesPerS: completed / (ran.wallMs / 1000),
    requests: ran.stats.requests,
    memory,
    problem,
  };
}

/** Steward's samples/s over the in-process baseline's: what the regression guard compares. */
export function stewardShare(run: OrchestrationRun): number | undefined {
  const steward = run.runs.find((r) => r.tool === 'steward' && r.problem === undefined);
  return steward && steward.samplesPerS / run.baseline.samplesPerS;
}

export function orchestrationTable(run: OrchestrationRun): string {
  const mib = (kb: number | undefined) => `${((kb ?? 0) / 1024).toFixed(0)} MiB`;
  const largest = (m: MemoryReport) => Math.max(0, ...Object.values(m.peakByKindKb));
  const rows: string[][] = [
    [
      '',
      'wall time',
      'samples/s',
      'of baseline',
      'requests',
      'peak RSS, all',
      'largest process',
      'worker',
    ],
    [
      `in-process baseline (${run.baseline.samples} samples)`,
      `${(run.baseline.wallMs / 1000).toFixed(1)} s`,
      run.baseline.samplesPerS.toFixed(0),
      '1',
      '',
      '',
      '',
      '',
    ],
    ...run.runs.map((r) => [
      r.tool === 'steward' ? 'steward launch' : 'inspect eval (Inspect AI 0.3.285)',
      `${(r.wallMs / 1000).toFixed(1)} s`,
      r.samplesPerS.toFixed(1) + (r.problem ? ` (${r.problem.split('\n')[0]})` : ''),
      (r.samplesPerS / run.baseline.samplesPerS).toFixed(4),
      String(r.requests),
      mib(r.memory.peakTotalKb),
      mib(largest(r.memory)),
      r.tool === 'steward' ? mib(r.memory.peakByKindKb.worker) : '',
    ]),
  ];
  return [
    alignColumns(rows, [false, true, true, true, true, true, true, true]).join('\n'),
    '',
    'CPU per sample, by process (ms; the machine has 2 cores):',
    ...run.runs.map((r) => `  ${r.tool}: ${cpuPerSample(r)}`),
  ].join('\n');
}

/** Where a run's CPU went, per recorded sample: the profile of its orchestration. */
function cpuPerSample(r: ToolRun): string {
  const ms = (seconds: number) => ((seconds * 1000) / Math.max(1, r.completed)).toFixed(2);
  // Inspect runs as one python process (and its children), which the watcher calls "other".
  const label = (kind: ProcessKind) =>
    r.tool === 'inspect' && kind === 'other' ? 'inspect (python)' : KIND_LABEL[kind];
  const parts = Object.entries(r.memory.cpuSecondsByKind)
    .sort(([, a], [, b]) => b - a)
    .map(([kind, seconds]) => `${label(kind as ProcessKind)} ${ms(seconds)}`);
  const total = Object.values(r.memory.cpuSecondsByKind).reduce((a, b) => a + b, 0);
  return `${ms(total)} in all: ${parts.join(', ')}`;
}

const KIND_LABEL: Record<ProcessKind, string> = {
  temporal: 'Temporal dev server',
  worker: 'worker processes',
  launch: 'steward launch (supervisor)',
  other: 'other',
};

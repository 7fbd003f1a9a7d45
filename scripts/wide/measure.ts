/**
 * One run of the wide bench, measured: a tool started as a user starts it against a fresh
 * `steward sim-provider`, with every process of the run (for Steward its launch, its worker
 * processes and the Temporal dev server; for Inspect AI its python) watched throughout for
 * memory, CPU and when each process appeared, and the samples' start and end read back from the
 * tool's own logs afterwards.
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import type { SimStats } from '../../src/sim/provider';
import { throwawayDevConfig } from '../../src/temporal/config';
import { ensureDevServer, stopDevServer } from '../../src/temporal/devserver';
import {
  commandLine,
  devServerPid,
  processKind,
  processState,
  processTree,
  watchMemory,
  type MemoryReport,
  type ProcessKind,
} from '../../test/helpers/process-tree';
import { readSampleRecords } from '../../test/helpers/results';
import { freePort } from '../../test/setup/global-setup';
import {
  API_KEY,
  MODEL,
  writeInspectTasks,
  writeStewardDefinition,
  type BenchData,
} from '../peers/eval-sets';
import type { Tool } from '../peers/report';
import type { SimProcess } from '../peers/sim-process';
import { launchRun, measuredRun, ROOT, type MeasuredProcess } from '../ramp/launch';
import { totalSamples, type Sweep } from './sweeps';

const run = promisify(execFile);
const READ_INSPECT_LOGS = path.join(ROOT, 'scripts', 'peers', 'inspect_samples.py');
/** A run that has not exited this long after its deadline's SIGTERM is killed, tree and all. */
const KILL_GRACE_MS = 120_000;

export interface WideContext {
  /** The environment both tools start from (the caller's tool settings removed). */
  env: NodeJS.ProcessEnv;
  /** The Inspect venv's python; empty when Inspect is not run. */
  python: string;
  deadlineMs: number;
}

export interface OneRun {
  sweep: Sweep;
  idealS: number;
  /** The sweep's directory: its data, and a directory per tool. */
  dir: string;
  data: BenchData;
  sim: SimProcess;
}

/** When a process of the run was first seen, seconds from the tool's start (negative: before it). */
export interface ProcessStart {
  kind: ProcessKind;
  t: number;
}

export interface WideRun {
  sweep: Sweep;
  tool: Tool;
  idealS: number;
  /** Process start to exit (or to the deadline). */
  wallMs: number;
  code: number | null;
  stopped: boolean;
  expected: number;
  /** Samples the tool recorded as completed without error. */
  completed: number;
  /** Calls the provider answered 200: one per sample, so a check on `completed`. */
  answered: number;
  /** Earliest recorded sample end, seconds from the process start. */
  firstRecordS?: number;
  /** The provider's first second with a request (1 s resolution). */
  firstCallS?: number;
  memory: MemoryReport;
  starts: ProcessStart[];
  stats: SimStats;
  /** The machine's 1-minute load average as the run ended. */
  loadAverage: number;
  problem?: string;
}

export async function runSteward(ctx: WideContext, one: OneRun): Promise<WideRun> {
  const dir = path.join(one.dir, 'steward');
  const stewardDir = path.join(dir, '.steward');
  await fs.mkdir(dir, { recursive: true });
  const port = await freePort();
  // A dev server of its own: its memory and CPU are the run's, and it starts empty.
  const server = await ensureDevServer(throwawayDevConfig(stewardDir, port), { stewardDir });
  try {
    const serverPid = devServerPid(port);
    if (serverPid === undefined) throw new Error(`no Temporal dev server process on port ${port}`);
    // Beside the data: the definition names its datasets relative to itself.
    const definition = await writeStewardDefinition(
      one.dir,
      `wide-${one.sweep.name}`,
      one.data.tasks,
    );
    const logDir = path.join(dir, 'logs');
    const watch = watchRun(() => [serverPid], ctx.deadlineMs);
    const ran = await launchRun(one.sim, {
      definition,
      logDir,
      flags: [],
      env: {
        ...ctx.env,
        ...simEnv(one.sim),
        TEMPORAL_ADDRESS: server.address,
        TEMPORAL_NAMESPACE: server.namespace,
        STEWARD_HOME: stewardDir,
      },
      cwd: one.dir,
      deadlineMs: ctx.deadlineMs,
      onSpawn: watch.spawned,
    }).finally(watch.stop);
    const watched = watch.stop(ran.startedAt);
    await saveOutput(dir, ran, watched.starts);
    const ends: number[] = [];
    for (const task of one.data.tasks) {
      const records = await readSampleRecords(logDir, task.name).catch(() => []);
      for (const r of records) ends.push(Date.parse(r.completed_at));
    }
    const problem =
      ran.code !== 0 && !ran.stopped
        ? `steward launch exited ${ran.code}: ${ran.stderr.slice(-2000)}`
        : undefined;
    return wideRun('steward', one, ran, watched, ends, problem);
  } finally {
    await stopDevServer(stewardDir);
  }
}

export async function runInspect(ctx: WideContext, one: OneRun): Promise<WideRun> {
  if (!ctx.python) throw new Error('inspect needs the venv python (setupInspect)');
  const dir = path.join(one.dir, 'inspect');
  await fs.mkdir(dir, { recursive: true });
  const tasksFile = await writeInspectTasks(one.dir, `wide_${one.sweep.name}`, one.data.tasks);
  const logDir = path.join(dir, 'logs');
  const watch = watchRun(() => [], ctx.deadlineMs);
  const ran = await measuredRun(
    one.sim,
    ctx.python,
    [
      '-m',
      'inspect_ai',
      'eval-set',
      // Relative: Inspect globs for task files under its working directory.
      path.basename(tasksFile),
      '--model',
      MODEL,
      '--log-dir',
      logDir,
      // No terminal to draw on, and drawing would only cost the machine CPU.
      '--display',
      'none',
    ],
    {
      env: { ...ctx.env, ...simEnv(one.sim) },
      cwd: one.dir,
      deadlineMs: ctx.deadlineMs,
      onSpawn: watch.spawned,
    },
  ).finally(watch.stop);
  const watched = watch.stop(ran.startedAt);
  await saveOutput(dir, ran, watched.starts);
  let logs: { tasks: { status: string; completed: number }[]; intervals: [number, number][] };
  let unreadable: string | undefined;
  try {
    const { stdout } = await run(ctx.python, [READ_INSPECT_LOGS, logDir], {
      maxBuffer: 256 * 1024 * 1024,
    });
    logs = JSON.parse(stdout) as typeof logs;
  } catch (error) {
    // A run stopped at its deadline may leave logs Inspect cannot read back.
    logs = { tasks: [], intervals: [] };
    unreadable = `its logs could not be read: ${(error as Error).message.slice(0, 500)}`;
  }
  const failed = logs.tasks.filter((t) => t.status !== 'success').length;
  let problem: string | undefined;
  if (ran.code !== 0 && !ran.stopped)
    problem = `inspect eval-set exited ${ran.code}: ${ran.stderr.slice(-2000)}`;
  else if (unreadable) problem = unreadable;
  else if (failed > 0 && !ran.stopped) problem = `${failed} task logs not successful`;
  const completed = logs.tasks.reduce((sum, t) => sum + t.completed, 0);
  const ends = logs.intervals.map(([, end]) => end);
  return wideRun('inspect', one, ran, watched, ends, problem, completed);
}

function simEnv(sim: SimProcess): NodeJS.ProcessEnv {
  return { SIM_BASE_URL: sim.url, SIM_API_KEY: API_KEY };
}

function wideRun(
  tool: Tool,
  one: OneRun,
  ran: MeasuredProcess,
  watched: { memory: MemoryReport; starts: ProcessStart[] },
  ends: number[],
  problem: string | undefined,
  completed = ends.length,
): WideRun {
  const expected = totalSamples(one.sweep);
  const firstEnd = ends.length > 0 ? Math.min(...ends) : undefined;
  return {
    sweep: one.sweep,
    tool,
    idealS: one.idealS,
    wallMs: ran.wallMs,
    code: ran.code,
    stopped: ran.stopped,
    expected,
    completed,
    answered: ran.stats.by_status['200'] ?? 0,
    firstRecordS: firstEnd === undefined ? undefined : (firstEnd - ran.startedAt) / 1000,
    firstCallS: ran.stats.series.find((p) => p.requests > 0)?.t,
    memory: watched.memory,
    starts: watched.starts,
    stats: ran.stats,
    loadAverage: os.loadavg()[0],
    problem:
      problem ??
      (ran.stopped
        ? `stopped at the deadline (${(ran.wallMs / 1000).toFixed(0)} s)`
        : completed < expected
          ? `${completed} of ${expected} samples completed`
          : undefined),
  };
}

/**
 * Watches the run's processes from before the tool starts (`fixed` roots: the dev server) and,
 * once spawned, the tool's whole tree: memory and CPU (`watchMemory`), and when each process
 * first appeared. A tool still running `KILL_GRACE_MS` past its deadline (the SIGTERM then did
 * not stop it) is killed with its tree, so a stall cannot hang the bench.
 */
function watchRun(
  fixed: () => number[],
  deadlineMs: number,
): {
  spawned(pid: number): void;
  /** Stops watching (at the first call); `startedAt` (ms since the epoch) times the starts. */
  stop(startedAt?: number): { memory: MemoryReport; starts: ProcessStart[] };
} {
  let root: number | undefined;
  const roots = () => (root === undefined ? fixed() : [...fixed(), root]);
  const memory = watchMemory(roots);
  const seen = new Map<number, { command: string; kind: ProcessKind; at: number }>();
  const look = () => {
    for (const pid of processTree(roots())) {
      const args = commandLine(pid);
      if (!args || args.length === 0) continue;
      const command = args.join(' ');
      const known = seen.get(pid);
      // A child just forked shows its parent's command line until it execs: it keeps its first
      // sighting and takes the kind of its last command line.
      if (!known) seen.set(pid, { command, kind: processKind(args), at: Date.now() });
      else if (known.command !== command)
        seen.set(pid, { ...known, command, kind: processKind(args) });
    }
  };
  look();
  const looker = setInterval(look, 500);
  let killer: NodeJS.Timeout | undefined;
  let report: MemoryReport | undefined;
  return {
    spawned(pid) {
      root = pid;
      look();
      killer = setTimeout(() => {
        console.error(
          `  still running ${KILL_GRACE_MS / 1000} s past the deadline: killing ${pid}`,
        );
        killTree(pid);
      }, deadlineMs + KILL_GRACE_MS);
    },
    stop(startedAt = 0) {
      if (report === undefined) {
        clearTimeout(killer);
        clearInterval(looker);
        report = memory.stop();
      }
      return {
        memory: report,
        starts: [...seen.values()]
          .map(({ kind, at }) => ({ kind, t: (at - startedAt) / 1000 }))
          .sort((a, b) => a.t - b.t),
      };
    },
  };
}

/** Keeps what the provider saw per second, what the tool printed, and its processes' starts. */
async function saveOutput(dir: string, ran: MeasuredProcess, starts: ProcessStart[]) {
  await fs.writeFile(
    path.join(dir, 'provider-stats.json'),
    JSON.stringify({ ...ran.stats, in_flight_readings: ran.inFlightReadings }),
  );
  await fs.writeFile(path.join(dir, 'process-starts.json'), JSON.stringify(starts));
  await fs.writeFile(path.join(dir, 'stdout.txt'), ran.stdout);
  await fs.writeFile(path.join(dir, 'stderr.txt'), ran.stderr);
}

/** Kills `pid` and every descendant (SIGKILL), the leaves last seen included. */
export function killTree(pid: number): void {
  for (const p of processTree([pid]).reverse()) {
    if (processState(p) === undefined) continue;
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // Gone since the listing.
    }
  }
}

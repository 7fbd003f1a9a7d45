/**
 * Steward against its peer, Inspect AI's `eval_set` (0.3.285), side by side in the same run: the
 * same tasks on the same data (one model call per sample), each tool at its defaults, against
 * the same simulated provider, under three profiles, each with 1, 2, 4 and 8 tasks sharing one
 * provider account.
 *
 *   wall  60 concurrent requests, 2 s calls (3,600 samples: ideal 120 s)
 *   rpm   a 1,800 requests/min bucket, no concurrency limit
 *   tpm   a tokens/min bucket refilling at the same calls per second, no concurrency limit
 *
 * Both tools are driven as a user drives them: `steward launch <definition>` (default settings:
 * tend every 60 s, the ramp, the adaptive connection controller) on a fresh Temporal dev
 * server, and `python -m inspect_ai eval-set <tasks.py> --model openai-api/sim/peers` from the
 * venv `scripts/peers/setup-inspect.sh` makes. The provider is `steward sim-provider`, started
 * afresh for every run (full buckets, zeroed counters) and read over its `/stats` endpoint.
 *
 * For each run: wall time (process start to exit) against the ideal (the provider's physical
 * limit for that many calls, see `peers/profiles.ts`), the share of requests answered 429 and
 * the mean calls in flight (both counted by the provider), and the mean samples in flight (from
 * Steward's sample records, and from Inspect's `.eval` logs via `read_eval_log`). Prints a table,
 * writes it to bench/peers-table.txt, and plots it to bench/peers.svg.
 *
 *   npm run bench:peers
 *   npm run bench:peers -- --samples 300 --tasks 1,2 --label quick
 *   npm run bench:peers -- --profiles wall --tools steward --keep
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import { throwawayDevConfig } from '../src/temporal/config';
import { ensureDevServer, stopDevServer } from '../src/temporal/devserver';
import { readSampleRecords } from '../test/helpers/results';
import { freePort } from '../test/setup/global-setup';
import { launchRun, measuredRun, ROOT, type MeasuredProcess } from './ramp/launch';
import {
  API_KEY,
  MODEL,
  writeData,
  writeInspectTasks,
  writeStewardDefinition,
  type BenchData,
} from './peers/eval-sets';
import {
  notes,
  summaryLine,
  table,
  TOOL_LABEL,
  writePlot,
  type Measured,
  type Tool,
} from './peers/report';
import {
  describeLimits,
  idealSeconds,
  PROFILE_NAMES,
  profileLimits,
  refillOnlySeconds,
  type ProfileName,
  type ProfileSettings,
} from './peers/profiles';
import { startSimProcess, type SimProcess } from './peers/sim-process';
import { positive, setupInspect, withoutToolSettings } from './peers/tools';

const run = promisify(execFile);
const READ_INSPECT_LOGS = path.join(ROOT, 'scripts', 'peers', 'inspect_samples.py');

interface Context {
  dir: string;
  settings: ProfileSettings;
  samples: number;
  deadlineMs: number;
  stewardEnv: NodeJS.ProcessEnv;
  inspectEnv: NodeJS.ProcessEnv;
  python: string;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      samples: { type: 'string', default: '3600' },
      tasks: { type: 'string', default: '1,2,4,8' },
      profiles: { type: 'string', default: PROFILE_NAMES.join(',') },
      tools: { type: 'string', default: 'steward,inspect' },
      concurrency: { type: 'string', default: '60' },
      rpm: { type: 'string', default: '1800' },
      tpm: { type: 'string' },
      'latency-ms': { type: 'string', default: '1900' },
      'jitter-ms': { type: 'string', default: '200' },
      seed: { type: 'string', default: '7' },
      // A run that stalls is stopped at this multiple of its ideal (and at least 2 minutes).
      'deadline-factor': { type: 'string', default: '5' },
      label: { type: 'string', default: '' },
      out: { type: 'string', default: path.join(ROOT, 'bench', 'peers.svg') },
      table: { type: 'string', default: path.join(ROOT, 'bench', 'peers-table.txt') },
      keep: { type: 'boolean', default: false },
    },
  });
  const samples = positive(values.samples, '--samples');
  const taskCounts = values.tasks.split(',').map((t) => positive(t, '--tasks'));
  const profiles = values.profiles.split(',').map((p) => {
    if (!PROFILE_NAMES.includes(p as ProfileName)) throw new Error(`unknown profile ${p}`);
    return p as ProfileName;
  });
  const tools = values.tools.split(',').map((t) => {
    if (t !== 'steward' && t !== 'inspect') throw new Error(`unknown tool ${t}`);
    return t as Tool;
  });
  const settings: ProfileSettings = {
    concurrency: positive(values.concurrency, '--concurrency'),
    rpm: positive(values.rpm, '--rpm'),
    tpm: values.tpm === undefined ? undefined : positive(values.tpm, '--tpm'),
    latencyMs: Number(values['latency-ms']),
    jitterMs: Number(values['jitter-ms']),
    seed: Number(values.seed),
  };
  const deadlineFactor = Number(values['deadline-factor']);

  const python = tools.includes('inspect') ? await setupInspect() : '';
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'steward-bench-peers-'));
  const stewardDir = path.join(dir, '.steward');
  const server = tools.includes('steward')
    ? await ensureDevServer(throwawayDevConfig(dir, await freePort()), { stewardDir })
    : undefined;
  const base = withoutToolSettings(process.env);
  const ctx: Context = {
    dir,
    settings,
    samples,
    deadlineMs: 0,
    stewardEnv: {
      ...base,
      ...(server && { TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace }),
      STEWARD_HOME: stewardDir,
    },
    inspectEnv: base,
    python,
  };

  const measured: Measured[] = [];
  const header: string[] = [];
  let failed = false;
  let sim: SimProcess | undefined;
  // Ctrl-C reaches the tools through the terminal; the provider and the dev server would outlive
  // the bench without this.
  const interrupted = (signal: NodeJS.Signals) => {
    console.error(`${signal}: stopping the provider and the dev server; kept ${dir}`);
    void Promise.allSettled([sim?.close(), server && stopDevServer(stewardDir)]).then(() =>
      process.exit(130),
    );
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    for (const profile of profiles) {
      for (const taskCount of taskCounts) {
        const runDir = path.join(dir, `${profile}-${taskCount}`);
        await fs.mkdir(runDir, { recursive: true });
        const data = await writeData(runDir, taskCount, samples);
        const limits = profileLimits(profile, settings, data.tokens / samples);
        const work = { calls: samples, tokens: data.tokens };
        const idealS = idealSeconds(limits, work);
        if (taskCount === taskCounts[0]) {
          const refillS = refillOnlySeconds(limits, work);
          header.push(
            `${describeLimits(profile, limits)}; ideal ${idealS.toFixed(1)} s` +
              (refillS > idealS + 0.05
                ? ` (its full bucket at once, then the refill; at the refill rate alone ${refillS.toFixed(1)} s)`
                : ''),
          );
        }
        ctx.deadlineMs = Math.max(120, idealS * deadlineFactor) * 1000;
        for (const tool of tools) {
          console.log(`${profile}, ${taskCount} task(s), ${TOOL_LABEL[tool]} ...`);
          sim = await startSimProcess(limits);
          try {
            const env = { SIM_BASE_URL: sim.url, SIM_API_KEY: API_KEY };
            const one = { profile, taskCount, idealS, runDir, data, sim, env };
            const result =
              tool === 'steward' ? await runSteward(ctx, one) : await runInspect(ctx, one);
            measured.push(result);
            console.log(`  ${summaryLine(result)}`);
            if (result.problem) failed = true;
          } catch (error) {
            failed = true;
            console.error(`  failed: ${error instanceof Error ? error.message : String(error)}`);
          } finally {
            await sim.close();
            sim = undefined;
          }
        }
      }
    }
  } finally {
    if (server) await stopDevServer(stewardDir);
    if (values.keep || failed) console.log(`kept ${dir} (logs, definitions, worker logs)`);
    else await fs.rm(dir, { recursive: true, force: true });
  }

  const title = `Steward vs Inspect AI eval_set${values.label ? ` (${values.label})` : ''}`;
  const text = [
    `${title}: ${samples} samples in all, one model call each, split over the tasks; both tools at their defaults`,
    ...header.map((h) => `  ${h}`),
    '',
    table(measured, tools),
    '',
    ...notes(measured),
  ].join('\n');
  console.log(`\n${text}`);
  await fs.mkdir(path.dirname(values.table), { recursive: true });
  await fs.writeFile(values.table, `${text}\n`);
  await writePlot(values.out, title, measured);
  console.log(`table: ${values.table}\nplot: ${values.out} (and .png, .vl.json beside it)`);
  if (failed) process.exitCode = 1;
}

interface OneRun {
  profile: ProfileName;
  taskCount: number;
  idealS: number;
  runDir: string;
  data: BenchData;
  sim: SimProcess;
  env: NodeJS.ProcessEnv;
}

async function runSteward(ctx: Context, one: OneRun): Promise<Measured> {
  const name = `peers-${one.profile}-${one.taskCount}`;
  const definition = await writeStewardDefinition(one.runDir, name, one.data.tasks);
  const logDir = path.join(one.runDir, 'steward-logs');
  const ran = await launchRun(one.sim, {
    definition,
    logDir,
    flags: [],
    env: { ...ctx.stewardEnv, ...one.env },
    cwd: one.runDir,
    deadlineMs: ctx.deadlineMs,
  });
  await saveRunOutput(one, 'steward', ran);
  const intervals: [number, number][] = [];
  for (const task of one.data.tasks) {
    const records = await readSampleRecords(logDir, task.name).catch(() => []);
    for (const r of records) intervals.push([Date.parse(r.started_at), Date.parse(r.completed_at)]);
  }
  const completed = ran.result?.tasks.reduce((sum, t) => sum + t.completed, 0) ?? intervals.length;
  return measuredOf(ctx, one, 'steward', ran, completed, intervals, () =>
    ran.code !== 0 ? `steward launch exited ${ran.code}:\n${ran.stderr.slice(-2000)}` : undefined,
  );
}

async function runInspect(ctx: Context, one: OneRun): Promise<Measured> {
  const name = `peers_${one.profile}_${one.taskCount}`;
  const tasksFile = await writeInspectTasks(one.runDir, name, one.data.tasks);
  const logDir = path.join(one.runDir, 'inspect-logs');
  const ran = await measuredRun(
    one.sim,
    ctx.python,
    // `--display none`: no terminal to draw on, and drawing would only cost the machine CPU.
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
      '--display',
      'none',
    ],
    { env: { ...ctx.inspectEnv, ...one.env }, cwd: one.runDir, deadlineMs: ctx.deadlineMs },
  );
  await saveRunOutput(one, 'inspect', ran);
  const { stdout } = await run(ctx.python, [READ_INSPECT_LOGS, logDir], {
    maxBuffer: 256 * 1024 * 1024,
  });
  const logs = JSON.parse(stdout) as {
    tasks: { name: string; status: string; samples: number; completed: number }[];
    intervals: [number, number][];
  };
  const completed = logs.tasks.reduce((sum, t) => sum + t.completed, 0);
  return measuredOf(ctx, one, 'inspect', ran, completed, logs.intervals, () => {
    if (ran.code !== 0) return `inspect eval-set exited ${ran.code}:\n${ran.stderr.slice(-2000)}`;
    const unfinished = logs.tasks.filter((t) => t.status !== 'success');
    return unfinished.length > 0
      ? `tasks not successful: ${unfinished.map((t) => `${t.name} ${t.status}`).join(', ')}`
      : undefined;
  });
}

/** Keeps what the provider saw, per second, and what the tool printed, beside its logs. */
async function saveRunOutput(one: OneRun, tool: Tool, ran: MeasuredProcess): Promise<void> {
  const stats = { ...ran.stats, in_flight_readings: ran.inFlightReadings };
  await fs.writeFile(path.join(one.runDir, `${tool}-provider-stats.json`), JSON.stringify(stats));
  await fs.writeFile(path.join(one.runDir, `${tool}-stdout.txt`), ran.stdout);
  await fs.writeFile(path.join(one.runDir, `${tool}-stderr.txt`), ran.stderr);
}

function measuredOf(
  ctx: Context,
  one: OneRun,
  tool: Tool,
  process: MeasuredProcess,
  completed: number,
  intervals: [number, number][],
  problemOf: () => string | undefined,
): Measured {
  const busyMs = intervals.reduce((sum, [start, end]) => sum + (end - start), 0);
  const firstRequest = process.stats.series.find((p) => p.requests > 0);
  let problem = process.stopped
    ? `stopped at the deadline (${ctx.deadlineMs / 1000} s)`
    : problemOf();
  if (!problem && completed < ctx.samples)
    problem = `${completed} of ${ctx.samples} samples completed`;
  return {
    profile: one.profile,
    tasks: one.taskCount,
    tool,
    process,
    idealS: one.idealS,
    completed,
    samples: ctx.samples,
    samplesInFlight: busyMs / process.wallMs,
    // The provider started just before the process; its series counts from its own start.
    firstCallS: firstRequest?.t,
    problem,
    datasetTokensPerCall: one.data.tokens / ctx.samples,
    loadAverage: os.loadavg()[0],
  };
}

/** Installs Inspect AI into its venv when it is not there yet; returns the venv's python. */
main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

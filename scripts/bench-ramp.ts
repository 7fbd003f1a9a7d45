/**
 * The ramp against pinned settings: the same eval set run three ways by `steward launch`
 * against the same simulated provider (capacity 120 concurrent samples, see `ramp/provider.ts`),
 * on a fresh Temporal dev server:
 *
 *   (a) the ramp (defaults: starts at 50, climbs toward 200 while the provider keeps up)
 *   (b) --max-samples 50 --max-connections 10
 *   (c) --max-samples 200
 *
 * Prints wall time against the ideal time (model requests ÷ the provider's sustainable rate),
 * the share of requests answered 429 and the mean in flight at the provider, writes the table to
 * bench/ramp-table.txt, and plots run (a) to bench/ramp.svg.
 *
 *   npm run bench:ramp
 *   npm run bench:ramp -- --samples 1500 --pinned-deadline 300 --only a,c --keep
 *
 * Run (b) is bounded by its 10 connections to a twelfth of the provider's rate, so finishing it
 * would take longer than the rest of the bench together; it runs last and is stopped at
 * `--pinned-deadline` seconds (default 480), and its wall time is then projected from the
 * samples it completed (its rate is flat by construction: 10 requests at a time, always).
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { startSimProvider, type SimProvider } from '../src/sim/provider';
import { throwawayDevConfig } from '../src/temporal/config';
import { ensureDevServer, stopDevServer } from '../src/temporal/devserver';
import { readSampleRecords } from '../test/helpers/results';
import { freePort } from '../test/setup/global-setup';
import { TASK, writeBenchEvalSets } from './ramp/eval-set';
import { countCompleted, launchRun, readRampHistory, ROOT, type LaunchRun } from './ramp/launch';
import {
  climbEndSeconds,
  connectionSteps,
  mean,
  rateLimitedShare,
  setpointSteps,
} from './ramp/measure';
import { svgToPng } from '../src/dashboard/render';
import { renderRampPlot, rampPlotSpec, type RampPlotInput } from './ramp/plot';
import {
  API_KEY,
  PROVIDER,
  STEPS_PER_SAMPLE,
  meanLatencySeconds,
  simEnvironment,
  sustainableRate,
} from './ramp/provider';

const TEND_INTERVAL_S = 5;
/** The ramp's starting setpoint, the default of `samples_ramp`. */
const RAMP_START = 50;

interface RunSpec {
  key: 'a' | 'b' | 'c';
  label: string;
  name: string;
  flags: string[];
  /** Stopped at the pinned deadline when set. */
  bounded?: boolean;
}

const RUNS: RunSpec[] = [
  { key: 'a', label: '(a) ramp (defaults)', name: 'bench-ramp', flags: [] },
  {
    key: 'b',
    label: '(b) max_samples 50, max_connections 10',
    name: 'bench-pinned-50',
    flags: ['--max-samples', '50', '--max-connections', '10'],
    bounded: true,
  },
  {
    key: 'c',
    label: '(c) max_samples 200',
    name: 'bench-pinned-200',
    flags: ['--max-samples', '200'],
  },
];

/** Order of execution: the run that may be stopped goes last, so nothing it leaves behind counts. */
const ORDER: RunSpec['key'][] = ['a', 'c', 'b'];

interface Measured {
  spec: RunSpec;
  run: LaunchRun;
  completed: number;
  /** Wall time, or the projection to all samples when the run was stopped. */
  wallS: number;
  climbEndS?: number;
  /** Samples running on average (from their records): each holds a sandbox in an agentic eval. */
  samplesRunning: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      samples: { type: 'string', default: '3000' },
      'pinned-deadline': { type: 'string', default: '480' },
      only: { type: 'string', default: 'a,b,c' },
      table: { type: 'string', default: path.join(ROOT, 'bench', 'ramp-table.txt') },
      out: { type: 'string', default: path.join(ROOT, 'bench', 'ramp.svg') },
      keep: { type: 'boolean', default: false },
    },
  });
  const samples = Number(values.samples);
  const deadlineMs = Number(values['pinned-deadline']) * 1000;
  const only = new Set(values.only.split(','));
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'steward-bench-ramp-'));
  const definitions = await writeBenchEvalSets(
    dir,
    RUNS.map((r) => r.name),
    samples,
  );

  const stewardDir = path.join(dir, '.steward');
  const server = await ensureDevServer(throwawayDevConfig(dir, await freePort()), { stewardDir });
  const provider = await startSimProvider({ ...PROVIDER, apiKey: API_KEY });
  const env = {
    ...withoutStewardSettings(process.env),
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_NAMESPACE: server.namespace,
    STEWARD_HOME: stewardDir,
    ...simEnvironment(provider.url),
  };
  console.log(describeSetup(samples));

  const measured: Measured[] = [];
  const failed: string[] = [];
  const context = { provider, definitions, dir, env, samples, deadlineMs, plot: values.out };
  try {
    for (const key of ORDER) {
      const spec = RUNS.find((r) => r.key === key)!;
      if (!only.has(key)) continue;
      console.log(`running ${spec.label} ...`);
      try {
        const result = await measure(spec, context);
        measured.push(result);
        console.log(`  ${summaryLine(result)}`);
      } catch (error) {
        // Keep going: the other runs still say something, and the kept logs say what broke.
        failed.push(spec.label);
        console.error(`  failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  } finally {
    await provider.close();
    await stopDevServer(stewardDir);
    if (values.keep || failed.length > 0)
      console.log(`kept ${dir} (worker logs in .steward/workers)`);
    else await fs.rm(dir, { recursive: true, force: true });
  }

  measured.sort((x, y) => x.spec.key.localeCompare(y.spec.key));
  const text = [
    table(measured, samples),
    ...measured
      .filter((m) => m.run.stopped)
      .map(
        (m) =>
          `* ${m.spec.label} was stopped at the deadline, ${(m.run.wallMs / 1000).toFixed(0)} s in, with ` +
          `${m.run.stats.by_status['200'] ?? 0} of ${samples * STEPS_PER_SAMPLE} model requests answered ` +
          `(${m.completed} samples completed); its wall time is projected at that rate.`,
      ),
  ].join('\n');
  console.log(`\n${text}`);
  await fs.mkdir(path.dirname(values.table), { recursive: true });
  await fs.writeFile(values.table, `${text}\n`);
  console.log(`table: ${values.table}`);
  if (measured.some((m) => m.spec.key === 'a')) {
    console.log(`plot: ${values.out} (and .png, .vl.json beside it)`);
  }
  if (failed.length > 0) {
    console.error(`failed: ${failed.join('; ')}`);
    process.exitCode = 1;
  }
}

interface BenchContext {
  provider: SimProvider;
  definitions: Record<string, string>;
  dir: string;
  env: NodeJS.ProcessEnv;
  samples: number;
  deadlineMs: number;
  plot: string;
}

/** Runs one setting and measures it; for the ramp, also writes the plot. */
async function measure(spec: RunSpec, ctx: BenchContext): Promise<Measured> {
  await settle(ctx.provider);
  const logDir = path.join(ctx.dir, 'logs', spec.name);
  const run = await launchRun(ctx.provider, {
    definition: ctx.definitions[spec.name],
    logDir,
    flags: [...spec.flags, '--tend-interval', String(TEND_INTERVAL_S)],
    env: ctx.env,
    cwd: ctx.dir,
    deadlineMs: spec.bounded ? ctx.deadlineMs : undefined,
  });
  if (run.code !== 0 && !run.stopped) {
    throw new Error(`steward launch exited ${run.code}\n${run.stderr.slice(-4000)}`);
  }
  const completed = run.result?.tasks[0]?.completed ?? (await countCompleted(logDir, TASK));
  // A stopped run is projected from the model requests it had answered, which counts the work
  // of the samples still in flight too.
  const answered = run.stats.by_status['200'] ?? 0;
  const wallS = run.stopped
    ? (run.wallMs / 1000) * ((ctx.samples * STEPS_PER_SAMPLE) / Math.max(1, answered))
    : run.wallMs / 1000;
  const records = await readSampleRecords(logDir, TASK);
  const busyMs = records.reduce(
    (sum, r) => sum + Date.parse(r.completed_at) - Date.parse(r.started_at),
    0,
  );
  const samplesRunning = busyMs / run.wallMs;
  const result: Measured = { spec, run, completed, wallS, samplesRunning };
  if (spec.key !== 'a') return result;

  const history = await readRampHistory(logDir);
  const setpoint = setpointSteps(history, TASK, run.startedAt, RAMP_START);
  result.climbEndS = climbEndSeconds(setpoint, TEND_INTERVAL_S);
  console.log(`  setpoint: ${setpoint.map((s) => `${s.value}@${s.t.toFixed(0)}s`).join(' → ')}`);
  await writePlot(ctx.plot, {
    title:
      `Steward's ramp against a provider of ${PROVIDER.concurrency} concurrent requests ` +
      `(${ctx.samples} samples × ${STEPS_PER_SAMPLE} calls, tend every ${TEND_INTERVAL_S} s)`,
    series: run.stats.series,
    setpoint,
    connections: connectionSteps(history, TASK, run.startedAt),
    capacity: PROVIDER.concurrency,
    endSeconds: run.wallMs / 1000,
    climbEndSeconds: result.climbEndS,
  });
  return result;
}

function summaryLine(m: Measured): string {
  const { stats } = m.run;
  return [
    `${m.run.stopped ? 'stopped at the deadline after' : 'done in'} ${(m.run.wallMs / 1000).toFixed(1)} s`,
    `${m.completed} samples`,
    `${stats.requests} requests, ${stats.rate_limited} answered 429`,
    `mean in flight ${mean(m.run.inFlightReadings).toFixed(1)}, peak ${stats.peak_in_flight}`,
  ].join(', ');
}

function describeSetup(samples: number): string {
  const rate = sustainableRate(PROVIDER);
  return [
    `provider: ${PROVIDER.concurrency} concurrent requests, latency ${PROVIDER.latencyMs}+U[0,${PROVIDER.jitterMs}] ms ` +
      `(mean ${meanLatencySeconds(PROVIDER)} s), no rpm/tpm limit`,
    `sustainable rate = concurrency / mean latency = ${PROVIDER.concurrency} / ${meanLatencySeconds(PROVIDER)} s = ${rate.toFixed(1)} requests/s`,
    `eval set: 1 task × ${samples} samples × ${STEPS_PER_SAMPLE} generate calls = ${samples * STEPS_PER_SAMPLE} model requests; ` +
      `ideal time = requests / rate = ${idealSeconds(samples).toFixed(1)} s; tend interval ${TEND_INTERVAL_S} s`,
  ].join('\n');
}

function idealSeconds(samples: number): number {
  return (samples * STEPS_PER_SAMPLE) / sustainableRate(PROVIDER);
}

function table(measured: Measured[], samples: number): string {
  const ideal = idealSeconds(samples);
  const percent = (share: number) => `${(share * 100).toFixed(2)}%`;
  const rows = [
    [
      'run',
      'samples done',
      'wall',
      'ideal',
      'wall/ideal',
      '429 share',
      '429 after climb',
      'mean in flight',
      'samples running',
      'samples idle',
    ],
    ...measured.map((m) => [
      m.spec.label,
      `${m.completed}/${samples}`,
      `${m.wallS.toFixed(1)} s${m.run.stopped ? '*' : ''}`,
      `${ideal.toFixed(1)} s`,
      `${(m.wallS / ideal).toFixed(2)}x`,
      percent(m.run.stats.rate_limited / Math.max(1, m.run.stats.requests)),
      m.climbEndS === undefined
        ? '-'
        : `${percent(rateLimitedShare(m.run.stats.series, m.climbEndS))} (from ${m.climbEndS.toFixed(0)} s)`,
      mean(m.run.inFlightReadings).toFixed(1),
      m.samplesRunning.toFixed(1),
      // A sample without a request at the provider waits for a connection or a retry: idle.
      percent(Math.max(0, 1 - mean(m.run.inFlightReadings) / m.samplesRunning)),
    ]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const line = (r: string[]) =>
    r
      .map((cell, i) => cell.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(rows[0]), line(widths.map((w) => '-'.repeat(w))), ...rows.slice(1).map(line)].join(
    '\n',
  );
}

async function writePlot(file: string, input: RampPlotInput): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  const svg = await renderRampPlot(input);
  await fs.writeFile(file, svg);
  await fs.writeFile(file.replace(/\.svg$/, '.png'), svgToPng(svg));
  // The spec with its data, for the Vega editor or `vl2png` elsewhere.
  await fs.writeFile(
    file.replace(/\.svg$/, '.vl.json'),
    `${JSON.stringify(rampPlotSpec(input), null, 1)}\n`,
  );
}

/** Waits until the previous run's requests have left the provider. */
async function settle(provider: SimProvider): Promise<void> {
  for (let i = 0; i < 100 && provider.stats().in_flight > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The bench runs on defaults: the caller's `STEWARD_*` settings and Temporal target do not apply. */
function withoutStewardSettings(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(env).filter(([k]) => !k.startsWith('STEWARD_') && !k.startsWith('TEMPORAL_')),
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

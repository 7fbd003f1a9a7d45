/**
 * The ramp, live, in one command: starts the simulated provider (120 concurrent requests, see
 * `ramp/provider.ts`), launches `examples/ramp-demo.yaml` against it with a 5 s tend on the
 * project's Temporal dev server (as `npx steward launch` does), and prints the ramp history as
 * it happens, read from `steward status --json` every few seconds: the climb from 50, the
 * reversal on pushback, and where the setpoint settles.
 *
 *   npm run demo:ramp
 */
import { execFile, spawn } from 'node:child_process';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { startSimProvider } from '../src/sim/provider';
import type { EvalSetStatus, RampHistoryEntry } from '../src/workflows/types';
import { readRampHistory, ROOT, STEWARD_BIN } from './ramp/launch';
import {
  API_KEY,
  PROVIDER,
  STEPS_PER_SAMPLE,
  simEnvironment,
  sustainableRate,
} from './ramp/provider';

const NAME = 'ramp-demo';
const DEFINITION = path.join(ROOT, 'examples', 'ramp-demo.yaml');
const TEND_INTERVAL_S = 5;
const POLL_MS = 3_000;
/** Longest gap between two status lines when nothing changes. */
const QUIET_MS = 15_000;

async function main(): Promise<void> {
  const provider = await startSimProvider({ ...PROVIDER, apiKey: API_KEY });
  // A fresh log directory, so a second demo runs again rather than finding everything done.
  const logDir = path.join(
    ROOT,
    'logs',
    `${NAME}-${new Date().toISOString().replace(/[:.]/g, '-')}`,
  );
  const startedAt = Date.now();
  const say = (line: string, at = Date.now()) =>
    console.log(`+${((at - startedAt) / 1000).toFixed(0).padStart(4)}s  ${line}`);
  console.log(
    [
      `simulated provider at ${provider.url}: ${PROVIDER.concurrency} requests at once, ` +
        `${PROVIDER.latencyMs}-${PROVIDER.latencyMs + PROVIDER.jitterMs} ms each ` +
        `(${sustainableRate(PROVIDER).toFixed(0)} requests/s, about ${PROVIDER.concurrency} samples of ` +
        `${STEPS_PER_SAMPLE} calls in flight)`,
      `launching ${path.relative(ROOT, DEFINITION)} with --tend-interval ${TEND_INTERVAL_S}: ` +
        'the setpoint starts at 50 and may climb toward 200 while the provider keeps up',
      '',
    ].join('\n'),
  );

  const launch = spawn(
    process.execPath,
    [
      STEWARD_BIN,
      'launch',
      DEFINITION,
      '--tend-interval',
      String(TEND_INTERVAL_S),
      '--log-dir',
      logDir,
    ],
    {
      cwd: ROOT,
      env: { ...withoutKnobs(process.env), ...simEnvironment(provider.url) },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let result = '';
  launch.stdout.on('data', (d: Buffer) => (result += d.toString()));
  launch.stderr.on('data', (d: Buffer) => {
    // Its own progress lines would drown the ramp; its other news (starting Temporal) is kept.
    for (const line of d.toString().split('\n')) {
      if (line.trim() && !line.startsWith(`[${NAME}]`)) say(line.trim());
    }
  });
  const exited = new Promise<number | null>((resolve) => launch.on('close', resolve));
  // Ctrl-C reaches the launch too (same process group); wait for it to stop cleanly.
  process.on('SIGINT', () => undefined);

  const shown = new Set<string>();
  const show = (entry: RampHistoryEntry) => {
    const key = JSON.stringify(entry);
    if (shown.has(key)) return;
    shown.add(key);
    say(`ramp   ${describeEntry(entry)}`, Date.parse(entry.time));
  };
  let done = false;
  void exited.then(() => (done = true));
  let last = provider.stats();
  let lastLine = { text: '', at: 0 };
  while (!done) {
    await Promise.race([sleep(POLL_MS), exited]);
    const askedAt = Date.now();
    const status = await readStatus();
    if (!status || done) continue;
    const stats = provider.stats();
    for (const entry of status.ramp_history) show(entry);
    for (const task of status.tasks.filter((t) => t.state === 'running')) {
      const state =
        `${task.name}: setpoint ${task.setpoint}, connections ${task.connection_limit ?? '-'}, ` +
        `${task.ramp_state}${task.ramp_reason ? ` (${task.ramp_reason})` : ''}`;
      // A line when the ramp's state changes, else one every few polls: progress, not noise.
      if (state === lastLine.text && askedAt - lastLine.at < QUIET_MS) continue;
      lastLine = { text: state, at: askedAt };
      say(
        `${state}; ${task.in_flight} in flight, ${task.completed}/${task.samples} done; provider: ` +
          `${stats.in_flight} in flight, ${stats.rate_limited - last.rate_limited} of ` +
          `${stats.requests - last.requests} requests answered 429 since the last line`,
        askedAt,
      );
      last = stats;
    }
  }

  const code = await exited;
  // Whatever changed between the last look and the end is in the log directory.
  const history = await readRampHistory(logDir);
  for (const entry of history) show(entry);
  const setpoints = history.filter((e) => e.kind === 'setpoint');
  const stats = provider.stats();
  await provider.close();
  console.log(result.trimEnd());
  console.log(
    [
      '',
      `setpoint: ${[setpoints[0]?.from ?? 50, ...setpoints.map((e) => e.to)].join(' → ')}`,
      `provider: ${stats.requests} requests, ${stats.rate_limited} answered 429 ` +
        `(${((100 * stats.rate_limited) / Math.max(1, stats.requests)).toFixed(1)}%), ` +
        `peak ${stats.peak_in_flight} in flight`,
      `ramp history: ${path.join(logDir, 'ramp-history.jsonl')}`,
    ].join('\n'),
  );
  process.exitCode = code ?? 1;
}

async function readStatus(): Promise<EvalSetStatus | undefined> {
  try {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [STEWARD_BIN, 'status', NAME, '--json'],
      { cwd: ROOT, env: withoutKnobs(process.env) },
    );
    const status = JSON.parse(stdout) as Partial<EvalSetStatus>;
    // Before the workflow starts and after it finishes, status has no live tasks.
    return Array.isArray(status.tasks) && Array.isArray(status.ramp_history)
      ? (status as EvalSetStatus)
      : undefined;
  } catch {
    return undefined;
  }
}

function describeEntry(entry: RampHistoryEntry): string {
  const change =
    entry.kind === 'setpoint' || entry.kind === 'connections'
      ? `${entry.kind} ${entry.from ?? '-'} → ${entry.to ?? '-'}`
      : entry.kind;
  return `${entry.task}: ${change}: ${entry.reason}${entry.by ? ` (by ${entry.by})` : ''}`;
}

/** The demo shows the defaults: knobs in the caller's environment would pin or bend them. */
function withoutKnobs(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const kept = new Set(['STEWARD_HOME', 'STEWARD_TEMPORAL_CONFIG']);
  return Object.fromEntries(
    Object.entries(env).filter(([k]) => !k.startsWith('STEWARD_') || kept.has(k)),
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

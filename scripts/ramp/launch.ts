/**
 * One measured run: `steward launch` (or any command) as a user types it, against a simulated
 * provider, with the provider's in-flight count read throughout.
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { SimStats } from '../../src/sim/provider';
import type { RampHistoryEntry } from '../../src/workflows/types';

export const ROOT = path.resolve(__dirname, '..', '..');
export const STEWARD_BIN = path.join(ROOT, 'bin', 'steward.js');

/** How often the provider's in-flight count is read for the mean. */
const READ_MS = 250;

export interface LaunchRunOptions {
  definition: string;
  logDir: string;
  /** Extra `steward launch` flags, e.g. `['--max-samples', '200']`. */
  flags: string[];
  env: NodeJS.ProcessEnv;
  /** Where the CLI runs: it reads `_steward.yaml` there. */
  cwd: string;
  /** Stop the run (SIGTERM, as Ctrl-C would) when it has not finished by then. */
  deadlineMs?: number;
  /** Called with the process's id once it is spawned (to watch its memory, say). */
  onSpawn?: (pid: number) => void;
}

/**
 * What a measured run reads from the provider: the in-process `startSimProvider`, or a
 * `steward sim-provider` process read over HTTP (`scripts/peers/sim-process.ts`).
 */
export interface ProviderProbe {
  stats(): SimStats | Promise<SimStats>;
  /** Zeroes the counters at the start; a provider started afresh for each run has nothing to zero. */
  resetStats?(): void;
}

export interface MeasuredProcess {
  /** When the run started (ms since the epoch); the provider's stats were reset then. */
  startedAt: number;
  /** Until the process exited, or until the deadline when it was stopped. */
  wallMs: number;
  code: number | null;
  /** The deadline passed and the run was stopped before it finished. */
  stopped: boolean;
  /** Everything the provider saw during {@link wallMs} (not the shutdown after a stop). */
  stats: SimStats;
  /** The provider's in-flight count, read every {@link READ_MS}. */
  inFlightReadings: number[];
  stdout: string;
  stderr: string;
}

export interface LaunchRun extends MeasuredProcess {
  /** What `launch --json` printed, when it finished. */
  result?: { status: string; tasks: { name: string; samples: number; completed: number }[] };
}

/** Resets the provider's stats, runs `steward launch --json` and waits for it to exit. */
export async function launchRun(
  provider: ProviderProbe,
  options: LaunchRunOptions,
): Promise<LaunchRun> {
  const run = await measuredRun(
    provider,
    process.execPath,
    [
      STEWARD_BIN,
      'launch',
      options.definition,
      '--json',
      '--log-dir',
      options.logDir,
      ...options.flags,
    ],
    options,
  );
  return { ...run, result: lastJson(run.stdout) };
}

/**
 * Runs a command as a user would (any tool: `steward launch`, a peer's CLI), reading the
 * provider's in-flight count until it exits or the deadline stops it.
 */
export function measuredRun(
  provider: ProviderProbe,
  command: string,
  args: string[],
  options: Pick<LaunchRunOptions, 'env' | 'cwd' | 'deadlineMs' | 'onSpawn'>,
): Promise<MeasuredProcess> {
  provider.resetStats?.();
  const startedAt = Date.now();
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid !== undefined) options.onSpawn?.(child.pid);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const inFlightReadings: number[] = [];
  const reader = setInterval(() => {
    // A reading over HTTP may come back after the run ended; it no longer counts then.
    void Promise.resolve(provider.stats()).then(
      (s) => {
        if (end === undefined) inFlightReadings.push(s.in_flight);
      },
      () => undefined,
    );
  }, READ_MS);
  let end: Promise<{ wallMs: number; stats: SimStats }> | undefined;
  const finish = () => {
    if (end) return end;
    clearInterval(reader);
    const wallMs = Date.now() - startedAt;
    end = Promise.resolve(provider.stats()).then((stats) => ({ wallMs, stats }));
    return end;
  };
  const deadline =
    options.deadlineMs === undefined
      ? undefined
      : setTimeout(() => {
          void finish();
          child.kill('SIGTERM');
        }, options.deadlineMs);

  return new Promise((resolve, reject) => {
    child.on('error', (error) => {
      clearInterval(reader);
      clearTimeout(deadline);
      reject(error);
    });
    child.on('close', (code) => {
      const stopped = end !== undefined;
      clearTimeout(deadline);
      finish().then(
        ({ wallMs, stats }) =>
          resolve({ startedAt, wallMs, code, stopped, stats, inFlightReadings, stdout, stderr }),
        reject,
      );
    });
  });
}

/**
 * The summary `launch --json` prints last. The SDK's native core may log to stdout too, so only
 * the final pretty-printed object (from a line that is `{` alone) is read.
 */
function lastJson(stdout: string): LaunchRun['result'] {
  const start = stdout.lastIndexOf('\n{\n');
  const text = start >= 0 ? stdout.slice(start + 1) : stdout;
  try {
    return JSON.parse(text) as LaunchRun['result'];
  } catch {
    return undefined;
  }
}

/** The eval set's ramp history, `[]` when it wrote none (a pinned run). */
export async function readRampHistory(logDir: string): Promise<RampHistoryEntry[]> {
  let text: string;
  try {
    text = await fs.readFile(path.join(logDir, 'ramp-history.jsonl'), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return text
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as RampHistoryEntry);
}

/** Samples of `task` recorded as completed in the log directory. */
export async function countCompleted(logDir: string, task: string): Promise<number> {
  try {
    const files = await fs.readdir(path.join(logDir, task, 'samples'));
    return files.filter((f) => f.endsWith('.json')).length;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
}

/**
 * One measured run: `steward launch` as a user types it, against the in-process simulated
 * provider, with the provider's in-flight count read throughout.
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { SimProvider, SimStats } from '../../src/sim/provider';
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
}

export interface LaunchRun {
  /** When the run started (ms since the epoch); the provider's stats were reset then. */
  startedAt: number;
  /** Until the CLI exited, or until the deadline when it was stopped. */
  wallMs: number;
  code: number | null;
  /** The deadline passed and the run was stopped before it finished. */
  stopped: boolean;
  /** Everything the provider saw during {@link wallMs} (not the shutdown after a stop). */
  stats: SimStats;
  /** The provider's in-flight count, read every {@link READ_MS}. */
  inFlightReadings: number[];
  /** What `launch --json` printed, when it finished. */
  result?: { status: string; tasks: { name: string; samples: number; completed: number }[] };
  stderr: string;
}

/** Resets the provider's stats, runs `steward launch --json` and waits for it to exit. */
export function launchRun(provider: SimProvider, options: LaunchRunOptions): Promise<LaunchRun> {
  provider.resetStats();
  const startedAt = Date.now();
  const child = spawn(
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
    { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const inFlightReadings: number[] = [];
  const reader = setInterval(() => inFlightReadings.push(provider.stats().in_flight), READ_MS);
  let end: { wallMs: number; stats: SimStats } | undefined;
  const finish = () => {
    clearInterval(reader);
    end ??= { wallMs: Date.now() - startedAt, stats: provider.stats() };
    return end;
  };
  const deadline =
    options.deadlineMs === undefined
      ? undefined
      : setTimeout(() => {
          finish();
          child.kill('SIGTERM');
        }, options.deadlineMs);

  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      const stopped = end !== undefined;
      const { wallMs, stats } = finish();
      clearTimeout(deadline);
      resolve({
        startedAt,
        wallMs,
        code,
        stopped,
        stats,
        inFlightReadings,
        result: lastJson(stdout),
        stderr,
      });
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

/**
 * `steward sim-provider` as its own process, as a user runs it, read over its `GET /stats`
 * endpoint. The peers bench starts one afresh for every run, so each tool meets full buckets
 * and counters that start with it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { SimStats } from '../../src/sim/provider';
import { STEWARD_BIN, type ProviderProbe } from '../ramp/launch';

/** A provider's limits and timing, as `steward sim-provider` flags take them. */
export interface SimLimits {
  concurrency?: number;
  rpm?: number;
  tpm?: number;
  latencyMs: number;
  jitterMs: number;
  seed: number;
}

export interface SimProcess extends ProviderProbe {
  /** Base URL for an OpenAI client, e.g. `http://127.0.0.1:4000/v1`. */
  url: string;
  stats(): Promise<SimStats>;
  /** Stops it (SIGTERM, as Ctrl-C would) and waits for it to exit. */
  close(): Promise<void>;
}

const STARTUP_MS = 30_000;

export async function startSimProcess(limits: SimLimits): Promise<SimProcess> {
  const flags: [string, number | undefined][] = [
    ['--concurrency', limits.concurrency],
    ['--rpm', limits.rpm],
    ['--tpm', limits.tpm],
    ['--latency-ms', limits.latencyMs],
    ['--jitter-ms', limits.jitterMs],
    ['--seed', limits.seed],
  ];
  const child = spawn(
    process.execPath,
    [
      STEWARD_BIN,
      'sim-provider',
      '--port',
      '0',
      ...flags.flatMap(([flag, value]) => (value === undefined ? [] : [flag, String(value)])),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const url = await listeningUrl(child);
  const statsUrl = new URL('/stats', url).toString();
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return {
    url,
    async stats() {
      const response = await fetch(statsUrl);
      if (!response.ok) throw new Error(`GET ${statsUrl}: ${response.status}`);
      return (await response.json()) as SimStats;
    },
    async close() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Waits for the banner's "listening on <url>" line. */
function listeningUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    const fail = (why: string) => {
      clearTimeout(timer);
      child.kill('SIGTERM');
      reject(new Error(`steward sim-provider ${why}\n${stderr.slice(-2000)}`));
    };
    const timer = setTimeout(() => fail(`did not start within ${STARTUP_MS} ms`), STARTUP_MS);
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout?.on('data', (d: Buffer) => {
      stdout += d.toString();
      const found = /listening on (http:\/\/\S+)/.exec(stdout);
      if (found) {
        clearTimeout(timer);
        // The rest of what it prints (its summary at exit) is not needed.
        child.stdout?.removeAllListeners('data');
        child.stdout?.resume();
        resolve(found[1]);
      }
    });
    child.once('error', (error) => fail(`failed: ${error.message}`));
    child.once('close', (code) => fail(`exited ${code} before listening`));
  });
}

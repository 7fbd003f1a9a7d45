/**
 * One round of the fault soak (`npm run soak`, test/soak.test.ts): an eval set of one-call
 * samples on a dev server of its own, launched through the CLI, under a seeded random schedule of
 * SIGKILLs (a task worker, the launch alone, the whole launch, the dev server), each at a random
 * moment. The run is then finished, and checked: every sample recorded exactly once, the samples
 * that called the provider again no more than those in flight at the kills, every history replaying.
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { startSimProvider } from '../../src/sim/provider';
import { mulberry32 } from '../../src/util/random';
import { STEWARD_BIN, tempDir } from '../../test/helpers/cli';
import { processTree, runningOf, waitFor, workerPids } from '../../test/helpers/processes';
import { readSampleRecords } from '../../test/helpers/results';
import { STEWARD_WORKFLOW_TYPES } from '../../test/helpers/replay';
import { startOwnDevServer, timedCallsScript } from '../../test/helpers/server';

export const KILL_KINDS = ['worker', 'launch alone', 'whole launch', 'dev server'] as const;
export type KillKind = (typeof KILL_KINDS)[number];

export interface RoundOptions {
  round: number;
  seed: number;
  tasks: number;
  samples: number;
  kills: number;
  /** Per task. */
  maxSamples: number;
  log?: (line: string) => void;
}

export interface RoundResult {
  round: number;
  kills: Record<KillKind, number>;
  samples: number;
  recorded: number;
  duplicates: number;
  missing: number;
  /** Samples that called the provider more than once, and the bound: in flight at the kills. */
  recalled: number;
  inFlightAtKills: number;
  /** Workers still running 30 s after the launch above them was killed alone. */
  orphans: number;
  /** Activations the guard refused (src/workflows/sequenced-only.ts), from the workers' logs. */
  refused: number;
  replayedRuns: number;
  seconds: number;
}

const LATENCY_MS = 2_000;
const JITTER_MS = 500;
/** Low, so tasks and the eval set continue as new several times a round. */
const SUGGEST_CONTINUE_AS_NEW = 400;
/** What a worker logs when the guard refuses an activation (src/workflows/sequenced-only.ts). */
const REFUSAL = 'reached the workflow outside a workflow task';

export async function soakRound(options: RoundOptions): Promise<RoundResult> {
  const log = options.log ?? (() => undefined);
  const rand = mulberry32(options.seed * 1_000 + options.round);
  const started = Date.now();
  const dir = await tempDir('steward-soak-');
  // The dev server's files and the launches' STEWARD_HOME (its fleet's logs among them).
  const stewardHome = path.join(dir, 'temporal');
  const server = await startOwnDevServer(stewardHome, {
    'limit.historyCount.suggestContinueAsNew': SUGGEST_CONTINUE_AS_NEW,
  });
  const calls = new Map<string, number[]>();
  const sim = await startSimProvider({
    latencyMs: LATENCY_MS,
    jitterMs: JITTER_MS,
    script: timedCallsScript(calls),
  });
  const name = `soak-${options.seed}-${options.round}`;
  const tasks = Array.from({ length: options.tasks }, (_, t) => `t${t + 1}`);
  const ids = tasks.flatMap((task) =>
    Array.from({ length: options.samples }, (_, i) => `${task}-${i + 1}`),
  );
  const file = await writeDefinition(dir, name, tasks, options);
  const logDir = path.join(dir, 'logs');
  const env = { ...server.env, SIM_BASE_URL: sim.url, SIM_API_KEY: 'sim' };
  const kills = Object.fromEntries(KILL_KINDS.map((k) => [k, 0])) as Record<KillKind, number>;
  let inFlightAtKills = 0;
  let orphans = 0;
  let refused = 0;
  const launched: Launcher[] = [];
  const relaunch = (): Launcher => {
    const next = launch(file, logDir, dir, env);
    launched.push(next);
    return next;
  };
  let launcher = relaunch();
  let closed = false;
  try {
    for (let k = 0; k < options.kills; k++) {
      await sleep(2_000 + rand() * 6_000);
      if (launcher.done()) break;
      const kind = KILL_KINDS[Math.floor(rand() * KILL_KINDS.length)]!;
      const recorded = await recordedIds(logDir, tasks);
      const inFlight = ids.filter((id) => calls.has(id) && !recorded.has(id)).length;
      inFlightAtKills += inFlight;
      kills[kind]++;
      log(`round ${options.round}: kill ${k + 1}, ${kind}, ${inFlight} samples in flight`);
      switch (kind) {
        case 'worker': {
          // Drawn whether or not a worker runs now, so the schedule's later draws do not move.
          const pick = rand();
          const workers = await workerPids(launcher.pid);
          if (workers.length > 0)
            process.kill(workers[Math.floor(pick * workers.length)]!, 'SIGKILL');
          break;
        }
        case 'launch alone': {
          const workers = await workerPids(launcher.pid);
          process.kill(launcher.pid, 'SIGKILL');
          await launcher.exited;
          // Workers stop with their own supervisor.
          await waitFor(
            'the workers to stop',
            async () => ((await runningOf(workers)).length === 0 ? true : undefined),
            { timeoutMs: 30_000 },
          ).catch(async () => {
            orphans += (await runningOf(workers)).length;
            for (const pid of await runningOf(workers)) process.kill(pid, 'SIGKILL');
          });
          launcher = relaunch();
          break;
        }
        case 'whole launch': {
          for (const p of await processTree(launcher.pid)) killQuietly(p.pid);
          await launcher.exited;
          launcher = relaunch();
          break;
        }
        case 'dev server': {
          await server.kill();
          await sleep(1_000 + rand() * 2_000);
          await server.restart();
          break;
        }
      }
    }
    // The run finishes; a launch that stopped (its Temporal gone too long, say) is launched again.
    for (let attempt = 0; ; attempt++) {
      const { code } = await launcher.exited;
      if (code === 0) break;
      if (attempt >= 3) {
        throw new Error(
          `round ${options.round}: the launch exited ${code}: ${launcher.stderr().slice(-3_000)}`,
        );
      }
      log(
        `round ${options.round}: the launch exited ${code}; launching again. It said: ${launcher.stderr().slice(-1_500)}`,
      );
      launcher = relaunch();
    }
    const records = (
      await Promise.all(tasks.map((task) => readSampleRecords(logDir, task)))
    ).flat();
    const unique = new Set(records.map((r) => String(r.sample_id)));
    // Every workflow's history, samples' included.
    const replayed = await server.close({ types: STEWARD_WORKFLOW_TYPES });
    // The guard's refusals are logged by the processes that made them: an eval set's by its
    // launch (the control worker), a task's by its worker process, into the fleet's logs.
    const workerLogs = path.join(stewardHome, 'workers');
    const logs = [...launched.map((each) => each.stderr())];
    for (const name of await fs.readdir(workerLogs).catch(() => [])) {
      logs.push(await fs.readFile(path.join(workerLogs, name), 'utf8'));
    }
    for (const text of logs) refused += text.split(REFUSAL).length - 1;
    closed = true;
    return {
      round: options.round,
      kills,
      samples: ids.length,
      recorded: records.length,
      duplicates: records.length - unique.size,
      missing: ids.filter((id) => !unique.has(id)).length,
      recalled: ids.filter((id) => (calls.get(id)?.length ?? 0) > 1).length,
      inFlightAtKills,
      orphans,
      refused,
      replayedRuns: replayed.runs,
      seconds: Math.round((Date.now() - started) / 1000),
    };
  } finally {
    for (const p of await processTree(launcher.pid)) killQuietly(p.pid);
    await sim.close();
    if (!closed) await server.close().catch(() => undefined);
    await fs.rm(dir, { recursive: true, force: true });
  }
}

async function writeDefinition(
  dir: string,
  name: string,
  tasks: string[],
  options: RoundOptions,
): Promise<string> {
  for (const task of tasks) {
    const lines = Array.from({ length: options.samples }, (_, i) =>
      JSON.stringify({
        id: `${task}-${i + 1}`,
        input: `Sample ${task}-${i + 1}.\nANSWER: ${i}`,
        target: String(i),
      }),
    );
    await fs.writeFile(path.join(dir, `${task}.jsonl`), `${lines.join('\n')}\n`);
  }
  const file = path.join(dir, 'evalset.yaml');
  await fs.writeFile(
    file,
    stringify({
      name,
      model: 'openai-api/sim/soak',
      max_samples: options.maxSamples,
      tend_interval: 2,
      tasks: tasks.map((task) => ({ name: task, dataset: `${task}.jsonl`, scorer: 'match' })),
    }),
  );
  return file;
}

interface Launcher {
  pid: number;
  exited: Promise<{ code: number | null }>;
  done: () => boolean;
  stderr: () => string;
}

function launch(file: string, logDir: string, cwd: string, env: NodeJS.ProcessEnv): Launcher {
  const child = spawn(process.execPath, [STEWARD_BIN, 'launch', file, '--log-dir', logDir], {
    cwd,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  let done = false;
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null }>((resolve) =>
    child.on('close', (code) => {
      done = true;
      resolve({ code });
    }),
  );
  return { pid: child.pid!, exited, done: () => done, stderr: () => stderr };
}

async function recordedIds(logDir: string, tasks: string[]): Promise<Set<string>> {
  const ids = new Set<string>();
  for (const task of tasks) {
    const names = await fs.readdir(path.join(logDir, task, 'samples')).catch(() => []);
    for (const n of names) if (n.endsWith('.e1.json')) ids.add(n.slice(0, -'.e1.json'.length));
  }
  return ids;
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/** The soak's table, a row a round and the totals. */
export function soakTable(results: RoundResult[], seed: number): string {
  const header = [
    'round',
    ...KILL_KINDS,
    'samples',
    'recorded',
    'duplicates',
    'missing',
    'recalled',
    'in flight at kills',
    'orphans',
    'refused',
    'runs replayed',
    's',
  ];
  const row = (r: RoundResult): string[] => [
    String(r.round),
    ...KILL_KINDS.map((k) => String(r.kills[k])),
    String(r.samples),
    String(r.recorded),
    String(r.duplicates),
    String(r.missing),
    String(r.recalled),
    String(r.inFlightAtKills),
    String(r.orphans),
    String(r.refused),
    String(r.replayedRuns),
    String(r.seconds),
  ];
  const sum = (f: (r: RoundResult) => number): string =>
    String(results.reduce((n, r) => n + f(r), 0));
  const total = [
    'all',
    ...KILL_KINDS.map((k) => sum((r) => r.kills[k])),
    sum((r) => r.samples),
    sum((r) => r.recorded),
    sum((r) => r.duplicates),
    sum((r) => r.missing),
    sum((r) => r.recalled),
    sum((r) => r.inFlightAtKills),
    sum((r) => r.orphans),
    sum((r) => r.refused),
    sum((r) => r.replayedRuns),
    sum((r) => r.seconds),
  ];
  const rows = [header, ...results.map(row), total];
  const widths = header.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]): string => r.map((c, i) => c.padStart(widths[i]!)).join('  ');
  return [`seed ${seed}`, ...rows.map(line)].join('\n') + '\n';
}

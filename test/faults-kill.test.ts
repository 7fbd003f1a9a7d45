/**
 * Processes killed with SIGKILL mid-run, end to end through the CLI, against the real dev
 * server, the real Docker daemon (a sandbox with its own network per sample) and the simulated
 * provider over real HTTP, with replies slow enough that samples are in flight at the kill:
 *
 * - the task worker killed, one process serving both tasks from its slot (`max_workers: 1`): the
 *   supervisor restarts it, both tasks go on, and the killed samples run again within seconds
 *   (the heartbeat timeout), not minutes;
 * - the whole `steward launch` killed (the launcher and its workers): launching the same file
 *   again re-attaches to the running eval set and finishes it.
 *
 * Either way the run exits 0 with every sample recorded exactly once, only the samples in flight
 * at the kill call the provider a second time, and nothing of the eval set is left on the daemon.
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type Docker from 'dockerode';
import { stringify } from 'yaml';
import type { SampleRecord } from '../src/logs/store';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../src/sandbox/image';
import { startSimProvider, type SimProvider } from '../src/sim/provider';
import { requireDocker } from './fixtures/docker/docker';
import { STEWARD_BIN, runCli, tempDir, uniqueName, type CliResult } from './helpers/cli';
import { processTree, runningOf, waitFor, within, workerPids } from './helpers/processes';
import { readSampleRecords } from './helpers/results';
import { timedCallsScript } from './helpers/server';

const TASKS = ['alpha', 'beta'];
const SAMPLES = 20;
/** Samples in flight per task: the most that one kill can send back to run again. */
const MAX_SAMPLES = 8;
/**
 * Every reply takes at least this long, so a call received less than this before the kill was
 * certainly still unanswered when its worker died.
 */
const LATENCY_MS = 2_000;
const JITTER_MS = 1_000;
/**
 * A request a worker sent just before it died may reach the provider's handler a moment after
 * the kill; a restarted worker cannot send one this soon (it restarts after 500 ms, then loads).
 */
const DELIVERY_GRACE_MS = 1_000;
/** A call this much younger than the reply's least latency counts as unanswered at the kill. */
const KILL_MARGIN_MS = 250;
/** From the kill to the last killed sample recorded again: heartbeat timeout (10 s) and a rerun. */
const RECOVERY_BOUND_MS = 60_000;
const RUN_DEADLINE_MS = 240_000;

/** One eval set on disk, with the simulated provider its samples call. */
interface Scenario {
  name: string;
  dir: string;
  file: string;
  logDir: string;
  env: NodeJS.ProcessEnv;
  sim: SimProvider;
  /** Arrival times of the model calls the provider received, by sample id. */
  calls: Map<string, number[]>;
  /** Worker processes serving the tasks: one a task, or `max_workers`. */
  workers: number;
}

/** What the test knew at the moment of the kill. */
interface Kill {
  at: number;
  /** Samples recorded before the kill: a rerun of one finds its record and calls nothing. */
  recorded: Set<string>;
  pids: number[];
}

/** A `steward launch` running in the background, with what it printed so far. */
interface Launcher {
  pid: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout(): string;
  stderr(): string;
}

let docker: Docker;

beforeAll(async () => {
  docker = await requireDocker();
  await ensureBusyboxImage(docker);
});

describe('the task worker serving both tasks killed with SIGKILL mid-run', () => {
  let scenario: Scenario;
  let launcher: Launcher;
  let kill: Kill;
  let restarted: number[];
  let result: CliResult;

  beforeAll(async () => {
    scenario = await prepare('faults-worker', { maxWorkers: 1 });
    launcher = launch(scenario);
    await waitUntilMidRun(scenario, launcher);
    kill = await killNow(scenario, await workerPids(launcher.pid));
    restarted = await waitFor('the supervisor to restart the killed workers', async () => {
      const workers = await workerPids(launcher.pid);
      const fresh = workers.filter((pid) => !kill.pids.includes(pid));
      return fresh.length === 1 ? fresh : undefined;
    });
    const { code } = await within('the run to finish', launcher.exited, RUN_DEADLINE_MS).catch(
      async (err: Error) => {
        // What the run was doing when it did not finish: its status, and what the launch said.
        const status = await runCli(['status', scenario.name], { env: scenario.env });
        throw new Error(
          `${err.message}\nsteward status:\n${status.stdout}${status.stderr}\n` +
            `the launch's stderr (its end):\n${launcher.stderr().slice(-4_000)}`,
        );
      },
    );
    result = { code, stdout: launcher.stdout(), stderr: launcher.stderr() };
  });

  afterAll(async () => {
    if (launcher) await killTree(launcher.pid);
    await scenario?.sim.close();
  });

  test('the supervisor restarts the killed worker, one process for both tasks', () => {
    expect(kill.pids).toHaveLength(1);
    expect(restarted).toHaveLength(1);
  });

  test('completes with exit 0, every sample recorded exactly once', async () => {
    await expectCompleted(scenario, result);
  });

  test('only the samples in flight at the kill called the provider again', async () => {
    await expectCallsAfterKill(scenario, kill);
  });

  test(`the killed samples ran again within seconds (under ${RECOVERY_BOUND_MS / 1000} s)`, async () => {
    const { firstCallMs, recordedMs } = await recovery(scenario, kill);
    console.log(
      `worker kill: first repeated call ${firstCallMs} ms after it, ` +
        `the last repeated sample recorded ${recordedMs} ms after it`,
    );
    expect(recordedMs).toBeLessThan(RECOVERY_BOUND_MS);
  });

  test('leaves no container or network of the eval set on the daemon', async () => {
    expect(await leftovers(scenario.name)).toEqual([]);
  });
});

describe('the whole `steward launch` killed with SIGKILL mid-run, then launched again', () => {
  let scenario: Scenario;
  let first: Launcher;
  let kill: Kill;
  let firstExit: { code: number | null; signal: NodeJS.Signals | null };
  let killedWorkers: number[];
  let result: CliResult;

  beforeAll(async () => {
    scenario = await prepare('faults-launch');
    first = launch(scenario);
    await waitUntilMidRun(scenario, first);
    const processes = await processTree(first.pid);
    const tree = processes.map((p) => p.pid);
    killedWorkers = processes.filter((p) => p.args.includes('task-worker')).map((p) => p.pid);
    kill = await killNow(scenario, tree);
    firstExit = await within('the killed launcher to exit', first.exited, 30_000);
    await waitFor(
      'every killed process to be gone',
      async () => ((await runningOf(tree)).length === 0 ? true : undefined),
      { timeoutMs: 30_000 },
    );
    result = await runCli(launchArgs(scenario), {
      env: scenario.env,
      cwd: scenario.dir,
      timeoutMs: RUN_DEADLINE_MS,
    });
  });

  afterAll(async () => {
    if (first) await killTree(first.pid);
    await scenario?.sim.close();
  });

  test('the kill took the launcher and its workers', () => {
    expect(firstExit.signal).toBe('SIGKILL');
    expect(kill.pids).toContain(first.pid);
    expect(killedWorkers).toHaveLength(TASKS.length);
  });

  test('the second launch re-attaches, completes with exit 0, every sample recorded once', async () => {
    expect(result.stderr).toContain(`eval set ${scenario.name} is already running: re-attaching`);
    await expectCompleted(scenario, result);
  });

  test('only the samples in flight at the kill called the provider again', async () => {
    await expectCallsAfterKill(scenario, kill);
  });

  test('the killed samples ran again once relaunched', async () => {
    const { firstCallMs, recordedMs } = await recovery(scenario, kill);
    console.log(
      `launch kill: first repeated call ${firstCallMs} ms after it, ` +
        `the last repeated sample recorded ${recordedMs} ms after it`,
    );
    expect(recordedMs).toBeLessThan(RECOVERY_BOUND_MS);
  });

  test('leaves no container or network of the eval set on the daemon', async () => {
    expect(await leftovers(scenario.name)).toEqual([]);
  });
});

/** Writes a sandboxed eval set with a unique input per sample, and starts its provider. */
async function prepare(
  prefix: string,
  { maxWorkers }: { maxWorkers?: number } = {},
): Promise<Scenario> {
  const dir = await tempDir();
  const name = uniqueName(prefix);
  // A network per sample (no `network_mode`), so network leaks show as well as containers.
  await fs.writeFile(
    path.join(dir, 'sandbox.yaml'),
    stringify({
      services: { default: { image: BUSYBOX_IMAGE, command: ['sleep', '3600'] } },
    }),
  );
  for (const task of TASKS) {
    const lines = Array.from({ length: SAMPLES }, (_, i) =>
      JSON.stringify({ id: sampleId(task, i), input: prompt(task, i), target: String(i) }),
    );
    await fs.writeFile(path.join(dir, `${task}.jsonl`), `${lines.join('\n')}\n`);
  }
  const file = path.join(dir, 'evalset.yaml');
  await fs.writeFile(
    file,
    stringify({
      name,
      model: 'openai-api/sim/faults',
      max_samples: MAX_SAMPLES,
      ...(maxWorkers === undefined ? {} : { max_workers: maxWorkers }),
      tasks: TASKS.map((task) => ({
        name: task,
        dataset: `${task}.jsonl`,
        sandbox: 'sandbox.yaml',
        solver: ['generate'],
        scorer: 'match',
      })),
    }),
  );
  const calls = new Map<string, number[]>();
  const sim = await startSimProvider({
    latencyMs: LATENCY_MS,
    jitterMs: JITTER_MS,
    script: timedCallsScript(calls),
  });
  return {
    name,
    dir,
    file,
    logDir: path.join(dir, 'logs'),
    env: { ...process.env, SIM_BASE_URL: sim.url, SIM_API_KEY: 'sim' },
    sim,
    calls,
    workers: maxWorkers ?? TASKS.length,
  };
}

const sampleId = (task: string, i: number): string => `${task}-${i + 1}`;
const prompt = (task: string, i: number): string => `Sample ${sampleId(task, i)}.\nANSWER: ${i}`;
const allSampleIds = (): string[] =>
  TASKS.flatMap((task) => Array.from({ length: SAMPLES }, (_, i) => sampleId(task, i)));

const launchArgs = (scenario: Scenario): string[] => [
  'launch',
  scenario.file,
  '--json',
  '--log-dir',
  scenario.logDir,
  '--tend-interval',
  '2',
];

function launch(scenario: Scenario): Launcher {
  const child = spawn(process.execPath, [STEWARD_BIN, ...launchArgs(scenario)], {
    cwd: scenario.dir,
    env: scenario.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  return { pid: child.pid as number, exited, stdout: () => stdout, stderr: () => stderr };
}

/**
 * Waits until the tasks' workers run, some samples are recorded, and every task has a call
 * received less than {@link LATENCY_MS} ago: a kill now leaves samples of every kind, recorded,
 * running with a call certainly unanswered (in each task's worker), and waiting.
 *
 * It does not wait for a number of calls in flight at one instant: sandboxed samples refill their
 * slots one sandbox at a time, so after the first wave the provider may never again see all of
 * them at once, and a run of 40 samples can end before it does (it did on CI).
 */
async function waitUntilMidRun(scenario: Scenario, launcher: Launcher): Promise<void> {
  let ended: string | undefined;
  void launcher.exited.then(({ code }) => (ended = `launch exited ${code}: ${launcher.stderr()}`));
  await waitFor('an unanswered call in every task after some samples were recorded', async () => {
    if (ended) throw new Error(ended);
    const since = Date.now() - LATENCY_MS;
    if (!TASKS.every((task) => callSince(scenario, task, since))) return undefined;
    const recorded = await recordedSamples(scenario.logDir);
    if (recorded.size < TASKS.length * 2) return undefined;
    const workers = await workerPids(launcher.pid);
    return workers.length === scenario.workers ? true : undefined;
  });
}

/** Whether a call of `task` reached the provider after `since`. */
function callSince(scenario: Scenario, task: string, since: number): boolean {
  return [...scenario.calls].some(
    ([id, times]) => id.startsWith(`${task}-`) && times.some((t) => t > since),
  );
}

/**
 * Reads what is recorded, then, once every task has a call certainly unanswered, kills `pids` at
 * once, noting the moment.
 */
async function killNow(scenario: Scenario, pids: number[]): Promise<Kill> {
  const recorded = await recordedSamples(scenario.logDir);
  // Reading the records takes a while on a loaded machine, in which the calls seen mid-run may
  // have been answered: the kill waits until every task again has one certainly unanswered.
  await waitFor(
    'a call certainly unanswered in every task',
    () =>
      TASKS.every((task) => callSince(scenario, task, Date.now() - LATENCY_MS + KILL_MARGIN_MS))
        ? true
        : undefined,
    { timeoutMs: 30_000, intervalMs: 10 },
  );
  // Synchronous from here: the in-process provider cannot answer a call between `at` and the
  // kill, so a call still waiting for its reply at `at` died with its worker.
  const at = Date.now();
  for (const pid of pids) process.kill(pid, 'SIGKILL');
  return { at, recorded, pids };
}

/** Ids of the samples recorded so far, from the record files' names (`<id>.e<epoch>.json`). */
async function recordedSamples(logDir: string): Promise<Set<string>> {
  const ids = new Set<string>();
  for (const task of TASKS) {
    const names = await fs.readdir(path.join(logDir, task, 'samples')).catch(() => []);
    for (const n of names) if (n.endsWith('.e1.json')) ids.add(n.slice(0, -'.e1.json'.length));
  }
  return ids;
}

async function expectCompleted(scenario: Scenario, result: CliResult): Promise<void> {
  expect(result.stderr).not.toContain('internal error');
  expect({ code: result.code, stderr: result.stderr }).toMatchObject({ code: 0 });
  const summary = JSON.parse(result.stdout);
  expect(summary.status).toBe('success');
  for (const task of summary.tasks) {
    expect(task).toMatchObject({ samples: SAMPLES, completed: SAMPLES, errored: 0 });
  }
  const records = await allRecords(scenario);
  expect(records.map((r) => String(r.sample_id)).sort()).toEqual(allSampleIds().sort());
  for (const record of records) expect(record.score.value).toBe('C');
}

/**
 * The model calls per sample after a kill at `kill.at`. A call received less than
 * {@link LATENCY_MS} before the kill was unanswered when its worker died: that sample must call
 * again, exactly once more. A sample recorded before the kill, or first called only after it,
 * ran once and called once. In between (running at the kill, with its call answered or not made
 * yet) a sample may call twice. No sample calls more than twice, and at most the samples in
 * flight at the kill (max_samples per task) call twice.
 */
async function expectCallsAfterKill(scenario: Scenario, kill: Kill): Promise<void> {
  const count = (id: string): number => scenario.calls.get(id)?.length ?? 0;
  const firstCall = (id: string): number => scenario.calls.get(id)?.[0] ?? Infinity;
  expect([...scenario.calls.keys()].sort()).toEqual(allSampleIds().sort());

  const mustRepeat = allSampleIds().filter((id) =>
    scenario.calls.get(id)?.some((t) => t <= kill.at && t > kill.at - LATENCY_MS),
  );
  const mayRepeat = new Set(
    allSampleIds().filter(
      (id) => !kill.recorded.has(id) && firstCall(id) <= kill.at + DELIVERY_GRACE_MS,
    ),
  );
  const repeated = allSampleIds().filter((id) => count(id) > 1);

  expect(mustRepeat.length).toBeGreaterThan(0);
  expect(mustRepeat.filter((id) => count(id) !== 2)).toEqual([]);
  expect(repeated.filter((id) => !mayRepeat.has(id) || count(id) > 2)).toEqual([]);
  expect(repeated.length).toBeLessThanOrEqual(TASKS.length * MAX_SAMPLES);
  console.log(
    `${scenario.name}: ${repeated.length} samples called the provider twice ` +
      `(${mustRepeat.length} had a call unanswered at the kill); ` +
      `${allSampleIds().length - repeated.length} called it once`,
  );

  // Run again by Temporal retrying the killed attempt, not by a second sample workflow.
  const records = await allRecords(scenario);
  const attempts = new Map(records.map((r) => [String(r.sample_id), r.attempt]));
  expect(repeated.filter((id) => (attempts.get(id) ?? 0) < 2)).toEqual([]);
}

/**
 * From the kill to the first repeated model call, and to the moment the last sample that called
 * twice was recorded.
 */
async function recovery(
  scenario: Scenario,
  kill: Kill,
): Promise<{ firstCallMs: number; recordedMs: number }> {
  const repeatedCall = (id: string): number | undefined => scenario.calls.get(id)?.[1];
  const rerun = (await allRecords(scenario)).filter(
    (r) => repeatedCall(String(r.sample_id)) !== undefined,
  );
  expect(rerun.length).toBeGreaterThan(0);
  const firstCall = Math.min(...rerun.map((r) => repeatedCall(String(r.sample_id)) as number));
  const lastRecorded = Math.max(...rerun.map((r) => Date.parse(r.completed_at)));
  return { firstCallMs: firstCall - kill.at, recordedMs: lastRecorded - kill.at };
}

async function allRecords(scenario: Scenario): Promise<SampleRecord[]> {
  const perTask = await Promise.all(TASKS.map((task) => readSampleRecords(scenario.logDir, task)));
  return perTask.flat();
}

/** Containers (running or not) and networks on the daemon labelled with eval set `name`. */
async function leftovers(name: string): Promise<string[]> {
  const filters = JSON.stringify({ label: [`steward.eval_set=${name}`] });
  const [containers, networks] = await Promise.all([
    docker.listContainers({ all: true, filters }),
    docker.listNetworks({ filters }),
  ]);
  return [
    ...containers.map((c) => `container ${c.Names[0] ?? c.Id}`),
    ...networks.map((n) => `network ${n.Name}`),
  ];
}

/** Stops whatever still runs of a launcher started here (a failed test may leave it running). */
async function killTree(pid: number): Promise<void> {
  for (const p of await processTree(pid)) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // Gone between the listing and the kill: nothing left to stop.
    }
  }
}

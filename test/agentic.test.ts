/**
 * Agentic samples in Docker sandboxes, end to end through the CLI, against the real dev server,
 * the real Docker daemon and the simulated provider over real HTTP: every sample's agent runs
 * `bash` in its own sandbox and submits (through OpenAI's tool calls, and through Anthropic's
 * `tool_use` / `tool_result` blocks on `anthropic/<model>`); nothing of ours is left on the daemon afterwards, not
 * even when a worker is killed mid-sample; and a daemon out of address pools fails the sample
 * with a message that points at `steward docker check`.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import type Docker from 'dockerode';
import { stringify } from 'yaml';
import { ErrorType } from '../src/errors';
import type { SampleErrorRecord } from '../src/logs/store';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../src/sandbox/image';
import { startSimProvider, type SimProvider } from '../src/sim/provider';
import { leftovers, requireDocker } from './fixtures/docker/docker';
import { runsOfEvalSet, sampleRunKinds } from './helpers/histories';
import { REPO_ROOT, STEWARD_BIN, runCli, tempDir, uniqueName, type CliResult } from './helpers/cli';
import { readSampleRecords } from './helpers/results';

const SAMPLES = 40;
/** Every tenth sample's command writes a wrong value, so scores are not all `C`. */
const isWrong = (i: number): boolean => i % 10 === 0;

/** Samples whose agent (the simulated provider's default script) runs `RUN:` then submits its output. */
function squares(count: number): string {
  return Array.from({ length: count }, (_, n) => {
    const i = n + 1;
    const value = isWrong(i) ? i * i + 1 : i * i;
    return JSON.stringify({
      id: `sq-${i}`,
      input: `Write the square of ${i} to /tmp/out.txt.\nRUN: echo ${value} > /tmp/out.txt && cat /tmp/out.txt`,
      target: String(i * i),
    });
  }).join('\n');
}

/** An eval set of sandboxed agent tasks on the simulated provider; returns the yaml's path. */
async function writeAgenticEvalSet(
  dir: string,
  name: string,
  tasks: Array<{ name: string; scorer: unknown; samples: number; model?: string }>,
  settings: Record<string, unknown>,
): Promise<string> {
  for (const task of tasks) {
    await fs.writeFile(path.join(dir, `${task.name}.jsonl`), `${squares(task.samples)}\n`);
  }
  const definition = {
    name,
    model: 'openai-api/sim/agent',
    ...settings,
    tasks: tasks.map((task) => ({
      name: task.name,
      ...(task.model ? { model: task.model } : {}),
      dataset: `${task.name}.jsonl`,
      sandbox: BUSYBOX_IMAGE,
      solver: [{ agent: { max_turns: 4, command_timeout: 30 } }],
      scorer: task.scorer,
    })),
  };
  const file = path.join(dir, 'evalset.yaml');
  await fs.writeFile(file, stringify(definition));
  return file;
}

const FILE_CHECK = { sandbox_check: { cmd: 'test "$(cat /tmp/out.txt)" = "$TARGET"' } };

let docker: Docker;
let sim: SimProvider;
let simEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  docker = await requireDocker();
  await ensureBusyboxImage(docker);
  sim = await startSimProvider({ latencyMs: 50 });
  simEnv = {
    ...process.env,
    SIM_BASE_URL: sim.url,
    SIM_API_KEY: 'sim',
    ANTHROPIC_BASE_URL: sim.anthropicUrl,
    ANTHROPIC_API_KEY: 'sim',
  };
});

afterAll(async () => {
  await sim?.close();
});

/** Samples of the task whose agent is `anthropic/<model>`. */
const CLAUDE_SAMPLES = 10;

describe('3 tasks of agentic samples (2 × 40 on OpenAI, 10 on Anthropic), each in its own sandbox', () => {
  const tasks = [
    { name: 'file-check', scorer: FILE_CHECK, samples: SAMPLES },
    { name: 'submitted', scorer: 'match', samples: SAMPLES },
    { name: 'claude', scorer: FILE_CHECK, samples: CLAUDE_SAMPLES, model: 'anthropic/sim-claude' },
  ];
  const samplesOf = (task: string): number => tasks.find((t) => t.name === task)!.samples;
  let name: string;
  let logDir: string;
  let result: CliResult;

  beforeAll(async () => {
    sim.resetStats();
    const dir = await tempDir();
    name = uniqueName('agentic');
    // A modest setpoint: 16 sandboxes at once is plenty for a 2-core machine.
    const file = await writeAgenticEvalSet(dir, name, tasks, { max_samples: 8 });
    logDir = path.join(dir, 'logs');
    result = await runCli(['launch', file, '--json', '--log-dir', logDir], { env: simEnv });
  });

  test('each sandboxed sample ran as an activity of its own, not inline', async () => {
    const client = new Client({
      connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS! }),
    });
    try {
      const runs = await runsOfEvalSet(client, name, ['sampleWorkflow']);
      expect(runs.length).toBeGreaterThanOrEqual(2 * SAMPLES + CLAUDE_SAMPLES);
      expect(new Set(await sampleRunKinds(client, runs.slice(0, 20)))).toEqual(
        new Set(['activity']),
      );
    } finally {
      await client.connection.close();
    }
  });

  test('completes and exits 0, with the accuracy the wrong samples imply', () => {
    expect(result.stderr).not.toContain('internal error');
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary.status).toBe('success');
    expect(summary.tasks).toHaveLength(tasks.length);
    for (const task of summary.tasks) {
      const n = samplesOf(task.name);
      expect(task).toMatchObject({ samples: n, completed: n, errored: 0 });
      expect(task.metrics.accuracy).toBeCloseTo((n - n / 10) / n, 10);
    }
  });

  test.each(['file-check', 'submitted', 'claude'])(
    '%s: every sample scored as its sandbox says, after a bash call and a submit',
    async (task) => {
      const records = await readSampleRecords(logDir, task);
      expect(records).toHaveLength(samplesOf(task));
      for (const record of records) {
        const i = Number(String(record.sample_id).slice('sq-'.length));
        const value = String(isWrong(i) ? i * i + 1 : i * i);
        expect(record.score.value).toBe(isWrong(i) ? 'I' : 'C');
        expect(record.output).toBe(value);
        const tools = record.messages.filter((m) => m.role === 'tool').map((m) => m.content);
        // The bash call's output, read from the container, then the submitted answer.
        expect(tools).toEqual([`${value}\n`, value]);
        expect(record.usage.total_tokens).toBeGreaterThan(0);
      }
    },
  );

  test('made two model calls per sample over HTTP', () => {
    expect(sim.stats().by_status).toEqual({ '200': 2 * (2 * SAMPLES + CLAUDE_SAMPLES) });
  });

  test("the anthropic agent's tool calls carry Anthropic's tool_use ids", async () => {
    const records = await readSampleRecords(logDir, 'claude');
    for (const record of records) {
      const calls = record.messages.flatMap((m) =>
        m.role === 'assistant' ? (m.tool_calls ?? []) : [],
      );
      expect(calls.map((call) => call.name)).toEqual(['bash', 'submit']);
      expect(calls.every((call) => call.id.startsWith('toolu_sim_'))).toBe(true);
    }
  });

  test('leaves no container or network of ours on the daemon', async () => {
    expect(await leftovers(docker, name)).toEqual([]);
  });
});

describe('a worker killed with SIGKILL mid-sample', () => {
  const COUNT = 12;
  let name: string;
  let logDir: string;
  let killedContainers: string[];
  let result: CliResult;

  beforeAll(async () => {
    const dir = await tempDir();
    name = uniqueName('agentic-kill');
    const file = await writeAgenticEvalSet(
      dir,
      name,
      [{ name: 'slow', scorer: FILE_CHECK, samples: COUNT }],
      { max_samples: 4 },
    );
    logDir = path.join(dir, 'logs');
    // Slow replies keep samples in their sandboxes long enough to be caught there.
    const slowSim = await startSimProvider({ latencyMs: 1_500 });
    try {
      const cli = spawn(
        process.execPath,
        [STEWARD_BIN, 'launch', file, '--json', '--log-dir', logDir],
        {
          cwd: REPO_ROOT,
          env: { ...process.env, SIM_BASE_URL: slowSim.url, SIM_API_KEY: 'sim' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      cli.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      cli.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => cli.on('close', resolve));

      const running = await waitFor(async () => {
        const containers = await docker.listContainers({
          filters: JSON.stringify({ label: [`steward.eval_set=${name}`] }),
        });
        return containers.length >= 2 ? containers.map((c) => c.Id) : undefined;
      });
      killedContainers = running;
      const worker = await workerPid(cli.pid as number);
      process.kill(worker, 'SIGKILL');

      const deadline = new AbortController();
      const code: number | null | 'timeout' = await Promise.race([
        exited,
        // Aborted below once the launcher exits, so no timer outlives the test.
        sleep(300_000, 'timeout' as const, { signal: deadline.signal }),
      ]).finally(() => deadline.abort());
      if (code === 'timeout') cli.kill('SIGKILL');
      result = { code: code === 'timeout' ? null : code, stdout, stderr };
    } finally {
      await slowSim.close();
    }
  });

  test('the run still completes every sample, some on a second attempt', async () => {
    expect(result.stderr).not.toContain('internal error');
    expect(result.code).toBe(0);
    const records = await readSampleRecords(logDir, 'slow');
    expect(records).toHaveLength(COUNT);
    expect(records.some((record) => record.attempt > 1)).toBe(true);
  });

  test('the sandboxes of the killed attempts are gone, and nothing else of ours remains', async () => {
    const alive = await Promise.all(
      killedContainers.map((id) =>
        docker
          .getContainer(id)
          .inspect()
          .then(
            () => id,
            () => undefined,
          ),
      ),
    );
    expect(alive.filter(Boolean)).toEqual([]);
    expect(await leftovers(docker, name)).toEqual([]);
  });
});

describe('a daemon out of address pools', () => {
  const probe = `steward-test-agentic-pools-${randomUUID().slice(0, 8)}`;
  let name: string;
  let logDir: string;
  let result: CliResult;

  beforeAll(async () => {
    const dir = await tempDir();
    name = uniqueName('agentic-pools');
    const file = await writeAgenticEvalSet(
      dir,
      name,
      [{ name: 'starved', scorer: FILE_CHECK, samples: 1 }],
      {},
    );
    logDir = path.join(dir, 'logs');
    try {
      await exhaustAddressPools(docker, probe);
      result = await runCli(['launch', file, '--json', '--log-dir', logDir], { env: simEnv });
    } finally {
      // Other tests on this daemon need networks: give them back at once.
      await removeProbeNetworks(docker, probe);
    }
  });

  test('fails the sample, not the run, and exits 1', () => {
    expect(result.stderr).not.toContain('internal error');
    expect(result.code).toBe(1);
    const summary = JSON.parse(result.stdout);
    expect(summary.tasks[0]).toMatchObject({ samples: 1, completed: 0, errored: 1 });
  });

  test('records a pool-exhaustion error that points at `steward docker check`', async () => {
    const errors = path.join(logDir, 'starved', 'errors');
    const [file] = await fs.readdir(errors);
    const record = JSON.parse(
      await fs.readFile(path.join(errors, file), 'utf8'),
    ) as SampleErrorRecord;
    expect(record.error_type).toBe(ErrorType.networkPoolExhausted);
    expect(record.error).toContain('steward docker check');
    // Retried as a capacity limit: the pools may free up.
    expect(record.attempt).toBeGreaterThan(1);
  });

  test('leaves no container or network of ours on the daemon', async () => {
    expect(await leftovers(docker, name)).toEqual([]);
  });
});

/** Creates labelled networks until the daemon refuses one for want of an address pool. */
async function exhaustAddressPools(docker: Docker, probe: string): Promise<void> {
  for (let n = 0; n < 2_000; n++) {
    try {
      await docker.createNetwork({ Name: `${probe}-${n}`, Labels: { 'steward.test': probe } });
    } catch (error) {
      if (/address pool|fully subnetted/i.test((error as Error).message)) return;
      throw error;
    }
  }
  throw new Error('the daemon never ran out of address pools (are its pools huge?)');
}

async function removeProbeNetworks(docker: Docker, probe: string): Promise<void> {
  const networks = await docker.listNetworks({
    filters: JSON.stringify({ label: [`steward.test=${probe}`] }),
  });
  await Promise.all(networks.map((network) => docker.getNetwork(network.Id).remove()));
}

/** The pid of the (one) worker process the launcher `parent` runs. */
async function workerPid(parent: number): Promise<number> {
  const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) => {
    const ps = spawn('ps', ['-o', 'pid=,args=', '--ppid', String(parent)]);
    let out = '';
    ps.stdout.on('data', (d: Buffer) => (out += d.toString()));
    ps.on('error', reject);
    ps.on('close', () => resolve({ stdout: out }));
  });
  const line = stdout.split('\n').find((candidate) => candidate.includes('task-worker'));
  if (!line) throw new Error(`no worker process under pid ${parent}:\n${stdout}`);
  return Number(line.trim().split(/\s+/)[0]);
}

async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await sleep(200);
  }
  throw new Error(`timed out after ${timeoutMs} ms`);
}

/**
 * `steward launch --smoke` end to end: the real CLI, the dev server, Docker sandboxes and the
 * simulated provider over real HTTP.
 *
 * - A smoke run catches a refused API key, a missing sandbox image and a task that hangs past
 *   the time cap, names them per task with the first sample's error, and the real eval set never
 *   starts.
 * - `--smoke-only` stops after a passing smoke run; `--smoke` then goes on to the full run,
 *   which completes in its own log dir, apart from the smoke run's.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import type Docker from 'dockerode';
import { stringify } from 'yaml';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../src/sandbox/image';
import { startSimProvider, type SimProvider } from '../src/sim/provider';
import { leftovers, requireDocker } from './fixtures/docker/docker';
import { runCli, tempDir, uniqueName, type CliResult } from './helpers/cli';
import { readSampleRecords } from './helpers/results';

const CLI_TIMEOUT_MS = 120_000;
const MISSING_IMAGE = 'steward-smoke-no-such-image:latest';
/** The smoke run's time cap where a task hangs: long enough for the fleet to start on a busy machine. */
const CAP_S = 30;

let releaseHung: () => void = () => undefined;
const hung = new Promise<void>((resolve) => (releaseHung = resolve));

let client: Client;
let docker: Docker;
let sim: SimProvider;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  client = new Client({
    connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS }),
    namespace: process.env.TEMPORAL_NAMESPACE,
  });
  docker = await requireDocker();
  await ensureBusyboxImage(docker);
  // One account that takes only the key `right`; `bad/...` models send another key. The model
  // `hang` never answers (until the end of the file).
  sim = await startSimProvider({
    latencyMs: 20,
    apiKey: 'right',
    script: async (request) => {
      if (request.model === 'hang') await hung;
      return { content: 'ok' };
    },
  });
  env = {
    ...process.env,
    SIM_BASE_URL: sim.url,
    SIM_API_KEY: 'right',
    BAD_BASE_URL: sim.url,
    BAD_API_KEY: 'wrong',
  };
});

afterAll(async () => {
  releaseHung();
  await sim?.close();
  await client?.connection.close();
});

function expectExit(result: CliResult, code: number): void {
  if (result.code !== code) {
    throw new Error(`steward exited ${result.code}, expected ${code}; stderr:\n${result.stderr}`);
  }
}

async function workflowStatus(workflowId: string): Promise<string | undefined> {
  try {
    return (await client.workflow.getHandle(workflowId).describe()).status.name;
  } catch (err) {
    if ((err as Error).name === 'WorkflowNotFoundError') return undefined;
    throw err;
  }
}

interface TaskSpec {
  name: string;
  model: string;
  sandbox?: string;
}

/** An eval set of `samples` samples per task, every answer right (the simulator echoes the target). */
async function writeDefinition(name: string, tasks: TaskSpec[], samples: number): Promise<string> {
  const dir = await tempDir();
  const lines = Array.from({ length: samples }, (_, i) =>
    JSON.stringify({ id: `s${i + 1}`, input: `Say ${i + 1}.`, target: 'ok' }),
  );
  await fs.writeFile(path.join(dir, 'data.jsonl'), `${lines.join('\n')}\n`);
  const file = path.join(dir, 'evalset.yaml');
  await fs.writeFile(
    file,
    stringify({
      name,
      tend_interval: 1,
      // One worker process for all the tasks: each process costs seconds to start on 2 cores.
      max_workers: 1,
      tasks: tasks.map((t) => ({
        name: t.name,
        dataset: 'data.jsonl',
        model: t.model,
        ...(t.sandbox ? { sandbox: t.sandbox } : {}),
        solver: ['generate'],
        scorer: 'includes',
      })),
    }),
  );
  return file;
}

describe('a smoke run that finds problems', () => {
  let name: string;
  let logDir: string;
  let launch: CliResult;
  let launchS: number;

  beforeAll(async () => {
    name = uniqueName('smoke-bad');
    const file = await writeDefinition(
      name,
      [
        { name: 'wrongkey', model: 'openai-api/bad/m' },
        { name: 'noimage', model: 'openai-api/sim/m', sandbox: MISSING_IMAGE },
        { name: 'hangs', model: 'openai-api/sim/hang' },
        { name: 'fine', model: 'openai-api/sim/m' },
      ],
      20,
    );
    logDir = path.join(path.dirname(file), 'logs');
    const started = Date.now();
    launch = await runCli(
      ['launch', file, '--smoke', '--smoke-timeout', String(CAP_S), '--log-dir', logDir, '--json'],
      { env, timeoutMs: CLI_TIMEOUT_MS },
    );
    launchS = (Date.now() - started) / 1000;
  });

  test('exits 1 and says, per task, what would fail, with the first error', () => {
    expectExit(launch, 1);
    expect(launch.stderr).toMatch(
      new RegExp(
        `smoke run failed: 3 of 4 task\\(s\\) would fail, so eval set ${name} was not launched`,
      ),
    );
    expect(launch.stderr).toMatch(
      /wrongkey: FAILED, credentials refused \(401\/403\) \(0\/2 completed\): model openai-api\/bad\/m: the provider refused the request: 401 Incorrect API key provided/,
    );
    expect(launch.stderr).toMatch(
      new RegExp(
        `noimage: FAILED, sandbox image missing \\(0/2 completed\\): sandbox image ${MISSING_IMAGE} is not on the Docker daemon`,
      ),
    );
    expect(launch.stderr).toMatch(
      new RegExp(
        `hangs: FAILED, time cap reached \\(0/2 completed\\): 2 sample\\(s\\) still running after ${CAP_S} s`,
      ),
    );
    expect(launch.stderr).toMatch(/fine: passed \(2\/2 completed\)/);
    const { smoke } = JSON.parse(launch.stdout) as {
      smoke: { eval_set: string; tasks: { task: string; passed: boolean; failure?: string }[] };
    };
    expect(smoke.eval_set).toBe(`${name}-smoke`);
    expect(smoke.tasks.map((t) => [t.task, t.passed, t.failure])).toEqual([
      ['wrongkey', false, 'credentials'],
      ['noimage', false, 'sandbox_image'],
      ['hangs', false, 'time_cap'],
      ['fine', true, undefined],
    ]);
    // 2 samples per task, not 20, and the cap stops the hung ones: fast, whatever the dataset.
    expect(launchS).toBeGreaterThanOrEqual(CAP_S);
    expect(launchS).toBeLessThan(CAP_S + 40);
  });

  test('the full eval set never started; the smoke run is its own eval set and log dir', async () => {
    expect(await workflowStatus(`steward-${name}`)).toBeUndefined();
    // The time cap cancelled it.
    expect(await workflowStatus(`steward-${name}-smoke`)).toBe('CANCELLED');
    // The launch checked that the log dir can be written; nothing ran into it.
    expect(await fs.readdir(logDir)).toEqual([]);
    expect(await readSampleRecords(`${logDir}-smoke`, 'fine')).toHaveLength(2);
    expect(sim.stats().by_status['401']).toBeGreaterThanOrEqual(2);
  });

  test('leaves no container or network of ours on the daemon', async () => {
    expect(await leftovers(docker, `${name}-smoke`)).toEqual([]);
  });
});

describe('a smoke run that passes', () => {
  let name: string;
  let file: string;
  let logDir: string;

  beforeAll(async () => {
    name = uniqueName('smoke-ok');
    file = await writeDefinition(
      name,
      [
        { name: 'a', model: 'openai-api/sim/m' },
        { name: 'b', model: 'openai-api/sim/m', sandbox: BUSYBOX_IMAGE },
      ],
      6,
    );
    logDir = path.join(path.dirname(file), 'logs');
  });

  test('--smoke-only stops after it, exit 0, and starts nothing else', async () => {
    const only = await runCli(
      ['launch', file, '--smoke-only', '--smoke-samples', '1', '--log-dir', logDir],
      { env, timeoutMs: CLI_TIMEOUT_MS },
    );
    expectExit(only, 0);
    expect(only.stderr).toMatch(/smoke run passed/);
    expect(only.stderr).not.toMatch(/launching eval set/);
    expect(await workflowStatus(`steward-${name}`)).toBeUndefined();
    expect(await readSampleRecords(`${logDir}-smoke`, 'a')).toHaveLength(1);
  });

  test('--smoke goes on to the full run, which completes in its own log dir', async () => {
    const full = await runCli(['launch', file, '--smoke', '--log-dir', logDir, '--json'], {
      env,
      timeoutMs: CLI_TIMEOUT_MS,
    });
    expectExit(full, 0);
    expect(full.stderr).toMatch(new RegExp(`smoke run passed[^]*launching eval set ${name}`));
    expect(JSON.parse(full.stdout)).toMatchObject({
      status: 'success',
      tasks: [
        { name: 'a', samples: 6, completed: 6 },
        { name: 'b', samples: 6, completed: 6 },
      ],
    });
    expect(await workflowStatus(`steward-${name}`)).toBe('COMPLETED');
    // The smoke run started afresh (its 2 samples, not the earlier 1), apart from the real one.
    expect(await readSampleRecords(`${logDir}-smoke`, 'b')).toHaveLength(2);
    expect(await readSampleRecords(logDir, 'b')).toHaveLength(6);
    expect(await leftovers(docker, name)).toEqual([]);
  });
});

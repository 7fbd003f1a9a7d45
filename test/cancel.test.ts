/**
 * Cancellation is clean: `temporal workflow cancel` of a running eval set (the stock CLI, as an
 * operator types it) cancels its tasks, which cancel their samples, each of which removes its
 * sandbox before its workflow closes. When the eval set shows cancelled, nothing of it runs and
 * nothing of it is left on the Docker daemon; each task's Inspect log says `cancelled` (read by
 * Inspect's own reader); and launching again runs exactly what did not complete.
 */
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import type Docker from 'dockerode';
import { stringify } from 'yaml';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../src/sandbox/image';
import { startSimProvider, type SimProvider } from '../src/sim/provider';
import { findTemporalBinary } from '../src/temporal/binary';
import { evalSetWorkflowId, taskWorkflowId } from '../src/workflows/types';
import { requireDocker } from './fixtures/docker/docker';
import {
  REPO_ROOT,
  runCli,
  runCommand,
  tempDir,
  uniqueName,
  writeEvalSet,
  type CliResult,
} from './helpers/cli';
import { replayAllRuns } from './helpers/replay';
import { readSampleRecords } from './helpers/results';

const PYTHON =
  process.env.STEWARD_INSPECT_PYTHON ??
  path.join(REPO_ROOT, '.tools', 'inspect-venv', 'bin', 'python');
const READER = path.join(__dirname, 'helpers', 'read_inspect_logs.py');

let client: Client;
let docker: Docker;
let sim: SimProvider;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  client = new Client({
    connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS }),
    namespace: process.env.TEMPORAL_NAMESPACE,
  });
  docker = await requireDocker();
  await ensureBusyboxImage(docker);
  sim = await startSimProvider({ latencyMs: 20 });
  env = { ...process.env, SIM_BASE_URL: sim.url, SIM_API_KEY: 'sim' };
});

afterAll(async () => {
  await sim?.close();
  await client?.connection.close();
});

/** `temporal workflow cancel`, with the stock CLI against the suite's server. */
async function cancelByCli(workflowId: string): Promise<CliResult> {
  return runCommand(await findTemporalBinary(), [
    'workflow',
    'cancel',
    '--workflow-id',
    workflowId,
    '--address',
    process.env.TEMPORAL_ADDRESS!,
    '--namespace',
    process.env.TEMPORAL_NAMESPACE!,
  ]);
}

/** Containers and networks on the daemon carrying our labels for eval set `name`. */
async function onDocker(name: string): Promise<string[]> {
  const filters = JSON.stringify({ label: ['steward.managed=true', `steward.eval_set=${name}`] });
  const [containers, networks] = await Promise.all([
    docker.listContainers({ all: true, filters }),
    docker.listNetworks({ filters }),
  ]);
  return [...containers.map((c) => c.Names[0] ?? c.Id), ...networks.map((n) => n.Name)];
}

/** Sample workflows of eval set `name` still running. */
async function runningSamples(name: string): Promise<number> {
  const { count } = await client.workflow.count(
    `WorkflowType = 'sampleWorkflow' AND ExecutionStatus = 'Running' AND ` +
      `WorkflowId STARTS_WITH '${evalSetWorkflowId(name)}/'`,
  );
  return count;
}

async function statusOf(workflowId: string): Promise<string> {
  return (await client.workflow.getHandle(workflowId).describe()).status.name;
}

/** Polls until `check` holds; fails saying what was awaited. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

/** Each task log's status and sample count, as Inspect's reader sees them. */
async function inspectStatuses(logDir: string): Promise<Record<string, [string, number]>> {
  const read = await runCommand(PYTHON, [READER, logDir]);
  if (read.code !== 0) throw new Error(`Inspect's reader failed:\n${read.stderr}`);
  const out = JSON.parse(read.stdout) as {
    dirs: Record<string, { logs: Array<{ task: string; status: string; samples: unknown[] }> }>;
  };
  return Object.fromEntries(
    out.dirs[logDir]!.logs.map((log) => [log.task, [log.status, log.samples.length]]),
  );
}

test('cancelling an eval set of sandboxed samples cancels its tasks and samples and leaves nothing on Docker', async () => {
  expect(existsSync(PYTHON)).toBe(true);
  const dir = await tempDir();
  const name = uniqueName('cancel-sandbox');
  const tasks = ['slow-a', 'slow-b'];
  for (const task of tasks) {
    // Each sample's agent runs a command that would outlast the test by far.
    const lines = Array.from({ length: 6 }, (_, i) =>
      JSON.stringify({ id: `${task}-${i + 1}`, input: 'RUN: sleep 600', target: 'x' }),
    );
    await fs.writeFile(path.join(dir, `${task}.jsonl`), `${lines.join('\n')}\n`);
  }
  const file = path.join(dir, 'evalset.yaml');
  await fs.writeFile(
    file,
    stringify({
      name,
      model: 'openai-api/sim/agent',
      max_samples: 3,
      tasks: tasks.map((task) => ({
        name: task,
        dataset: `${task}.jsonl`,
        sandbox: BUSYBOX_IMAGE,
        solver: [{ agent: { max_turns: 4, command_timeout: 900 } }],
        scorer: 'match',
      })),
    }),
  );
  const logDir = path.join(dir, 'logs');
  const launch = runCli(['launch', file, '--log-dir', logDir], { env });
  await until('six sandboxes', async () => (await onDocker(name)).length >= 6 * 2);

  const cancelled = await cancelByCli(evalSetWorkflowId(name));
  expect(cancelled.stderr).toBe('');
  expect(cancelled.code).toBe(0);
  const result = await launch;
  expect(result.stderr).toContain(`eval set ${name} was cancelled`);
  expect(result.stderr).not.toContain('internal error');
  expect(result.code).toBe(1);

  // The eval set closed only after its tasks, which closed only after their samples.
  const ids = [
    evalSetWorkflowId(name),
    ...tasks.map((t) => taskWorkflowId(evalSetWorkflowId(name), t)),
  ];
  for (const id of ids) expect(await statusOf(id)).toBe('CANCELLED');
  expect(await runningSamples(name)).toBe(0);
  expect(await onDocker(name)).toEqual([]);
  expect(await inspectStatuses(logDir)).toEqual({
    'slow-a': ['cancelled', 0],
    'slow-b': ['cancelled', 0],
  });
  await replayAllRuns(client, ids);
});

test('a cancelled eval set keeps what completed, and launching again runs only the rest', async () => {
  const dir = await tempDir();
  const name = uniqueName('cancel-resume');
  const tasks = [{ name: 'steady', samples: 60, latencyMs: 500 }];
  const file = await writeEvalSet(dir, name, tasks, { max_samples: 5 });
  const logDir = path.join(dir, 'logs');
  const launch = runCli(['launch', file, '--log-dir', logDir], { env });
  const recorded = (): Promise<number> =>
    readSampleRecords(logDir, 'steady').then(
      (r) => r.length,
      () => 0,
    );
  await until('ten samples recorded', async () => (await recorded()) >= 10);

  expect((await cancelByCli(evalSetWorkflowId(name))).code).toBe(0);
  expect((await launch).code).toBe(1);
  const kept = await recorded();
  expect(kept).toBeLessThan(60);
  const summary = JSON.parse(
    await fs.readFile(path.join(logDir, 'steady', 'summary.json'), 'utf8'),
  );
  expect(summary).toMatchObject({ cancelled: true, completed: kept });
  expect(await inspectStatuses(logDir)).toEqual({ steady: ['cancelled', kept] });

  const again = await runCli(['launch', file, '--log-dir', logDir, '--json'], { env });
  expect(again.stderr).not.toContain('internal error');
  expect(again.code).toBe(0);
  expect(JSON.parse(again.stdout).tasks[0]).toMatchObject({ completed: 60, resumed: kept });
  const records = await readSampleRecords(logDir, 'steady');
  expect(new Set(records.map((r) => r.sample_id)).size).toBe(60);
  expect(records).toHaveLength(60);
  expect(await inspectStatuses(logDir)).toEqual({ steady: ['success', 60] });
});

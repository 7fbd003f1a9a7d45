/**
 * Cancellation is clean: `temporal workflow cancel` of a running eval set (the stock CLI, as an
 * operator types it) cancels its tasks, which cancel their samples, each of which removes its
 * sandbox before its workflow closes. When the eval set shows cancelled, nothing of it runs and
 * nothing of it is left on the Docker daemon; each task's Inspect log says `cancelled` (read by
 * Inspect's own reader); and launching again runs exactly what did not complete. Termination,
 * which runs no workflow code, ends the same way: by the launch for an eval set, by the workers
 * for a task.
 */
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import type Docker from 'dockerode';
import { stringify } from 'yaml';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../src/sandbox/image';
import { startSimProvider, type SimProvider } from '../src/sim/provider';
import { findTemporalBinary } from '../src/temporal/binary';
import { OWNER_WATCH_MS } from '../src/workers/owner-watch';
import { evalSetWorkflowId, taskWorkflowId } from '../src/workflows/types';
import { leftovers, requireDocker } from './fixtures/docker/docker';
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
    connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS }),
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

/** `temporal workflow cancel` or `terminate`, with the stock CLI against the suite's server. */
async function cancelByCli(verb: 'cancel' | 'terminate', workflowId: string): Promise<CliResult> {
  return runCommand(await findTemporalBinary(), [
    'workflow',
    verb,
    '--workflow-id',
    workflowId,
    '--address',
    process.env.TEMPORAL_ADDRESS!,
    '--namespace',
    process.env.TEMPORAL_NAMESPACE!,
  ]);
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

/**
 * Launches an eval set whose samples each hold a sandbox running a command that would outlast
 * the test by far; resolves once every admitted sample has its sandbox (a container and a network).
 */
async function launchSandboxed(
  prefix: string,
  tasks: string[],
): Promise<{ name: string; logDir: string; launch: Promise<CliResult>; ids: string[] }> {
  const dir = await tempDir();
  const name = uniqueName(prefix);
  for (const task of tasks) {
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
      max_samples: SETPOINT,
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
  await until(
    'every admitted sample in its sandbox',
    async () => (await leftovers(docker, name)).length >= 2 * SETPOINT * tasks.length,
  );
  const id = evalSetWorkflowId(name);
  return { name, logDir, launch, ids: [id, ...tasks.map((t) => taskWorkflowId(id, t))] };
}

/** Samples each task runs at once in the sandboxed eval sets. */
const SETPOINT = 3;

test('cancelling an eval set of sandboxed samples cancels its tasks and samples and leaves nothing on Docker', async () => {
  expect(existsSync(PYTHON)).toBe(true);
  const { name, logDir, launch, ids } = await launchSandboxed('cancel-sandbox', [
    'slow-a',
    'slow-b',
  ]);

  const cancelled = await cancelByCli('cancel', ids[0]!);
  expect(cancelled.stderr).toBe('');
  expect(cancelled.code).toBe(0);
  const result = await launch;
  expect(result.stderr).toContain(`eval set ${name} was cancelled`);
  expect(result.stderr).not.toContain('internal error');
  expect(result.code).toBe(1);

  // The eval set closed only after its tasks, which closed only after their samples.
  for (const id of ids) expect(await statusOf(id)).toBe('CANCELLED');
  expect(await runningSamples(name)).toBe(0);
  expect(await leftovers(docker, name)).toEqual([]);
  expect(await inspectStatuses(logDir)).toEqual({
    'slow-a': ['cancelled', 0],
    'slow-b': ['cancelled', 0],
  });
  await replayAllRuns(client, ids);
});

test('terminating an eval set (no workflow code runs) still cancels its tasks and samples', async () => {
  const { name, logDir, launch, ids } = await launchSandboxed('terminate-set', ['slow']);
  const terminated = await cancelByCli('terminate', ids[0]!);
  expect(terminated.code).toBe(0);
  const result = await launch;
  expect(result.stderr).toContain(`eval set ${name} was terminated: its tasks were cancelled`);
  expect(result.code).toBe(1);
  expect(await statusOf(ids[1]!)).toBe('CANCELLED');
  expect(await runningSamples(name)).toBe(0);
  expect(await leftovers(docker, name)).toEqual([]);
  expect(await inspectStatuses(logDir)).toEqual({ slow: ['cancelled', 0] });
});

test("terminating a task's workflow: its workers end its samples within a minute", async () => {
  const { name, launch, ids } = await launchSandboxed('terminate-task', ['slow']);
  const task = await client.workflow.getHandle(ids[1]!).describe();
  // The chain a sample carries is its task's first run: the server must say which that is.
  expect(task.raw.workflowExecutionInfo?.firstRunId).toBe(task.runId);
  expect((await cancelByCli('terminate', ids[1]!)).code).toBe(0);
  const terminatedAt = Date.now();
  await until('no sample running', async () => (await runningSamples(name)) === 0, 60_000);
  await until('no sandbox left', async () => (await leftovers(docker, name)).length === 0, 10_000);
  expect(Date.now() - terminatedAt).toBeLessThan(OWNER_WATCH_MS * 3);
  // The eval set sees its task ended without a result, and fails saying so.
  const result = await launch;
  expect(result.stderr).toContain('task slow terminated');
  expect(result.code).not.toBe(0);
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

  expect((await cancelByCli('cancel', evalSetWorkflowId(name))).code).toBe(0);
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

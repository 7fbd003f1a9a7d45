/**
 * Faults around a run, through the CLI as a user meets them:
 *
 * - the Temporal dev server is killed -9 mid-run and restarted on the same SQLite file after an
 *   outage longer than the gRPC client's own retries last: `steward launch`, its supervisor and
 *   its worker processes ride it out, and every sample is recorded exactly once, by one sample
 *   workflow, with no model call repeated but for samples caught in flight by the kill;
 * - launching again after a completed run does nothing and says so;
 * - launching again after a run with failed samples (fixed since) re-runs only those.
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type Docker from 'dockerode';
import { stringify } from 'yaml';
import type { Client } from '@temporalio/client';
import { Client as TemporalClient } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { ErrorType } from '../src/errors';
import type { SampleErrorRecord } from '../src/logs/store';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../src/sandbox/image';
import { evalSetWorkflowId, taskWorkflowId } from '../src/workflows/types';
import { requireDocker } from './fixtures/docker/docker';
import { expectExit, runCli, STEWARD_BIN, tempDir, uniqueName, writeEvalSet } from './helpers/cli';
import { samplesRunBy } from './helpers/histories';
import { readSampleRecords } from './helpers/results';
import {
  sampleInput,
  startOwnDevServer,
  startRecordingProvider,
  waitFor,
  type OwnDevServer,
  type RecordingProvider,
} from './helpers/server';

/**
 * Longer than the ~20 s the Temporal client's default gRPC retries last, so a call that relies on
 * them alone fails; a dev server restart on a loaded machine adds several seconds more.
 */
const OUTAGE_MS = 25_000;

/** Longer than any launch here takes on a loaded machine; a hung launch is killed and fails. */
const CLI_TIMEOUT_MS = 180_000;

/** Fails with the command's stderr when it exited otherwise than expected. */
/** A sim-provider eval set whose sample inputs name their samples; returns the yaml's path. */
async function writeSimEvalSet(
  dir: string,
  name: string,
  tasks: { name: string; samples: number; sandbox?: string }[],
  settings: Record<string, unknown>,
): Promise<string> {
  for (const task of tasks) {
    const lines = Array.from({ length: task.samples }, (_, i) =>
      JSON.stringify({
        id: `${task.name}-${i + 1}`,
        input: sampleInput(`${task.name}-${i + 1}`, String(i + 1)),
        target: String(i + 1),
      }),
    );
    await fs.writeFile(path.join(dir, `${task.name}.jsonl`), `${lines.join('\n')}\n`);
  }
  const file = path.join(dir, 'evalset.yaml');
  await fs.writeFile(
    file,
    stringify({
      name,
      model: 'openai-api/sim/faults',
      ...settings,
      tasks: tasks.map((t) => ({
        name: t.name,
        dataset: `${t.name}.jsonl`,
        ...(t.sandbox === undefined ? {} : { sandbox: t.sandbox }),
        solver: ['generate'],
        scorer: 'match',
      })),
    }),
  );
  return file;
}

/** Names of the files in `<logDir>/<task>/<kind>`, none if the directory does not exist. */
async function recorded(
  logDir: string,
  task: string,
  kind: 'samples' | 'errors',
): Promise<string[]> {
  return fs.readdir(path.join(logDir, task, kind)).catch(() => []);
}

/**
 * Every execution of every sample workflow on a task's queue: workflow id -> statuses, and the
 * sample indices they ran, all together (samples without a sandbox share workflows).
 */
/** The sample workflows of task `task` of eval set `name` (ids: src/workflows/types.ts). */
async function sampleWorkflows(
  client: Client,
  name: string,
  task: string,
): Promise<{ statuses: Map<string, string[]>; samples: number[] }> {
  const statuses = new Map<string, string[]>();
  const runs: Array<{ workflowId: string; runId: string }> = [];
  const taskId = taskWorkflowId(evalSetWorkflowId(name), task);
  const query = `WorkflowType = 'sampleWorkflow' AND WorkflowId STARTS_WITH '${taskId}/'`;
  for await (const wf of client.workflow.list({ query })) {
    statuses.set(wf.workflowId, [...(statuses.get(wf.workflowId) ?? []), wf.status.name]);
    runs.push(wf);
  }
  const samples = (await samplesRunBy(client, runs)).flat().sort((a, b) => a - b);
  return { statuses, samples };
}

/** Containers and networks on the daemon labelled with eval set `name`. */
async function leftovers(docker: Docker, name: string): Promise<string[]> {
  const filters = JSON.stringify({ label: [`steward.eval_set=${name}`] });
  const [containers, networks] = await Promise.all([
    docker.listContainers({ all: true, filters }),
    docker.listNetworks({ filters }),
  ]);
  return [...containers.map((c) => c.Names[0] ?? c.Id), ...networks.map((n) => n.Name)];
}

function simEnv(base: NodeJS.ProcessEnv, sim: RecordingProvider): NodeJS.ProcessEnv {
  return { ...base, SIM_BASE_URL: sim.provider.url, SIM_API_KEY: 'sim' };
}

describe('a Temporal dev server killed -9 mid-run and restarted on the same database', () => {
  const TASKS = ['boxed', 'plain'];
  const SAMPLES = 40;
  const MAX_SAMPLES = 10;
  let docker: Docker;
  let server: OwnDevServer;
  let sim: RecordingProvider;
  let dir: string;

  beforeAll(async () => {
    docker = await requireDocker();
    await ensureBusyboxImage(docker);
    dir = await tempDir('steward-faults-server-');
    server = await startOwnDevServer(dir);
    sim = await startRecordingProvider({ latencyMs: 1_000, jitterMs: 1_000 });
  });

  afterAll(async () => {
    await sim?.provider.close();
    await server?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  test('the launch rides it out and every sample is recorded once, by one workflow', async () => {
    const name = uniqueName('server-kill');
    // No network per sample: Docker's address pools are shared with whatever else the daemon
    // runs, and this test is about Temporal (agentic.test.ts covers sandbox networks).
    await fs.writeFile(
      path.join(dir, 'sandbox.yaml'),
      stringify({
        services: {
          default: { image: BUSYBOX_IMAGE, command: ['sleep', '3600'], network_mode: 'none' },
        },
      }),
    );
    const file = await writeSimEvalSet(
      dir,
      name,
      [
        { name: 'boxed', samples: SAMPLES, sandbox: 'sandbox.yaml' },
        { name: 'plain', samples: SAMPLES },
      ],
      { max_samples: MAX_SAMPLES },
    );
    const logDir = path.join(dir, 'logs');
    const child = spawn(
      process.execPath,
      [STEWARD_BIN, 'launch', file, '--json', '--log-dir', logDir, '--tend-interval', '2'],
      { env: simEnv(server.env, sim), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    let running = true;
    void exited.then(() => (running = false));
    const killer = setTimeout(() => child.kill('SIGKILL'), CLI_TIMEOUT_MS);

    try {
      // Mid-run: both tasks have recorded samples, and model calls are in flight.
      const recordedNow = async (): Promise<Set<string>> => {
        const names = await Promise.all(TASKS.map((t) => recorded(logDir, t, 'samples')));
        return new Set(names.flat().map((n) => n.replace(/\.e1\.json$/, '')));
      };
      await waitFor(
        async () => {
          if (!running) throw new Error(`launch exited before the kill:\n${stderr}`);
          const done = [...(await recordedNow())];
          return (
            TASKS.every((t) => done.filter((id) => id.startsWith(`${t}-`)).length >= 5) &&
            sim.provider.stats().in_flight > 0
          );
        },
        120_000,
        'samples of both tasks to be recorded while others are in flight',
      );
      const killedPid = await server.pid();
      await server.kill();
      const doneAtKill = await recordedNow();
      // The outage is the fault under test: the run must live through this much silence.
      await sleep(OUTAGE_MS);
      if (!running) throw new Error(`launch exited during the outage:\n${stderr}`);
      await server.restart();
      expect(await server.pid()).not.toBe(killedPid);

      expectExit({ code: await exited, stdout, stderr }, 0);
      expect(stderr).not.toContain('internal error');
      const summary = JSON.parse(stdout) as { tasks: { name: string; completed: number }[] };
      expect(summary.tasks.map((t) => [t.name, t.completed])).toEqual(
        TASKS.map((t) => [t, SAMPLES]),
      );
      expect(doneAtKill.size).toBeLessThan(TASKS.length * SAMPLES);

      for (const task of TASKS) {
        // Recorded exactly once: one file per sample, by the sample's own id.
        const records = await readSampleRecords(logDir, task);
        expect(records.map((r) => r.sample_id).sort()).toEqual(
          Array.from({ length: SAMPLES }, (_, i) => `${task}-${i + 1}`).sort(),
        );
        expect(records.every((r) => r.score.value === 'C')).toBe(true);
        // The task's one worker process lived through the outage: no restart was needed.
        expect(new Set(records.map((r) => r.worker.pid)).size).toBe(1);
        expect(await recorded(logDir, task, 'errors')).toEqual([]);
        // Each sample run by one sample workflow, none repeated, failed or left running.
        const workflows = await sampleWorkflows(server.client, name, task);
        expect(workflows.samples).toEqual(Array.from({ length: SAMPLES }, (_, i) => i));
        const odd = [...workflows.statuses].filter(
          ([, s]) => s.length !== 1 || s[0] !== 'COMPLETED',
        );
        expect(odd).toEqual([]);
      }

      // A model call is repeated only for a sample the kill caught before it was recorded (its
      // attempt may be run again once the server is back), and at most once.
      const calls = [...sim.calls];
      expect(calls).toHaveLength(TASKS.length * SAMPLES);
      const repeated = calls.filter(([, n]) => n > 1);
      expect(repeated.filter(([id, n]) => doneAtKill.has(id) || n > 2)).toEqual([]);
      expect(repeated.length).toBeLessThanOrEqual(TASKS.length * MAX_SAMPLES);

      expect(await leftovers(docker, name)).toEqual([]);
    } finally {
      clearTimeout(killer);
      if (running) child.kill('SIGKILL');
    }
  });
});

describe('launching again', () => {
  let client: Client;

  beforeAll(async () => {
    client = new TemporalClient({
      connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS! }),
      namespace: process.env.TEMPORAL_NAMESPACE,
    });
  });

  afterAll(async () => {
    await client?.connection.close();
  });

  async function evalSetRuns(name: string): Promise<string[]> {
    const runs: string[] = [];
    const query = `WorkflowId = '${evalSetWorkflowId(name)}'`;
    for await (const wf of client.workflow.list({ query })) runs.push(wf.status.name);
    return runs;
  }

  test('after a completed run does nothing, says so, and exits 0', async () => {
    const dir = await tempDir();
    const name = uniqueName('relaunch-done');
    const file = await writeEvalSet(dir, name, [{ name: 'only', samples: 10 }]);
    const logDir = path.join(dir, 'logs');
    const args = ['launch', file, '--json', '--log-dir', logDir];
    expectExit(await runCli(args, { timeoutMs: CLI_TIMEOUT_MS }), 0);
    const before = await fs.readdir(path.join(logDir, 'only', 'samples'));

    const again = await runCli(args, { timeoutMs: CLI_TIMEOUT_MS });
    expectExit(again, 0);
    expect(again.stderr).toContain(
      `nothing to do: all 10 samples of eval set ${name} are already completed (${logDir})`,
    );
    expect(again.stderr).not.toContain('started eval set');
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 'success' });
    expect(await evalSetRuns(name)).toEqual(['COMPLETED']);
    expect(await fs.readdir(path.join(logDir, 'only', 'samples'))).toEqual(before);
  });

  test('after failed samples, fixed since, re-runs only those', async () => {
    const SAMPLES = 20;
    const sim = await startRecordingProvider({ latencyMs: 100 });
    try {
      const dir = await tempDir();
      const name = uniqueName('relaunch-failed');
      const file = await writeSimEvalSet(dir, name, [{ name: 'flaky', samples: SAMPLES }], {
        max_samples: 10,
      });
      const logDir = path.join(dir, 'logs');
      const args = ['launch', file, '--json', '--log-dir', logDir];
      const env = simEnv(process.env, sim);
      const failing = Array.from({ length: SAMPLES / 4 }, (_, i) => `flaky-${4 * (i + 1)}`);
      for (const id of failing) sim.refused.add(id);

      const first = await runCli(args, { env, timeoutMs: CLI_TIMEOUT_MS });
      expectExit(first, 1);
      expect(JSON.parse(first.stdout)).toMatchObject({
        status: 'error',
        tasks: [{ name: 'flaky', samples: SAMPLES, completed: SAMPLES - failing.length }],
      });
      const errors = await recorded(logDir, 'flaky', 'errors');
      expect(errors.sort()).toEqual(failing.map((id) => `${id}.e1.json`).sort());
      const error = JSON.parse(
        await fs.readFile(path.join(logDir, 'flaky', 'errors', errors[0]), 'utf8'),
      ) as SampleErrorRecord;
      expect(error.error_type).toBe(ErrorType.modelFatal);
      expect(error.error).toContain('refused by this test');
      const completedBefore = await fileStates(path.join(logDir, 'flaky', 'samples'));
      expect(completedBefore.size).toBe(SAMPLES - failing.length);
      expect([...sim.calls.values()].every((n) => n === 1)).toBe(true);

      // The cause is fixed: the provider now answers every sample.
      sim.refused.clear();
      sim.calls.clear();
      const second = await runCli(args, { env, timeoutMs: CLI_TIMEOUT_MS });
      expectExit(second, 0);
      expect(second.stderr).toContain(
        `resuming eval set ${name}: ${SAMPLES - failing.length} of ${SAMPLES} samples already completed will not be re-run`,
      );
      expect(JSON.parse(second.stdout)).toMatchObject({
        status: 'success',
        tasks: [
          { samples: SAMPLES, completed: SAMPLES, errored: 0, resumed: SAMPLES - failing.length },
        ],
      });
      // Only the failed samples ran again, once each; the completed records were not touched.
      expect(Object.fromEntries(sim.calls)).toEqual(
        Object.fromEntries(failing.map((id) => [id, 1])),
      );
      const completedAfter = await fileStates(path.join(logDir, 'flaky', 'samples'));
      expect(completedAfter.size).toBe(SAMPLES);
      for (const [key, state] of completedBefore) expect(completedAfter.get(key)).toEqual(state);
      // A sample's error record goes once it completes (docs/log-format.md).
      expect(await recorded(logDir, 'flaky', 'errors')).toEqual([]);
      // The relaunch started each failed sample again and no other.
      const workflows = await sampleWorkflows(client, name, 'flaky');
      const again = failing.map((id) => Number(id.slice('flaky-'.length)) - 1);
      expect(workflows.samples).toEqual(
        [...Array.from({ length: SAMPLES }, (_, i) => i), ...again].sort((a, b) => a - b),
      );
      expect(await evalSetRuns(name)).toEqual(['COMPLETED', 'COMPLETED']);
    } finally {
      await sim.provider.close();
    }
  });
});

/** Each file's inode, mtime and content, by name: what "left untouched" means for a record. */
async function fileStates(
  dir: string,
): Promise<Map<string, { ino: number; mtimeMs: number; text: string }>> {
  const states = new Map<string, { ino: number; mtimeMs: number; text: string }>();
  for (const name of await fs.readdir(dir)) {
    const file = path.join(dir, name);
    const [stat, text] = await Promise.all([fs.stat(file), fs.readFile(file, 'utf8')]);
    states.set(name, { ino: stat.ino, mtimeMs: stat.mtimeMs, text });
  }
  return states;
}

/**
 * `steward pause` / `steward resume` end to end, on the shared dev server, through the CLI as a
 * user types it and through the stock `temporal` CLI as ops tooling would: a pause drains every
 * task to nothing in flight and keeps it there across tends, status and the ramp history say who
 * paused and why, resume lets the run finish with every sample once. And every workflow of the
 * eval set carries the `StewardEvalSet` search attribute, so the stock CLI lists them by name.
 */
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { findTemporalBinary } from '../src/temporal/binary';
import {
  evalSetWorkflowId,
  statusQuery,
  taskStatusQuery,
  taskWorkflowId,
  type EvalSetStatus,
} from '../src/workflows/types';
import { samplesRunBy } from './helpers/histories';
import { replayAllRuns } from './helpers/replay';
import { rampHistory, readSampleRecords } from './helpers/results';
import {
  runCli,
  runCommand,
  tempDir,
  uniqueName,
  writeEvalSet,
  type CliResult,
} from './helpers/cli';

const TEND_MS = 1_000;
const TASKS = [
  { name: 'alpha', samples: 20, latencyMs: 1_000 },
  { name: 'beta', samples: 20, latencyMs: 1_000 },
];
const SAMPLES = TASKS.reduce((n, t) => n + t.samples, 0);
/** Each task runs this many samples at once: the run has about 10 s of work. */
const SETPOINT = 2;

let connection: Connection;
let client: Client;
let temporalBin: string;

beforeAll(async () => {
  connection = await openConnection({ address: process.env.TEMPORAL_ADDRESS! });
  client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE });
  temporalBin = await findTemporalBinary();
});

afterAll(async () => {
  await connection?.close();
});

function temporalCli(args: string[]): Promise<CliResult> {
  return runCommand(temporalBin, [
    ...args,
    '--address',
    process.env.TEMPORAL_ADDRESS!,
    '--namespace',
    process.env.TEMPORAL_NAMESPACE ?? 'default',
  ]);
}

/** What each task's own workflow says now: live, not as of the last tend. */
async function live(name: string): Promise<{ inFlight: number; done: number }> {
  const id = evalSetWorkflowId(name);
  let inFlight = 0;
  let done = 0;
  for (const task of TASKS) {
    const s = await client.workflow.getHandle(taskWorkflowId(id, task.name)).query(taskStatusQuery);
    inFlight += s.in_flight;
    done += s.completed + s.errored;
  }
  return { inFlight, done };
}

async function status(name: string): Promise<EvalSetStatus> {
  return client.workflow.getHandle(evalSetWorkflowId(name)).query(statusQuery);
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch((err: Error) => {
      if (err.message.startsWith('launch exited')) throw err;
      return undefined;
    });
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

/** Pauses have drained the run: nothing in flight, and no sample completes for 3+ tends. */
async function expectHeld(name: string): Promise<number> {
  await until('in flight to drain', async () =>
    (await live(name)).inFlight === 0 ? true : undefined,
  );
  const { done } = await live(name);
  const watchUntil = Date.now() + 3.5 * TEND_MS;
  while (Date.now() < watchUntil) {
    expect(await live(name)).toEqual({ inFlight: 0, done });
    await sleep(250);
  }
  return done;
}

test('pause drains the run and holds it, resume finishes it; by steward and by the stock CLI', async () => {
  const name = uniqueName('pause');
  try {
    await pauseAndResume(name);
  } catch (err) {
    // Where each stood, so a hang names its place.
    for (const wid of [evalSetWorkflowId(name), taskWorkflowId(evalSetWorkflowId(name), 'alpha')]) {
      const shown = await temporalCli(['workflow', 'show', '--workflow-id', wid]);
      console.log(wid, shown.stdout.slice(-6000));
    }
    throw err;
  } finally {
    // A failed check leaves no launch running behind it.
    await client.workflow
      .getHandle(evalSetWorkflowId(name))
      .cancel()
      .catch(() => undefined);
  }
});

async function pauseAndResume(name: string): Promise<void> {
  const id = evalSetWorkflowId(name);
  const dir = await tempDir();
  const logDir = path.join(dir, 'logs');
  const file = await writeEvalSet(dir, name, TASKS, {
    tend_interval: TEND_MS / 1000,
    samples_ramp: [1, SETPOINT],
  });
  const launched = runCli(['launch', file, '--json', '--log-dir', logDir], { timeoutMs: 90_000 });
  let exited: CliResult | undefined;
  void launched.then((r) => (exited = r));
  await until('a few samples', async () => {
    if (exited) throw new Error(`launch exited early: ${exited.stderr}`);
    return (await live(name)).done >= 2 ? true : undefined;
  });

  // steward pause: answered at once, with who and why kept.
  const paused = await runCli(['pause', name, '--reason', 'provider maintenance']);
  expect(paused).toMatchObject({ code: 0 });
  expect(paused.stdout).toContain(`paused eval set ${name}`);
  const heldAt = await expectHeld(name);
  expect(heldAt).toBeLessThan(SAMPLES);

  const again = await runCli(['pause', name, '--reason', 'twice']);
  expect(again.code).toBe(0);
  expect(again.stdout).toMatch(/is already paused by \S+@\S+ since .*: provider maintenance/);

  const json = JSON.parse((await runCli(['status', name, '--json'])).stdout) as EvalSetStatus;
  expect(json.paused).toMatchObject({ reason: 'provider maintenance', by: expect.any(String) });
  expect(json.paused!.by).toMatch(/@/);
  const text = (await runCli(['status', name])).stdout;
  expect(text).toMatch(/paused by \S+@\S+ since \S+: provider maintenance/);
  // The pause holds every task, and the ramp keeps the setpoint that resume gives back.
  expect(
    (await status(name)).tasks.map(({ ramp_state, ramp_reason, setpoint }) => ({
      ramp_state,
      ramp_reason,
      setpoint,
    })),
  ).toEqual(
    TASKS.map(() => ({
      ramp_state: 'held',
      ramp_reason: 'paused: provider maintenance',
      setpoint: SETPOINT,
    })),
  );

  expect((await runCli(['resume', name])).stdout).toContain(`resumed eval set ${name}`);
  expect((await runCli(['resume', name])).stdout).toContain(`eval set ${name} is not paused`);
  await until('samples to flow again', async () =>
    (await live(name)).done > heldAt ? true : undefined,
  );

  // The stock CLI: a refused update never enters history; a signal pauses, an update resumes.
  const refused = await temporalCli([
    'workflow',
    'update',
    'execute',
    '--workflow-id',
    id,
    '--name',
    'pause',
    '--input',
    '{}',
  ]);
  expect(refused.code).not.toBe(0);
  expect(refused.stderr).toContain('reason');
  const signalled = await temporalCli([
    'workflow',
    'signal',
    '--workflow-id',
    id,
    '--name',
    'pause',
    '--input',
    '{"reason": "ops: quota audit", "by": "ops-bot"}',
  ]);
  expect(signalled.code).toBe(0);
  const heldAgainAt = await expectHeld(name);
  expect(heldAgainAt).toBeLessThan(SAMPLES);
  expect((await status(name)).paused).toMatchObject({ reason: 'ops: quota audit', by: 'ops-bot' });
  const updated = await temporalCli([
    'workflow',
    'update',
    'execute',
    '--workflow-id',
    id,
    '--name',
    'unpause',
    '--input',
    '{"by": "ops-bot"}',
  ]);
  expect(updated.code).toBe(0);
  expect(updated.stdout).toContain('resumed after');

  const result = await launched;
  expect(result.stderr).not.toContain('internal error');
  expect(result.code).toBe(0);
  for (const task of TASKS) {
    const records = await readSampleRecords(logDir, task.name);
    expect(new Set(records.map((r) => r.sample_id)).size).toBe(task.samples);
    expect(records).toHaveLength(task.samples);
  }

  const history = await rampHistory(logDir);
  const steering = history
    .filter((e) => e.kind === 'pause' || e.kind === 'unpause')
    .map(({ kind, reason, by, task }) => ({ kind, reason, by, task }));
  expect(steering).toEqual([
    { kind: 'pause', task: '*', reason: 'provider maintenance', by: expect.stringMatching(/@/) },
    {
      kind: 'unpause',
      task: '*',
      reason: expect.stringMatching(/^resumed after \d+ s paused \(provider maintenance\)$/),
      by: expect.stringMatching(/@/),
    },
    { kind: 'pause', task: '*', reason: 'ops: quota audit', by: 'ops-bot' },
    {
      kind: 'unpause',
      task: '*',
      reason: expect.stringMatching(/^resumed after \d+ s paused/),
      by: 'ops-bot',
    },
  ]);
  // The repeated pause and resume changed nothing, so left nothing.
  expect(history.filter((e) => e.reason === 'twice')).toEqual([]);

  // Every workflow of the eval set, by its search attribute: the eval set, its tasks, its samples.
  const listed = await temporalCli([
    'workflow',
    'list',
    '--query',
    `StewardEvalSet="${name}"`,
    '--output',
    'json',
  ]);
  expect(listed.code).toBe(0);
  const runs = (
    JSON.parse(listed.stdout) as { execution: { workflowId: string; runId: string } }[]
  ).map((w) => w.execution);
  const ids = runs.map((r) => r.workflowId);
  expect(ids).toContain(id);
  for (const task of TASKS) {
    const taskId = taskWorkflowId(id, task.name);
    expect(ids).toContain(taskId);
    // Its samples' workflows (sandbox-free samples admitted together share one) ran each once.
    const sampleRuns = runs.filter((r) => r.workflowId.startsWith(`${taskId}/`));
    const ran = (await samplesRunBy(client, sampleRuns)).flat().sort((a, b) => a - b);
    expect(ran).toEqual(Array.from({ length: task.samples }, (_, i) => i));
  }
  const samplesRuns = runs.filter((r) =>
    TASKS.some((t) => r.workflowId.startsWith(`${taskWorkflowId(id, t.name)}/`)),
  );
  expect(runs).toHaveLength(1 + TASKS.length + samplesRuns.length);

  // Each history the pause made replays on today's workflow code.
  await replayAllRuns(client, [id, ...TASKS.map((t) => taskWorkflowId(id, t.name))]);
}

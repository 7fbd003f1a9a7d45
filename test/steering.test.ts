/**
 * The `evalSet` workflow owns the run's state and trusts no input: steering updates answer with a
 * refusal at once, steering signals that do not parse or cannot apply are recorded as refused,
 * no payload ever fails a workflow task, and a long run continues-as-new carrying its holds,
 * range and ramp state without draining its tasks. Against a dev server of the file's own whose
 * continue-as-new suggestion is low, so every run here hands over several times.
 */
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, QueryNotRegisteredError, WorkflowUpdateFailedError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { findTemporalBinary } from '../src/temporal/binary';
import { steerAcrossHandOvers } from '../src/client/steer-retry';
import { mulberry32 } from '../src/util/random';
import {
  evalSetWorkflowId,
  holdRampUpdate,
  resumeRampUpdate,
  setSamplesRampUpdate,
  statusQuery,
  taskWorkflowId,
  type EvalSetStatus,
} from '../src/workflows/types';
import { startOwnDevServer, type OwnDevServer } from './helpers/server';
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

/** Events after which the server suggests continue-as-new (its default is thousands). */
const SUGGEST_CONTINUE_AS_NEW = 150;

let server: OwnDevServer;
let client: Client;
let env: NodeJS.ProcessEnv;
let address: string;
let temporalBin: string;

beforeAll(async () => {
  server = await startOwnDevServer(await tempDir('steward-steer-'), {
    'limit.historyCount.suggestContinueAsNew': SUGGEST_CONTINUE_AS_NEW,
  });
  ({ client, env, address } = server);
  temporalBin = await findTemporalBinary();
});

afterAll(async () => {
  await server?.close();
});

/** Launches an eval set in the background; resolves once its tasks are planned. */
async function launch(
  name: string,
  tasks: { name: string; samples: number; latencyMs: number }[],
  settings: Record<string, unknown>,
): Promise<{ logDir: string; done: Promise<CliResult> }> {
  const dir = await tempDir();
  const file = await writeEvalSet(dir, name, tasks, settings);
  const logDir = path.join(dir, 'logs');
  const done = runCli(['launch', file, '--json', '--log-dir', logDir], { env });
  const handle = client.workflow.getHandle(evalSetWorkflowId(name));
  for (;;) {
    const status = await handle.query(statusQuery).catch(() => undefined);
    if (status && status.tasks.length === tasks.length) break;
    const exited = await Promise.race([done, sleep(250).then(() => undefined)]);
    if (exited) throw new Error(`launch exited early: ${exited.stderr}`);
  }
  return { logDir, done };
}

/**
 * Every run of every workflow of the eval set: none may have failed a workflow task. The one
 * failure that is no failure is the server's "unhandled command": a completion (continue-as-new,
 * or the end) raced a new signal, and the worker simply runs the task again with it.
 */
async function workflowTaskFailures(ids: string[]): Promise<string[]> {
  const failures: string[] = [];
  for (const id of ids) {
    for await (const run of client.workflow.list({ query: `WorkflowId = '${id}'` })) {
      const history = await client.workflow.getHandle(id, run.runId).fetchHistory();
      for (const event of history.events ?? []) {
        const failed = event.workflowTaskFailedEventAttributes;
        const raced = failed?.cause === UNHANDLED_COMMAND;
        if (failed && !raced) failures.push(`${id} ${run.runId}: ${failed.failure?.message}`);
      }
    }
  }
  return failures;
}

const UNHANDLED_COMMAND =
  temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND;

async function runsOf(id: string): Promise<number> {
  let runs = 0;
  for await (const _ of client.workflow.list({ query: `WorkflowId = '${id}'` })) runs++;
  return runs;
}

async function expectCompletedOnce(
  result: CliResult,
  { name, logDir }: { name: string; logDir: string },
  tasks: { name: string; samples: number }[],
): Promise<void> {
  expect(result.stderr).not.toContain('internal error');
  if (result.code !== 0) {
    const id = evalSetWorkflowId(name);
    const where = await whereEach([id, ...tasks.map((t) => taskWorkflowId(id, t.name))]);
    throw new Error(`launch ended with ${result.code}\n${where}\n${result.stderr.slice(-4000)}`);
  }
  for (const task of tasks) {
    const records = await readSampleRecords(logDir, task.name);
    expect(records).toHaveLength(task.samples);
    expect(new Set(records.map((r) => `${r.sample_id}/${r.epoch}`)).size).toBe(task.samples);
  }
}

/** What each workflow is doing: said when a launch does not end, so a hang names its place. */
async function whereEach(ids: string[]): Promise<string> {
  const lines: string[] = [];
  for (const id of ids) {
    const handle = client.workflow.getHandle(id);
    const described = await handle.describe().catch((err: Error) => err);
    if (described instanceof Error) {
      lines.push(`${id}: ${described.message}`);
      continue;
    }
    const pending = (described.raw.pendingActivities ?? []).map(
      (a) => `${a.activityType?.name} (attempt ${a.attempt}) ${a.lastFailure?.message ?? ''}`,
    );
    const status = await handle.query(statusQuery).catch((err: Error) => err.message);
    lines.push(
      `${id} ${described.runId}: ${described.status.name}, ${described.historyLength} events, ` +
        `pending [${pending.join('; ')}], status ${JSON.stringify(status)}`,
    );
  }
  return lines.join('\n');
}

function temporalCli(args: string[]): Promise<CliResult> {
  return runCommand(temporalBin, [...args, '--address', address, '--namespace', server.namespace], {
    env,
  });
}

/**
 * The stock CLI, sent again when a hand-over dropped it unapplied: at the instant a run
 * continues-as-new the server refuses signals and updates to it ("workflow is closing"), and an
 * update whose workflow task the server refused (a signal landed during the hand-over) is aborted
 * ("unexpected workflow task failure"). The `temporal` CLI does not retry either (our client and
 * CLI do: src/client/steer-retry.ts); README tells operators the same.
 */
async function temporalCliAcrossContinueAsNew(args: string[]): Promise<CliResult> {
  for (let attempt = 1; ; attempt++) {
    const result = await temporalCli(args);
    const dropped = /workflow is closing|unexpected workflow task failure/.test(result.stderr);
    if (attempt === 5 || !dropped) return result;
    await sleep(200);
  }
}

test('updates refuse at once; bad signals are recorded as refused; the run goes on', async () => {
  const name = uniqueName('steer');
  const tasks = [
    { name: 'a', samples: 60, latencyMs: 300 },
    { name: 'b', samples: 60, latencyMs: 300 },
  ];
  const { logDir, done } = await launch(name, tasks, {
    tend_interval: 1,
    samples_ramp: [2, 6],
  });
  const id = evalSetWorkflowId(name);
  const handle = client.workflow.getHandle(id);

  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => 'accepted',
      (err: unknown) => {
        expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
        return (err as Error & { cause?: Error }).cause?.message;
      },
    );
  expect(
    await refusal(
      handle.executeUpdate(holdRampUpdate, { args: [{ reason: 'look', task: 'nope' }] }),
    ),
  ).toBe('holdRamp: no task "nope"; the tasks are a, b');
  expect(
    await refusal(
      handle.executeUpdate(setSamplesRampUpdate, {
        args: [{ rnage: [2, 6] } as never],
      }),
    ),
  ).toBe(
    'setSamplesRamp: range: expected [lo, hi] (whole numbers from 1) or false; unknown key "rnage"',
  );
  expect(
    await refusal(handle.executeUpdate(setSamplesRampUpdate, { args: [{ range: [5, 2] }] })),
  ).toBe('setSamplesRamp: range: lo must not exceed hi ([5,2])');

  // The stock CLI, as the operator typed it: the update answers with the refusal ...
  const update = await temporalCli(updateArgs(id, 'setSamplesRamp', '{"range": "bogus"}'));
  expect(update.code).not.toBe(0);
  // (It prints the message logfmt-quoted.)
  expect(update.stderr).toContain(
    'unable to update workflow: setSamplesRamp: range: expected [lo, hi] (whole numbers from 1) or false (\\"bogus\\") (type: StewardBadInput',
  );
  // ... and the signals are taken in, then refused where the operator can see it.
  for (const input of ['{"rnage": [2, 6]}', '{"range": "bogus"}', '{"range": [5, 2]}']) {
    const signal = await temporalCli([
      'workflow',
      'signal',
      '--workflow-id',
      id,
      '--name',
      'setSamplesRamp',
      '--input',
      input,
    ]);
    expect(signal.code).toBe(0);
  }
  const signalled = await temporalCli([
    'workflow',
    'signal',
    '--workflow-id',
    id,
    '--name',
    'holdRamp',
    '--input',
    '{"reason": "x", "task": "ghost"}',
  ]);
  expect(signalled.code).toBe(0);
  // The CLI's own hold goes as an update and answers what was recorded.
  const hold = await runCli(['ramp', 'hold', 'a', '--reason', 'watching', '--eval-set', name], {
    env,
  });
  expect(hold).toMatchObject({
    code: 0,
    stdout: `held the ramp of task a in eval set ${name}: "watching"\n`,
  });
  const status = await runCli(['status', name, '--json'], { env });
  expect(status.code).toBe(0);

  await expectCompletedOnce(await done, { name, logDir }, tasks);
  const refused = (await rampHistory(logDir)).filter((e) => e.kind === 'refused');
  expect(refused.map((e) => e.reason)).toEqual([
    'setSamplesRamp: range: expected [lo, hi] (whole numbers from 1) or false; unknown key "rnage"',
    'setSamplesRamp: range: expected [lo, hi] (whole numbers from 1) or false ("bogus")',
    'setSamplesRamp: range: lo must not exceed hi ([5,2])',
    'holdRamp: no task "ghost"; the tasks are a, b',
  ]);
  const holds = (await rampHistory(logDir)).filter((e) => e.kind === 'hold');
  expect(holds).toMatchObject([{ task: 'a', reason: 'watching' }]);
  const ids = [id, taskWorkflowId(id, 'a'), taskWorkflowId(id, 'b')];
  expect(await workflowTaskFailures(ids)).toEqual([]);
  await replayAllRuns(client, ids);
});

test('a long run continues-as-new with its holds, range and ramp, and never drains', async () => {
  const name = uniqueName('steer-can');
  // One task at a time: the second starts in a later run than the first.
  const tasks = [
    { name: 'first', samples: 200, latencyMs: 400 },
    { name: 'second', samples: 200, latencyMs: 400 },
  ];
  const { logDir, done } = await launch(name, tasks, {
    tend_interval: 0.5,
    max_tasks: 1,
    samples_ramp: [4, 8],
  });
  const id = evalSetWorkflowId(name);
  const handle = client.workflow.getHandle(id);
  await handle.executeUpdate(holdRampUpdate, { args: [{ reason: 'steady', task: 'second' }] });
  await handle.executeUpdate(setSamplesRampUpdate, { args: [{ range: [3, 6] }] });

  // Wait for two hand-overs, then look at what the newest run carries.
  while ((await runsOf(id)) < 3) {
    const exited = await Promise.race([done, sleep(500).then(() => undefined)]);
    if (exited) throw new Error(`finished before two hand-overs: ${exited.stderr}`);
  }
  const status: EvalSetStatus = await handle.query(statusQuery);
  expect(status.runs).toBeGreaterThanOrEqual(3);
  expect(status.holds.tasks.second).toMatchObject({ reason: 'steady', task: 'second' });
  expect(status.settings?.samples).toMatchObject({ type: 'ramp', lo: 3, hi: 6 });
  for (const task of status.tasks.filter((t) => t.state === 'running')) {
    expect(task.setpoint).toBeGreaterThanOrEqual(3);
    expect(task.setpoint).toBeLessThanOrEqual(6);
  }

  await expectCompletedOnce(await done, { name, logDir }, tasks);
  expect(await runsOf(id)).toBeGreaterThanOrEqual(3);
  const history = await rampHistory(logDir);
  expect(history.filter((e) => e.kind === 'hold')).toHaveLength(1);
  expect(history.filter((e) => e.kind === 'range')).toMatchObject([
    { reason: 'samples_ramp set to [3, 6]' },
  ]);
  // The log has every entry once, across the hand-overs.
  const times = history.map((e) => `${e.time} ${e.task} ${e.kind} ${e.to} ${e.reason}`);
  expect(new Set(times).size).toBe(times.length);
  const ids = [id, taskWorkflowId(id, 'first'), taskWorkflowId(id, 'second')];
  expect(await workflowTaskFailures(ids)).toEqual([]);
  expect(await replayAllRuns(client, ids)).toBeGreaterThanOrEqual(5);
});

// ---- property test: a flood of random and malformed steering -------------------------------

type Sent = { via: 'client' | 'temporal'; kind: 'signal' | 'update' | 'query'; name: string };

/** Random JSON, from scalars to nested objects with odd keys. */
function junk(random: () => number, depth = 0): unknown {
  const pick = Math.floor(random() * (depth > 2 ? 7 : 10));
  switch (pick) {
    case 0:
      return null;
    case 1:
      return Math.floor(random() * 2e6) - 1e6;
    case 2:
      return random() * 1e300;
    case 3:
      return ['', 'x', 'a'.repeat(5_000), '🙂', '__proto__', 'range'][Math.floor(random() * 6)];
    case 4:
      return random() < 0.5;
    case 5:
      return -0.5;
    case 6:
      return 'constructor';
    case 7:
      return Array.from({ length: Math.floor(random() * 4) }, () => junk(random, depth + 1));
    default: {
      const keys = ['range', 'reason', 'task', 'by', 'rnage', 'tasks', 'limit', '__proto__'];
      return Object.fromEntries([
        // A key no input has, so junk is never valid by chance.
        ['x', junk(random, depth + 1)],
        ...Array.from({ length: Math.floor(random() * 4) }, () => [
          keys[Math.floor(random() * keys.length)],
          junk(random, depth + 1),
        ]),
      ]);
    }
  }
}

test('1,000+ random and malformed payloads to every handler: no workflow task fails, every refusal shows', async () => {
  const name = uniqueName('steer-fuzz');
  const tasks = [
    // Slow samples: at the flood's setpoints (12 at most) the run lasts 250 s, longer than the
    // flood takes on a busy machine; a widened range after it ends the run in about 30 s.
    { name: 'p', samples: 600, latencyMs: 5_000 },
    { name: 'q', samples: 600, latencyMs: 5_000 },
  ];
  const { logDir, done } = await launch(name, tasks, { tend_interval: 1, samples_ramp: [5, 10] });
  const id = evalSetWorkflowId(name);
  const handle = client.workflow.getHandle(id);
  const random = mulberry32(20261201);
  const oneOf = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const taskNames = tasks.map((t) => t.name);

  /** A payload that parses and applies; the ranges stay small, so the run outlasts the flood. */
  const valid: Record<string, () => unknown> = {
    holdRamp: () => ({
      reason: `r${random()}`,
      ...(random() < 0.5 ? { task: oneOf(taskNames) } : {}),
    }),
    resumeRamp: () => (random() < 0.5 ? { task: oneOf(taskNames) } : {}),
    setSamplesRamp: () => {
      const lo = 1 + Math.floor(random() * 10);
      return { range: [lo, lo + Math.floor(random() * 3)] };
    },
    // A host's memory, under the gate's floor or not: it holds climbs, never refuses anything.
    hostReport: () => {
      const totalBytes = 2 ** 34;
      const headroomBytes = Math.floor(random() * totalBytes);
      return {
        host: `fuzz:${Math.floor(random() * 3)}`,
        totalBytes,
        headroomBytes,
        lowestHeadroomBytes: Math.floor(random() * headroomBytes),
        fleetResidentBytes: Math.floor(random() * 2 ** 31),
        processes: Math.floor(random() * 8),
      };
    },
  };
  /** Near misses first (one thing wrong), then junk. */
  const invalid: (() => unknown)[] = [
    () => ({ rnage: [2, 6] }),
    () => ({ range: 'bogus' }),
    () => ({ range: [6, 2] }),
    () => ({ range: [0, 5] }),
    () => ({ range: [1.5, 5] }),
    () => ({ range: [1, 2, 3] }),
    () => ({ reason: '' }),
    () => ({ reason: '   ' }),
    () => ({ reason: 'x', task: 'no such task' }),
    () => ({ reason: 'x', task: 'ghost' }),
    () => ({ task: 'ghost' }),
    () => ({ reason: 5 }),
    () => ({ reason: 'x', extra: 1 }),
    () => ({ tasks: 'p', limit: -1 }),
    () => ({ tasks: ['p'], pid: 1, limit: 1, rateLimitEpisodes: -3, cuts: 0, retries: 0 }),
    () => ({ task: 17 }),
    () => ({ task: 'p', result: { completed: 1e9 } }),
    () => ({ host: 'h:1', totalBytes: 0, headroomBytes: 0, lowestHeadroomBytes: 0 }),
    () => ({
      host: 'h:1',
      totalBytes: 2 ** 34,
      headroomBytes: 2 ** 30,
      lowestHeadroomBytes: 2 ** 31,
      fleetResidentBytes: 0,
      processes: 1,
    }),
    () => junk(random),
    () => junk(random),
    () => junk(random),
  ];
  const signalNames = [
    'holdRamp',
    'resumeRamp',
    'setSamplesRamp',
    'workerReport',
    'hostReport',
    'taskDone',
  ];
  const updateNames = ['holdRamp', 'resumeRamp', 'setSamplesRamp'];

  let refusedSignals = 0;
  let acceptedUpdates = 0;
  let refusedUpdates = 0;
  let answeredQueries = 0;
  const unansweredQueries: string[] = [];
  const sent: Sent[] = [];

  const sendOne = async (via: 'client' | 'temporal'): Promise<void> => {
    const kind = oneOf(['signal', 'signal', 'update', 'update', 'query'] as const);
    const unknownName = random() < 0.05;
    const names = kind === 'signal' ? signalNames : kind === 'update' ? updateNames : ['status'];
    const target = unknownName ? `${oneOf(names)}x` : oneOf(names);
    const isValid = !unknownName && kind !== 'query' && target in valid && random() < 0.3;
    const payload = isValid ? valid[target]() : oneOf(invalid)();
    sent.push({ via, kind, name: target });
    if (kind === 'signal') {
      if (via === 'client') await handle.signal(target, payload);
      else {
        const input = JSON.stringify(payload) ?? 'null';
        const r = await temporalCliAcrossContinueAsNew([
          'workflow',
          'signal',
          '--workflow-id',
          id,
          '--name',
          target,
          '--input',
          input,
        ]);
        expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({
          code: 0,
          stderr: '',
        });
      }
      // Every signal with a bad payload or name is refused; a valid one applies.
      if (!isValid) refusedSignals++;
      return;
    }
    if (kind === 'update') {
      // The refusal's words, or undefined when the update applied.
      const refusal =
        via === 'client'
          ? await steerAcrossHandOvers(() =>
              handle.executeUpdate(target, { args: [payload] }),
            ).then(
              () => undefined,
              (err: Error & { cause?: Error }) => err.cause?.message ?? err.message,
            )
          : await temporalCliAcrossContinueAsNew(
              updateArgs(id, target, JSON.stringify(payload) ?? 'null'),
            ).then((r) => (r.code === 0 ? undefined : r.stderr || `exit ${r.code}`));
      // A valid update that fails says why, so a failure here names its cause.
      if (isValid) expect({ target, payload, refusal }).toEqual({ target, payload });
      else expect(refusal).toBeDefined();
      if (refusal === undefined) acceptedUpdates++;
      else refusedUpdates++;
      return;
    }
    // Queries take no arguments: whatever comes is ignored, and an unknown name is an error.
    const failed = await handle.query(target, payload).then(
      () => undefined,
      (err: Error) => err,
    );
    // The SDK's QueryNotRegisteredError is any failure the worker answered with (the server's
    // QueryFailed): an unknown name, or a handler that threw, which no payload may cause.
    if (unknownName) expect(failed).toBeInstanceOf(QueryNotRegisteredError);
    else if (failed === undefined) answeredQueries++;
    else {
      // The server may also give up on a worker this flood keeps busy, the eval set continuing
      // as new every few seconds (FAILED_PRECONDITION "no poller seen for task queue recently"):
      // not the payload's doing, and bounded below.
      expect(failed).not.toBeInstanceOf(QueryNotRegisteredError);
      unansweredQueries.push(`${failed.message}: ${(failed.cause as Error | undefined)?.message}`);
    }
  };

  const CLIENT_SENDS = 1_000;
  const CLI_SENDS = 40;
  for (let i = 0; i < CLIENT_SENDS; i += 20) {
    // Every send of the batch ends before a failed one fails the test: none is left retrying
    // on a connection the test has closed (it would fail whichever test file runs next).
    const batch = await Promise.allSettled(Array.from({ length: 20 }, () => sendOne('client')));
    for (const sent of batch) if (sent.status === 'rejected') throw sent.reason;
  }
  for (let i = 0; i < CLI_SENDS; i++) await sendOne('temporal');
  // Sent while it ran: a payload after its end would prove nothing.
  expect((await handle.describe()).status.name).toBe('RUNNING');
  await handle.executeUpdate(resumeRampUpdate, { args: [{}] });
  await handle.executeUpdate(setSamplesRampUpdate, { args: [{ range: [100, 100] }] });
  expect(sent.length).toBe(CLIENT_SENDS + CLI_SENDS);
  expect(refusedUpdates).toBeGreaterThan(100);
  expect(acceptedUpdates).toBeGreaterThan(20);
  console.log(
    `queries: ${answeredQueries} answered, ${unansweredQueries.length} not`,
    unansweredQueries,
  );
  expect(answeredQueries).toBeGreaterThan(100);
  expect(unansweredQueries.length).toBeLessThan(answeredQueries / 10);

  await expectCompletedOnce(await done, { name, logDir }, tasks);
  const refused = (await rampHistory(logDir)).filter((e) => e.kind === 'refused');
  expect(refused).toHaveLength(refusedSignals);
  const ids = [id, ...taskNames.map((t) => taskWorkflowId(id, t))];
  expect(await workflowTaskFailures(ids)).toEqual([]);
  expect(await runsOf(id)).toBeGreaterThanOrEqual(2);
  await replayAllRuns(client, ids);
});

/** `temporal workflow update execute` on the workflow `id`: the update `name` with `input` (JSON). */
function updateArgs(id: string, name: string, input: string): string[] {
  return ['workflow', 'update', 'execute', '--workflow-id', id, '--name', name, '--input', input];
}

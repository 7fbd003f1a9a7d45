/**
 * A large task continues-as-new before the history limits, without draining: with the dev
 * server's continue-as-new suggestion set low, a 2,000-sample task hands over several times and
 * no sample in flight is cancelled or run twice across the hand-overs.
 */
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import {
  evalSetWorkflowId,
  samplesDoneSignal,
  type EvalTaskInput,
  taskWorkflowId,
} from '../src/workflows/types';
import { startOwnDevServer, type OwnDevServer } from './helpers/server';
import { temporal } from '@temporalio/proto';
import { fetchHistory, runsOfEvalSet, sampleRunKinds, samplesRunBy } from './helpers/histories';
import { SAMPLES_PER_WORKFLOW } from '../src/activities/task';
import { replayAllRuns } from './helpers/replay';
import { readSampleRecords } from './helpers/results';
import { runCli, tempDir, uniqueName, writeEvalSet } from './helpers/cli';

const SAMPLES = 2_000;

describe('continue-as-new without draining', () => {
  let server: OwnDevServer;
  let client: Client;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    // Reports come in batches (a few hundred events for the whole task): low enough to hand over
    // several times.
    server = await startOwnDevServer(await tempDir('steward-can-'), {
      'limit.historyCount.suggestContinueAsNew': 150,
    });
    ({ client, env } = server);
  });

  afterAll(async () => {
    await server?.close();
  });

  test('a 2,000-sample task hands over several times and every sample runs exactly once', async () => {
    const dir = await tempDir();
    const name = uniqueName('can');
    const file = await writeEvalSet(
      dir,
      name,
      [{ name: 'big', samples: SAMPLES, latencyMs: 5, jitterMs: 20 }],
      {
        max_samples: 100,
      },
    );
    const logDir = path.join(dir, 'logs');
    const run = await runCli(['launch', file, '--json', '--log-dir', logDir], { env });
    expect(run.stderr).not.toContain('internal error');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).tasks[0]).toMatchObject({
      samples: SAMPLES,
      completed: SAMPLES,
      errored: 0,
    });

    // The task workflow ran as several runs, each closed by continue-as-new but the last.
    const taskId = taskWorkflowId(evalSetWorkflowId(name), 'big');
    const runs: string[] = [];
    for await (const wf of client.workflow.list({ query: `WorkflowId = '${taskId}'` }))
      runs.push(wf.status.name);
    expect(runs.length).toBeGreaterThanOrEqual(3);
    expect(runs.filter((s) => s === 'CONTINUED_AS_NEW')).toHaveLength(runs.length - 1);
    expect(runs.filter((s) => s === 'COMPLETED')).toHaveLength(1);

    // No hand-over was refused for a report that came in while it was being made: the server
    // fails such a workflow task (UnhandledCommand), and the SDK then replays the whole run.
    const refused = await unhandledCommandFailures(client, taskId);
    console.log(
      `${runs.length - 1} hand-overs, ${refused.length} refused, overtaken by ${JSON.stringify(refused)}`,
    );
    // Reports from this host's worker are held, so none of them overtook a hand-over. (The eval
    // set's `setLimits` still can, rarely: that one is not the worker's to hold.) Each refusal
    // names what overtook it, so this check is not empty when hand-overs were refused.
    for (const overtakers of refused) expect(overtakers.length).toBeGreaterThan(0);
    expect(refused.flat()).not.toContain(samplesDoneSignal.name);
    // And the hold ended with the hand-over: each next run heard from its samples as soon as its
    // first workflow task was done (which ends the hold), not when the hold ran out (10 s).
    const silences = await silenceAfterHandOver(client, taskId);
    console.log(
      `first report after each hand-over: ${silences.map((ms) => `${ms} ms`).join(', ')}`,
    );
    expect(silences.length).toBeGreaterThanOrEqual(1);
    for (const ms of silences) expect(ms).toBeLessThan(5_000);

    // Each sample workflow started once and completed: none cancelled, terminated or repeated.
    // Without a sandbox, samples admitted together share a workflow, at most 16 to one; every
    // sample ran in exactly one of them.
    const samples = new Map<string, string[]>();
    const query = `WorkflowType = 'sampleWorkflow' AND WorkflowId STARTS_WITH '${taskWorkflowId(evalSetWorkflowId(name), 'big')}/'`;
    for await (const wf of client.workflow.list({ query })) {
      samples.set(wf.workflowId, [...(samples.get(wf.workflowId) ?? []), wf.status.name]);
    }
    const odd = [...samples].filter(([, runs]) => runs.length !== 1 || runs[0] !== 'COMPLETED');
    expect(odd).toEqual([]);
    const allSampleRuns = await runsOfEvalSet(client, name, ['sampleWorkflow']);
    const groups = await samplesRunBy(client, allSampleRuns);
    const ran = groups.flat().sort((a, b) => a - b);
    expect(ran).toEqual(Array.from({ length: SAMPLES }, (_, i) => i));
    expect(Math.max(...groups.map((g) => g.length))).toBeLessThanOrEqual(SAMPLES_PER_WORKFLOW);
    // Admissions of a whole setpoint (100) at the start form full groups.
    expect(groups.filter((g) => g.length === SAMPLES_PER_WORKFLOW).length).toBeGreaterThan(0);
    expect(samples.size).toBe(groups.length);
    console.log(`${SAMPLES} samples in ${groups.length} sample workflows`);

    // And each was recorded once. (Not necessarily by its activity's first attempt: on a loaded
    // machine a heartbeat can time out and Temporal runs the activity again, which is its design;
    // the hand-over is what is under test, and the listing above shows it started none twice.)
    const records = await readSampleRecords(logDir, 'big');
    expect(records).toHaveLength(SAMPLES);
    expect(new Set(records.map((r) => r.sample_id)).size).toBe(SAMPLES);
    const retried = records.filter((r) => r.attempt > 1).length;
    if (retried > 0) console.log(`${retried} samples recorded by a later activity attempt`);

    // Without a sandbox, each sample ran inline in its workflow's task (no activity of its own),
    // and those runs replay too.
    const sampleRuns = allSampleRuns.slice(0, 50);
    expect(new Set(await sampleRunKinds(client, sampleRuns))).toEqual(new Set(['inline']));
    expect(
      await replayAllRuns(
        client,
        sampleRuns.map((r) => r.workflowId),
      ),
    ).toBe(50);

    // Every run replays: a worker that lost its cache mid-run could have carried each one on.
    const replayed = await replayAllRuns(client, [evalSetWorkflowId(name), taskId]);
    expect(replayed).toBe(runs.length + 1);
  });
});

/**
 * Workflow tasks of every run of `workflowId` that the server failed as UnhandledCommand, each by
 * the signals that came in while it was being made (written just after the failure).
 */
async function unhandledCommandFailures(client: Client, workflowId: string): Promise<string[][]> {
  const { EventType, WorkflowTaskFailedCause } = temporal.api.enums.v1;
  const failures: string[][] = [];
  for await (const wf of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    const events = (await fetchHistory(client, { workflowId, runId: wf.runId })).events ?? [];
    events.forEach((e, i) => {
      if (
        e.eventType !== EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED ||
        e.workflowTaskFailedEventAttributes?.cause !==
          WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND
      ) {
        return;
      }
      const signals: string[] = [];
      for (const next of events.slice(i + 1)) {
        const name = next.workflowExecutionSignaledEventAttributes?.signalName;
        if (!name) break;
        signals.push(name);
      }
      failures.push(signals);
    });
  }
  return failures;
}

/**
 * For each run that continued another with samples in flight: from its first workflow task's end
 * to the first report signal it received, 0 if one came with that task (sent before it ended),
 * Infinity if none came at all. A run handed nothing in flight has nobody to hear from.
 */
async function silenceAfterHandOver(client: Client, workflowId: string): Promise<number[]> {
  const { EventType } = temporal.api.enums.v1;
  const silences: number[] = [];
  for await (const wf of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    const events = (await fetchHistory(client, { workflowId, runId: wf.runId })).events ?? [];
    const started = events[0]?.workflowExecutionStartedEventAttributes;
    if (!started?.continuedExecutionRunId) continue;
    const input = JSON.parse(
      Buffer.from(started.input?.payloads?.[0]?.data ?? []).toString(),
    ) as EvalTaskInput;
    if ((input.carry?.inFlight.length ?? 0) === 0) continue;
    const first = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    const report = events.find(
      (e) =>
        e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED &&
        e.workflowExecutionSignaledEventAttributes?.signalName === samplesDoneSignal.name,
    );
    silences.push(
      report && first ? Math.max(0, millis(report) - millis(first)) : Number.POSITIVE_INFINITY,
    );
  }
  return silences;
}

function millis(event: temporal.api.history.v1.IHistoryEvent): number {
  const { seconds, nanos } = event.eventTime ?? {};
  return Number(seconds ?? 0) * 1_000 + Math.floor((nanos ?? 0) / 1e6);
}

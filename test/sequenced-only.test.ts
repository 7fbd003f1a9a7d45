/**
 * Issue 28's nondeterminism, made on purpose with a small workflow on the real dev server, and
 * the guard that ends it (src/workflows/sequenced-only.ts).
 *
 * The run: a worker is killed with SIGKILL and at once the workflow is queried. With nothing
 * pending the server sends the query to the dead worker's sticky queue, and after the sticky
 * timeout to the task queue. Meanwhile 2 pings arrive, and a fresh worker takes the query with
 * the history as it stands. 8 more pings follow before the pings' own workflow task reaches it.
 *
 * Unguarded, the fresh worker runs the workflow on the first 2 pings to answer the query, keeps
 * what it decided, and sends it with the next workflow task: the history notes 2 then 8, which no
 * replay can make again (a replay delivers the task's 10 pings together). Guarded, the query is
 * refused, the run is dropped, and the task replays it: one note of 10, and the history replays.
 * The unguarded case stays here to show the SDK still needs the guard: once an SDK release stops
 * applying such events, it fails, and the guard can go.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Worker, bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOW_INTERCEPTOR_MODULES } from '../src/workers/bundle';
import { openConnection } from '../src/temporal/open-connection';
import { tempDir, uniqueName } from './helpers/cli';
import { waitFor } from './helpers/processes';

const { EventType } = temporal.api.enums.v1;
const FIXTURE = path.join(__dirname, 'fixtures', 'sequenced-only');
const TSX = path.join(__dirname, '..', 'node_modules', '.bin', 'tsx');
/** Long enough for the fresh worker to start before the query leaves the dead sticky queue. */
const STICKY_TIMEOUT_MS = 8_000;

const silent = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} };

interface Outcome {
  /** The notes the workflow took after the kill, in order. */
  notes: number[];
  /** The query's answer, or its error. */
  query: { answer: number } | { error: string };
  /** Undefined when the history replays; else the replay's error. */
  replayError?: string;
}

let client: Client;
let dir: string;

beforeAll(async () => {
  const connection = await openConnection({ address: process.env.TEMPORAL_ADDRESS });
  client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE });
  dir = await tempDir('steward-sequenced-');
});

afterAll(async () => {
  await client?.connection.close();
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

describe('a query answered by a worker without the run cached, while events arrive', () => {
  test('unguarded, the run decides on part of a workflow task and no replay can follow it', async () => {
    const outcome = await queriedAcrossTheKill([]);
    expect(outcome.query).toEqual({ answer: 3 });
    expect(outcome.notes).toEqual([2, 8]);
    expect(outcome.replayError).toMatch(/TMPRL1100|[Nn]ondeterminism/);
  });

  test("guarded as Steward's bundle is, the query is refused and the history replays", async () => {
    const outcome = await queriedAcrossTheKill(WORKFLOW_INTERCEPTOR_MODULES);
    expect(outcome.query).toEqual({
      error: expect.stringMatching(/reached the workflow outside a workflow task/) as string,
    });
    expect(outcome.notes).toEqual([10]);
    expect(outcome.replayError).toBeUndefined();
  });
});

/** The run described above, with the workflow bundled with `interceptorModules`. */
async function queriedAcrossTheKill(interceptorModules: string[]): Promise<Outcome> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: path.join(FIXTURE, 'workflows.ts'),
    workflowInterceptorModules: interceptorModules,
    logger: silent,
  });
  const bundle = path.join(dir, `${uniqueName('bundle')}.js`);
  await fs.writeFile(bundle, code);
  const taskQueue = uniqueName('sequenced');
  const workers: ChildProcess[] = [];
  try {
    const first = await startWorker(bundle, taskQueue);
    workers.push(first.process);
    const handle = await client.workflow.start('pings', {
      taskQueue,
      workflowId: uniqueName('sequenced'),
    });
    await handle.signal('ping');
    // Noted, and the note's result taken by a workflow task: nothing is left for a retry.
    await waitFor('the first note, recorded', async () => {
      const { events } = await handle.fetchHistory();
      const types = (events ?? []).map((event) => event.eventType);
      return types.includes(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) &&
        types.at(-1) === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
        ? true
        : undefined;
    });

    killGroup(first.process);
    const query = handle.query<number>('pings').then(
      (answer) => ({ answer }),
      (err: unknown) => ({ error: (err as Error).message }),
    );
    const fresh = await startWorker(bundle, taskQueue);
    workers.push(fresh.process);
    await handle.signal('ping');
    await handle.signal('ping');
    const answered = await query;
    for (let i = 0; i < 8; i++) await handle.signal('ping');
    await waitFor(
      'the pings noted',
      () => (fresh.notes.reduce((a, b) => a + b, 0) === 10 ? true : undefined),
      { timeoutMs: 60_000 },
    ).catch((err: Error) => {
      throw new Error(
        `${err.message}: noted ${JSON.stringify(fresh.notes)}, query ${JSON.stringify(answered)}\n${fresh.stderr()}`,
      );
    });

    const history = await handle.fetchHistory();
    await handle.terminate('test over');
    const replayError = await Worker.runReplayHistory(
      { workflowBundle: { code } },
      history,
      handle.workflowId,
    ).then(
      () => undefined,
      (err: unknown) => (err as Error).message,
    );
    return { notes: fresh.notes, query: answered, replayError };
  } finally {
    for (const worker of workers) killGroup(worker);
  }
}

/** A worker process serving `taskQueue`, once it polls, with the notes it took so far. */
async function startWorker(
  bundle: string,
  taskQueue: string,
): Promise<{ process: ChildProcess; notes: number[]; stderr: () => string }> {
  const child = spawn(TSX, [path.join(FIXTURE, 'worker.ts')], {
    env: {
      ...process.env,
      BUNDLE: bundle,
      TASK_QUEUE: taskQueue,
      STICKY_TIMEOUT: `${STICKY_TIMEOUT_MS}ms`,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: tsx runs the worker in a child, and a kill must reach both.
    detached: true,
  });
  const notes: number[] = [];
  let output = '';
  let ready = false;
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    const lines = output.split('\n');
    output = lines.pop()!;
    for (const line of lines) {
      if (line === 'ready') ready = true;
      const note = /^note (\d+)$/.exec(line);
      if (note) notes.push(Number(note[1]));
    }
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await waitFor('the worker to poll', () => {
    if (child.exitCode !== null) throw new Error(`the worker exited: ${stderr}`);
    return ready ? true : undefined;
  });
  // Polling starts just after `run()` is called.
  await sleep(200);
  return { process: child, notes, stderr: () => stderr };
}

/** SIGKILLs a worker started by {@link startWorker}: tsx and the node process it runs. */
function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

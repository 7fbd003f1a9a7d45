/**
 * The smoke run of `steward launch --smoke`: the first few samples of every task, against the
 * real models and sandboxes, as an eval set of its own (`<name>-smoke`, log dir
 * `<log dir>-smoke`) through Temporal and a fleet like any other, under a time cap. What it
 * found is read from its records and classified per task (src/core/smoke.ts).
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { WorkflowFailedError, WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import type Dockerode from 'dockerode';
import { smokeVerdicts, type SmokeVerdict } from '../../core/smoke';
import { smokeDefinition, smokeName, type SmokeCut } from '../../definition/smoke';
import type { ConcurrencySettings, EvalSetDefinition } from '../../definition/types';
import { ErrorType, ExitCode, StewardError } from '../../errors';
import { writeSnapshot, type UsedFiles } from '../../loader/snapshot';
import { openLogStore } from '../../logs/store';
import { reapSandboxes } from '../../sandbox/cleanup';
import { endLeftovers } from '../../client/leftovers';
import { resultAcrossOutages } from '../../client/result';
import { innermostCause } from '../../client/status';
import type { TemporalTarget } from '../../temporal/connection';
import { stewardHome } from '../../util/home';
import { runSupervisor } from '../../workers/supervisor';
import { STEWARD_TASK_QUEUE, evalSetWorkflowId, type EvalSetInput } from '../../workflows/types';
import type { evalSet } from '../../workflows';
import { createProgress, followProgress } from '../progress';

export const SMOKE_DEFAULTS = {
  /** Samples per task. */
  samples: 2,
  /** Time cap, from the smoke eval set's start to its end. */
  timeoutS: 300,
} as const;

/** Marks a log dir as a smoke run's, so a new smoke run may clear it. */
const SMOKE_MARKER = '.steward-smoke';
/** How long a cancelled smoke run has to stop its samples and remove their sandboxes. */
const CANCEL_WAIT_MS = 60_000;
const PROGRESS_MS = 1_000;

/** Beside the real log dir, never inside it: Inspect's viewer lists a log dir's tree. */
export function smokeLogDir(logDir: string): string {
  return `${logDir}-smoke`;
}

export interface SmokeRun {
  client: Client;
  temporal: TemporalTarget;
  /** The definition as launched, and the files it used (the smoke run snapshots them anew). */
  definition: EvalSetDefinition;
  used: UsedFiles;
  /** The launch's chosen knobs, as the real run gets them. */
  settings: ConcurrencySettings;
  /** The real run's log dir. */
  logDir: string;
  samples: number;
  timeoutS: number;
  docker?: Dockerode;
  say(line: string): void;
}

export interface SmokeReport {
  name: string;
  logDir: string;
  verdicts: SmokeVerdict[];
  /** Interrupted by SIGINT or SIGTERM: no verdicts worth acting on. */
  interrupted: boolean;
}

export async function runSmoke(run: SmokeRun): Promise<SmokeReport> {
  const cut: SmokeCut = { name: smokeName(run.definition.name), samples: run.samples };
  const logDir = smokeLogDir(run.logDir);
  const workflowId = evalSetWorkflowId(cut.name);
  const { client, say } = run;

  // A smoke run checks the world as it is now: an earlier one is replaced, never resumed.
  const earlier = client.workflow.getHandle(workflowId);
  const running = await earlier.describe().then(
    (d) => d.status.name === 'RUNNING',
    () => false,
  );
  if (running) {
    say(`an earlier smoke run (${workflowId}) is still running: terminating it`);
    await earlier.terminate('replaced by a new smoke run');
  }
  await clearSmokeLogDir(logDir);
  const hash = await writeSnapshot(run.used, logDir, cut);
  if (run.docker) await reapSandboxes(run.docker, { evalSet: cut.name });

  const input: EvalSetInput = {
    definition: run.definition.source,
    definition_hash: hash,
    log_dir: logDir,
    settings: run.settings,
  };
  const handle = await client.workflow.start<typeof evalSet>('evalSet', {
    workflowId,
    taskQueue: STEWARD_TASK_QUEUE,
    args: [input],
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
  });
  say(
    `smoke run: ${run.samples} sample(s) of each task as eval set ${cut.name}, ` +
      `at most ${run.timeoutS} s, results in ${logDir}`,
  );

  const stop = new AbortController();
  const supervisor = runSupervisor({
    client,
    temporal: run.temporal,
    evalSetIds: [workflowId],
    stewardDir: stewardHome(process.env),
    signal: stop.signal,
  });
  const progress = createProgress();
  const stopFollowing = followProgress(client, workflowId, progress, PROGRESS_MS);
  let onSignal: () => void = () => undefined;
  const interrupted = new Promise<'interrupted'>((resolve) => {
    onSignal = () => resolve('interrupted');
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  });
  let timer: NodeJS.Timeout | undefined;
  const capped = new Promise<'capped'>((resolve) => {
    timer = setTimeout(() => resolve('capped'), run.timeoutS * 1000);
  });

  let outcome: 'done' | 'capped' | 'interrupted';
  let failure: unknown;
  try {
    const result = resultAcrossOutages(handle).then(
      () => 'done' as const,
      (err: unknown) => {
        failure = err;
        return 'done' as const;
      },
    );
    outcome = await Promise.race([result, capped, interrupted]);
    if (outcome !== 'done') {
      progress.stop();
      say(
        outcome === 'capped'
          ? `smoke run: time cap of ${run.timeoutS} s reached: cancelling it`
          : 'smoke run interrupted: cancelling it',
      );
      // Its samples stop and remove their sandboxes; the fleet serves the cancellation.
      await handle.cancel().catch(() => undefined);
      await Promise.race([result, delay(CANCEL_WAIT_MS)]);
      failure = undefined;
    }
    // Whatever of a failed smoke eval set still runs without its owner ends while the fleet that
    // serves it (and removes its sandboxes) still runs.
    if (failure instanceof WorkflowFailedError) await endLeftovers(client, workflowId);
  } finally {
    stopFollowing();
    clearTimeout(timer);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    progress.stop();
    stop.abort();
    await supervisor.catch(() => undefined);
  }
  if (failure !== undefined) {
    // The smoke eval set itself failed (a definition that does not load, a log dir not
    // writable): the real one would fail the same way.
    const cause = innermostCause(failure);
    const code =
      cause.type === ErrorType.logWrite || cause.type === ErrorType.snapshot
        ? ExitCode.environment
        : ExitCode.usage;
    if (!(failure instanceof WorkflowFailedError)) throw failure;
    throw new StewardError(`smoke run failed: ${cause.message}`, code);
  }

  const store = openLogStore(logDir);
  const tasks = await Promise.all(
    smokeDefinition(run.definition, cut).tasks.map(async (task) => ({
      task: task.name,
      samples: task.dataset.length,
      completed: (await store.completedKeys(task.name).catch(() => new Set<string>())).size,
      errors: await store.readSampleErrors(task.name).catch(() => []),
    })),
  );
  return {
    name: cut.name,
    logDir,
    interrupted: outcome === 'interrupted',
    verdicts: smokeVerdicts(tasks, outcome === 'capped' ? { afterS: run.timeoutS } : undefined),
  };
}

/** Empties a smoke run's log dir; refuses a directory a smoke run did not make. */
async function clearSmokeLogDir(dir: string): Promise<void> {
  const entries = await fs.readdir(dir).catch((err: NodeJS.ErrnoException): string[] => {
    if (err.code === 'ENOENT') return [];
    throw new StewardError(
      `cannot use ${dir} for the smoke run: ${err.message}`,
      ExitCode.environment,
    );
  });
  if (entries.length > 0 && !entries.includes(SMOKE_MARKER)) {
    throw new StewardError(
      `${dir} exists and is not a smoke run's log dir: the smoke run writes its results there. ` +
        'Move it away, or launch with another --log-dir',
      ExitCode.usage,
    );
  }
  try {
    await fs.rm(dir, { recursive: true, force: true });
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(
      path.join(dir, SMOKE_MARKER),
      'the log dir of a smoke run (steward launch --smoke): each smoke run empties it\n',
    );
  } catch (err) {
    throw new StewardError(
      `cannot write the smoke run's results to ${dir}: ${(err as Error).message}`,
      ExitCode.environment,
    );
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

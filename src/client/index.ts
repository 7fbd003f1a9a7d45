/**
 * Steward's typed client, for scripts: `import { startEvalSet, ... } from 'steward/client'`.
 *
 * It starts and steers the same `evalSet` workflow that `steward launch` and the stock `temporal`
 * CLI do, with the workflow's own definitions of its input, updates, signals and queries. It needs
 * a Temporal client of your own and a fleet serving the eval set (`steward workers`, or a running
 * `steward launch`); it starts no workers itself.
 *
 * @example
 * const client = new Client({ connection: await Connection.connect({ address }) });
 * const run = await startEvalSet(client, { definition: '/abs/path/evalset.yaml' });
 * await run.hold({ reason: 'provider looks unhappy' });
 * await run.setRange([40, 100]);
 * const result = await run.result();
 */
import * as path from 'node:path';
import {
  WorkflowIdReusePolicy,
  type Client,
  type WorkflowHandle,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { bounded } from '../temporal/bounded';
import { evalSetTagging } from '../temporal/search-attributes';
import { whoIsSteering } from '../util/who';
import { steerAcrossHandOvers } from './steer-retry';
import type { evalSet } from '../workflows';
import {
  STEWARD_TASK_QUEUE,
  evalSetWorkflowId,
  holdRampUpdate,
  pauseUpdate,
  resumeRampUpdate,
  setSamplesRampUpdate,
  statusQuery,
  unpauseUpdate,
  type EvalSetInput,
  type EvalSetResult,
  type EvalSetStatus,
  type HoldRampArgs,
  type ResumeRampArgs,
  type SetSamplesRampArgs,
  type SteeringAnswer,
} from '../workflows/types';

/** How long `watch` waits for one status; the next look asks again. */
const WATCH_QUERY_MS = 10_000;

export type { evalSet };
export type {
  AccountStatus,
  EvalSetInput,
  EvalSetResult,
  EvalSetStatus,
  HoldRampArgs,
  PauseArgs,
  PauseStatus,
  RampHistoryEntry,
  ResumeRampArgs,
  SetSamplesRampArgs,
  SteeringAnswer,
  TaskResult,
  TaskStatus,
  UnpauseArgs,
} from '../workflows/types';
/** The workflow's own definitions, for `handle.executeUpdate`, `signal` and `query`. */
export {
  STEWARD_TASK_QUEUE,
  evalSetWorkflowId,
  holdRampSignal,
  holdRampUpdate,
  pauseSignal,
  pauseUpdate,
  resumeRampSignal,
  resumeRampUpdate,
  setSamplesRampSignal,
  setSamplesRampUpdate,
  statusQuery,
  unpauseSignal,
  unpauseUpdate,
  workerControlQuery,
  workerReportSignal,
} from '../workflows/types';

/**
 * A Temporal connection with the client's own retries, whose retry after `close()` ends the call
 * instead of crashing the process (`@temporalio/client` 1.24 throws it from a timer).
 */
export { openConnection } from '../temporal/open-connection';

/** What a script gives to start an eval set; the same plain JSON the stock CLI takes. */
export interface StartOptions {
  /** The definition (`evalset.yaml` or a module); made absolute, as the workers must read it. */
  definition: string;
  /** The eval set's name, if the script knows it: the workflow id is `steward-<name>`. */
  name: string;
  /** Default: the definition's `log_dir`, else `logs/<name>` beside it. */
  logDir?: string;
  /** Knobs by their seed names (`max_samples`, `samples_ramp`, ...). */
  settings?: EvalSetInput['settings'];
}

/** A running (or finished) eval set, steered through the workflow's updates. */
export class EvalSetRun {
  constructor(readonly handle: WorkflowHandle<typeof evalSet>) {}

  /** Freezes the climb of one task, or of every task; answers what the ramp history records. */
  hold(args: Omit<HoldRampArgs, 'by'>): Promise<SteeringAnswer> {
    return this.steer(holdRampUpdate, { ...args, by: whoIsSteering() });
  }

  resume(args: Omit<ResumeRampArgs, 'by'> = {}): Promise<SteeringAnswer> {
    return this.steer(resumeRampUpdate, { ...args, by: whoIsSteering() });
  }

  /** Stops admitting samples to every task (running ones finish); answers what it recorded. */
  pause(args: { reason: string }): Promise<SteeringAnswer> {
    return this.steer(pauseUpdate, { ...args, by: whoIsSteering() });
  }

  /** Lifts a pause: every task admits again at the setpoint the ramp kept. */
  unpause(): Promise<SteeringAnswer> {
    return this.steer(unpauseUpdate, { by: whoIsSteering() });
  }

  /** A new `samples_ramp` for the live run (`false`: ramp off); it acts at the next tend. */
  setRange(range: SetSamplesRampArgs['range']): Promise<SteeringAnswer> {
    return this.steer(setSamplesRampUpdate, { range, by: whoIsSteering() });
  }

  /** One steering update, sent again if a hand-over drops it unapplied. */
  private steer<A>(
    update: UpdateDefinition<SteeringAnswer, [A]>,
    args: A,
  ): Promise<SteeringAnswer> {
    return steerAcrossHandOvers(() => this.handle.executeUpdate(update, { args: [args] }));
  }

  /** The status as the eval set's workflow holds it (needs a worker to answer). */
  status(): Promise<EvalSetStatus> {
    return this.handle.query(statusQuery);
  }

  /** Calls `onStatus` every `intervalMs` until the eval set ends; resolves to its result. */
  async watch(
    onStatus: (status: EvalSetStatus) => void,
    intervalMs = 1_000,
  ): Promise<EvalSetResult> {
    const result = this.result();
    const ended = result.then(
      () => undefined,
      () => undefined,
    );
    let over = false;
    void ended.then(() => (over = true));
    while (!over) {
      // The end does not wait for a status the ended workflow's stopping worker may not give.
      const status = bounded(this.handle.client.connection, WATCH_QUERY_MS, () => this.status());
      await Promise.race([status.then(onStatus, () => undefined), ended]);
      await Promise.race([ended, sleep(intervalMs)]);
    }
    return result;
  }

  result(): Promise<EvalSetResult> {
    return this.handle.result();
  }
}

/**
 * Starts an eval set, or takes over the one of that name that is already running (as `steward
 * launch` re-attaches). Completed samples are never re-run.
 */
export async function startEvalSet(client: Client, options: StartOptions): Promise<EvalSetRun> {
  const workflowId = evalSetWorkflowId(options.name);
  const input: EvalSetInput = {
    definition: path.resolve(options.definition),
    ...(options.logDir === undefined ? {} : { log_dir: path.resolve(options.logDir) }),
    ...(options.settings === undefined ? {} : { settings: options.settings }),
  };
  // Tagged with StewardEvalSet when the namespace has it registered (it is the script's server).
  const { typedSearchAttributes } = await evalSetTagging(
    client,
    { embedded: false, namespace: client.options.namespace },
    options.name,
  );
  const start: WorkflowStartOptions<typeof evalSet> = {
    workflowId,
    taskQueue: STEWARD_TASK_QUEUE,
    args: [input],
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    ...(typedSearchAttributes ? { typedSearchAttributes } : {}),
  };
  try {
    return new EvalSetRun(await client.workflow.start<typeof evalSet>('evalSet', start));
  } catch (err) {
    if ((err as Error).name !== 'WorkflowExecutionAlreadyStartedError') throw err;
    return getEvalSet(client, options.name);
  }
}

/** The eval set of that name, running or finished. */
export function getEvalSet(client: Client, name: string): EvalSetRun {
  return new EvalSetRun(client.workflow.getHandle<typeof evalSet>(evalSetWorkflowId(name)));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * `steward ramp hold|resume|range`: steer the ramp of a running eval set from any terminal. With
 * its workers up, each command is an Update of the `evalSet` workflow: the workflow checks it
 * against the run (its validator refuses a task it does not have, a range that cannot apply)
 * and answers with what it recorded. With the workers down nothing can answer, so the command
 * goes as the signal of the same name, which waits in the workflow's history until they are back
 * and is checked then (a refusal shows in the ramp history). Arguments are checked before
 * anything is contacted. Either way the ramp acts on it at its next tend.
 */
import { WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import { parseKnobText } from '../../config/knobs';
import { ExitCode, StewardError } from '../../errors';
import { connectClient, resolveTemporal } from '../../temporal/connection';
import { withTimeout } from '../../util/timeout';
import { whoIsSteering } from '../../util/who';
import { innermostCause } from '../../client/status';
import { steerAcrossHandOvers } from '../../client/steer-retry';
import {
  holdRampSignal,
  holdRampUpdate,
  resumeRampSignal,
  resumeRampUpdate,
  setSamplesRampSignal,
  setSamplesRampUpdate,
  statusQuery,
  type EvalSetStatus,
  type SteeringAnswer,
} from '../../workflows/types';
import { findEvalSet, type EvalSetTarget } from '../eval-set-target';

export interface RampCommandOptions {
  /** The eval set to steer; default: the only one running. */
  evalSet?: string;
}

/** How long to wait for the workers to say which tasks an eval set has. */
const QUERY_TIMEOUT_MS = 5_000;
/** How long an update may wait for its answer once the workers have shown they are up. */
const UPDATE_TIMEOUT_MS = 30_000;

/** `steward ramp hold [task] --reason TEXT`: freeze the climb of one task, or of every task. */
export async function rampHoldCommand(
  task: string | undefined,
  opts: RampCommandOptions & { reason: string },
): Promise<number> {
  const reason = opts.reason.trim();
  if (reason === '')
    throw new StewardError(
      'ramp hold needs --reason TEXT: why the climb stops (the ramp history keeps it)',
    );
  const args = { reason, ...taskArg(task), by: whoIsSteering() };
  return steer(opts.evalSet, task, {
    update: (handle) => handle.executeUpdate(holdRampUpdate, { args: [args] }),
    signal: (handle) => handle.signal(holdRampSignal, args),
    said: (target) => `held the ramp of ${whose(task, target)}: ${JSON.stringify(reason)}`,
  });
}

/** `steward ramp resume [task]`: lift a hold. */
export async function rampResumeCommand(
  task: string | undefined,
  opts: RampCommandOptions,
): Promise<number> {
  const args = { ...taskArg(task), by: whoIsSteering() };
  return steer(opts.evalSet, task, {
    update: (handle) => handle.executeUpdate(resumeRampUpdate, { args: [args] }),
    signal: (handle) => handle.signal(resumeRampSignal, args),
    said: (target) => `resumed the ramp of ${whose(task, target)}`,
  });
}

/** `steward ramp range LO HI` sets `samples_ramp` live; `steward ramp range off` turns it off. */
export async function rampRangeCommand(
  lo: string,
  hi: string | undefined,
  opts: RampCommandOptions,
): Promise<number> {
  const range = parseRange(lo, hi);
  const args = { range, by: whoIsSteering() };
  return steer(opts.evalSet, undefined, {
    update: (handle) => handle.executeUpdate(setSamplesRampUpdate, { args: [args] }),
    signal: (handle) => handle.signal(setSamplesRampSignal, args),
    said: (target) =>
      range
        ? `set the samples ramp of eval set ${target.name} to [${range[0]}, ${range[1]}]`
        : `turned the samples ramp of eval set ${target.name} off`,
  });
}

/**
 * Checks that `task` is one of the eval set's `tasks`.
 *
 * @throws StewardError naming the known tasks
 */
export function requireKnownTask(
  target: EvalSetTarget,
  tasks: readonly string[],
  task: string,
): void {
  if (tasks.includes(task)) return;
  const known =
    tasks.length > 0 ? `its tasks are ${tasks.join(', ')}` : 'it has not planned its tasks yet';
  throw new StewardError(`eval set ${target.name} has no task "${task}"; ${known}`);
}

/** One steering command, both ways it can travel. */
export interface Command {
  update(handle: WorkflowHandle): Promise<SteeringAnswer>;
  signal(handle: WorkflowHandle): Promise<void>;
  /** What to print once sent; `answer` is the workflow's, absent when it went as a signal. */
  said(target: EvalSetTarget, answer?: SteeringAnswer): string;
}

/**
 * Sends a steering command to an eval set (default: the only one running): as an update when its
 * workers answer, else as the signal of the same name. `task`, when named, must be one of its.
 */
export async function steer(
  evalSet: string | undefined,
  task: string | undefined,
  command: Command,
): Promise<number> {
  const client = await connectClient(
    await resolveTemporal(process.env, { onProgress: (m) => console.error(m) }),
  );
  try {
    const target = await findEvalSet(client, evalSet);
    const handle = client.workflow.getHandle(target.workflowId);
    const status = await queryStatus(handle).catch((err: unknown) => err as Error);
    // Only a named task needs the workers (they know the task names); the rest can be queued.
    if (status instanceof Error && task !== undefined) {
      throw new StewardError(
        `cannot check the task names of eval set ${target.name}: ${status.message} ` +
          '(are `steward launch` or `steward workers` running? Name no task to steer every task)',
        ExitCode.environment,
      );
    }
    let answer: SteeringAnswer | undefined;
    try {
      if (status instanceof Error) {
        await command.signal(handle);
        process.stderr.write(
          `no worker of eval set ${target.name} answers now: the command waits in its history and applies when they are back\n`,
        );
      } else {
        if (task !== undefined)
          requireKnownTask(
            target,
            status.tasks.map((t) => t.name),
            task,
          );
        answer = await client.connection.withDeadline(Date.now() + UPDATE_TIMEOUT_MS, () =>
          steerAcrossHandOvers(() => command.update(handle)),
        );
      }
    } catch (err) {
      throw steeringError(err, target);
    }
    process.stdout.write(`${command.said(target, answer)}\n`);
    return ExitCode.ok;
  } finally {
    await client.connection.close();
  }
}

/** What went wrong with a steering command, in the user's words. */
function steeringError(err: unknown, target: EvalSetTarget): unknown {
  const name = (err as Error).name;
  if (err instanceof WorkflowNotFoundError || name === 'WorkflowNotFoundError')
    return new StewardError(`eval set ${target.name} finished before the command reached it`);
  if (name === 'WorkflowUpdateFailedError') {
    // The workflow refused it: its validator's message names the field and the value.
    return new StewardError(`eval set ${target.name} refused: ${innermostCause(err).message}`);
  }
  return err;
}

/** The eval set's status, from its workers; rejects when none answers in time. */
function queryStatus(handle: WorkflowHandle): Promise<EvalSetStatus> {
  return withTimeout(handle.query(statusQuery), QUERY_TIMEOUT_MS, 'no answer from its workers');
}

function parseRange(lo: string, hi: string | undefined): [number, number] | false {
  if (hi === undefined) {
    if (lo === 'off') return false;
    throw new StewardError(`ramp range takes LO HI, or "off" (got "${lo}")`);
  }
  if (!/^\d+$/.test(lo) || !/^\d+$/.test(hi))
    throw new StewardError(`ramp range LO HI takes two whole numbers (got "${lo}" "${hi}")`);
  const parsed = parseKnobText('samples_ramp', `${lo},${hi}`);
  if ('error' in parsed) throw new StewardError(`ramp range ${lo} ${hi}: ${parsed.error}`);
  return parsed.value;
}

function taskArg(task: string | undefined): { task?: string } {
  return task === undefined ? {} : { task };
}

function whose(task: string | undefined, target: EvalSetTarget): string {
  return `${task === undefined ? 'every task' : `task ${task}`} in eval set ${target.name}`;
}

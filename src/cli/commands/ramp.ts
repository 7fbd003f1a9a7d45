/**
 * `steward ramp hold|resume|range`: steer the ramp of a running eval set from any terminal. Each
 * command sends one signal to the `evalSet` workflow, which applies it at its next tend and
 * records it in the ramp history with who sent it. Arguments are checked before anything is
 * contacted, and a signal needs only the Temporal server: with the workers down it waits in the
 * workflow's history until they are back.
 */
import * as os from 'node:os';
import { WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import { parseKnobText } from '../../config/knobs';
import { ExitCode, StewardError } from '../../errors';
import { connectClient, resolveTemporal } from '../../temporal/connection';
import { withTimeout } from '../../util/timeout';
import {
  holdRampSignal,
  resumeRampSignal,
  setSamplesRampSignal,
  statusQuery,
  type EvalSetStatus,
} from '../../workflows/types';
import { findEvalSet, type EvalSetTarget } from '../eval-set-target';

export interface RampCommandOptions {
  /** The eval set to steer; default: the only one running. */
  evalSet?: string;
}

/** How long to wait for the workers to say which tasks an eval set has. */
const QUERY_TIMEOUT_MS = 5_000;

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
  return steer(opts.evalSet, task, async (handle, target) => {
    await handle.signal(holdRampSignal, { reason, ...taskArg(task), by: whoIsSteering() });
    return `held the ramp of ${whose(task, target)}: ${JSON.stringify(reason)}`;
  });
}

/** `steward ramp resume [task]`: lift a hold. */
export async function rampResumeCommand(
  task: string | undefined,
  opts: RampCommandOptions,
): Promise<number> {
  return steer(opts.evalSet, task, async (handle, target) => {
    await handle.signal(resumeRampSignal, { ...taskArg(task), by: whoIsSteering() });
    return `resumed the ramp of ${whose(task, target)}`;
  });
}

/** `steward ramp range LO HI` sets `samples_ramp` live; `steward ramp range off` turns it off. */
export async function rampRangeCommand(
  lo: string,
  hi: string | undefined,
  opts: RampCommandOptions,
): Promise<number> {
  const range = parseRange(lo, hi);
  return steer(opts.evalSet, undefined, async (handle, target) => {
    await handle.signal(setSamplesRampSignal, { range, by: whoIsSteering() });
    return range
      ? `set the samples ramp of eval set ${target.name} to [${range[0]}, ${range[1]}]`
      : `turned the samples ramp of eval set ${target.name} off`;
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

type Send = (handle: WorkflowHandle, target: EvalSetTarget) => Promise<string>;

async function steer(
  evalSet: string | undefined,
  task: string | undefined,
  send: Send,
): Promise<number> {
  const client = await connectClient(
    await resolveTemporal(process.env, { onProgress: (m) => console.error(m) }),
  );
  try {
    const target = await findEvalSet(client, evalSet);
    const handle = client.workflow.getHandle(target.workflowId);
    // Only a named task needs the workers (they answer the query); the rest is server-side.
    if (task !== undefined) {
      const status = await queryStatus(handle, target);
      requireKnownTask(
        target,
        status.tasks.map((t) => t.name),
        task,
      );
    }
    let sent: string;
    try {
      sent = await send(handle, target);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError || (err as Error).name === 'WorkflowNotFoundError')
        throw new StewardError(`eval set ${target.name} finished before the signal reached it`);
      throw err;
    }
    process.stdout.write(`${sent}\n`);
    return ExitCode.ok;
  } finally {
    await client.connection.close();
  }
}

async function queryStatus(handle: WorkflowHandle, target: EvalSetTarget): Promise<EvalSetStatus> {
  try {
    return await withTimeout(
      handle.query(statusQuery),
      QUERY_TIMEOUT_MS,
      'no answer from its workers',
    );
  } catch (err) {
    throw new StewardError(
      `cannot check the task names of eval set ${target.name}: ${(err as Error).message} ` +
        '(are `steward launch` or `steward workers` running? Name no task to steer every task)',
      ExitCode.environment,
    );
  }
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

/** `user@host`, recorded with each hold, resume and range. */
function whoIsSteering(): string {
  let user: string;
  try {
    user = os.userInfo().username;
  } catch {
    // A container user with no passwd entry has no name to look up.
    user = process.env.USER ?? `uid ${process.getuid?.() ?? '?'}`;
  }
  return `${user}@${os.hostname()}`;
}

/**
 * `steward pause [name] [--reason TEXT]` and `steward resume [name]`: stop and restart admitting
 * samples to every task of an eval set (samples already running finish). Not the ramp's hold and
 * resume (`steward ramp hold|resume`), which only freeze the climb while samples keep flowing.
 * They travel as the ramp commands do (src/cli/commands/ramp.ts): an Update of the `evalSet`
 * workflow when its workers answer, else the signal of the same name, which waits in history.
 * Pausing a paused eval set, or resuming a running one, is answered and changes nothing.
 */
import { whoIsSteering } from '../../util/who';
import { ALREADY_PAUSED, NOT_PAUSED } from '../../workflows/pause';
import { pauseSignal, pauseUpdate, unpauseSignal, unpauseUpdate } from '../../workflows/types';
import { steer } from './ramp';

/** Said when `--reason` is left out: the workflow wants one, and the history keeps it. */
const NO_REASON = 'no reason given';

export async function pauseCommand(
  evalSet: string | undefined,
  opts: { reason?: string },
): Promise<number> {
  const reason = opts.reason?.trim() || NO_REASON;
  const args = { reason, by: whoIsSteering() };
  return steer(evalSet, undefined, {
    update: (handle) => handle.executeUpdate(pauseUpdate, { args: [args] }),
    signal: (handle) => handle.signal(pauseSignal, args),
    said: (target, answer) =>
      answer?.message.startsWith(ALREADY_PAUSED)
        ? `eval set ${target.name} is ${answer.message}`
        : `paused eval set ${target.name}: no task admits samples until \`steward resume ${target.name}\` (running samples finish)`,
  });
}

export async function resumeCommand(evalSet: string | undefined): Promise<number> {
  const args = { by: whoIsSteering() };
  return steer(evalSet, undefined, {
    update: (handle) => handle.executeUpdate(unpauseUpdate, { args: [args] }),
    signal: (handle) => handle.signal(unpauseSignal, args),
    said: (target, answer) =>
      answer?.message === NOT_PAUSED
        ? `eval set ${target.name} is not paused`
        : `resumed eval set ${target.name}: its tasks admit samples again`,
  });
}

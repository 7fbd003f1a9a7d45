/**
 * Pausing a whole eval set (`steward pause` / `steward resume`): no task admits samples while it
 * is paused, and the samples already running finish. Deterministic (workflow code): the tender
 * keeps the pause in its state (so it survives continue-as-new and restarts, like a hold) and
 * asks these functions what it means.
 *
 * A paused task gets setpoint 0; the ramp keeps the setpoint it would have had, and resume gives
 * it back. The ramp reads nothing from a window a pause touched (the one it began in, those it
 * lasted through, the one it ended in): a drained task looks saturated (samples waiting, in flight
 * at its setpoint 0) and its last calls may meet pushback, neither of which says anything about
 * what the provider can take. So no task climbs or backs off from such a window; the pause holds
 * every task, as a global hold would. Range changes and the sandbox budget still move the kept
 * setpoints, which take effect on resume.
 */
import type { Hold, Holds, TaskWindow } from '../core/ramp';
import type { PauseArgs, TenderState, UnpauseArgs } from './types';

/** What the ramp reads of a window a pause touched: nothing happened in it. */
export const QUIET_WINDOW: Readonly<TaskWindow> = {
  saturated: false,
  rateLimitEpisodes: 0,
  controllerCuts: 0,
  controllerLimit: null,
  httpRetries: 0,
  sampleErrors: 0,
  networkCapacityErrors: 0,
  connectionQueuedShare: 0,
  pushbackLevel: null,
};

/** The setpoint a task is sent: 0 while the eval set is paused, else what the ramp keeps. */
export function admitting(state: TenderState, setpoint: number): number {
  return state.pause ? 0 : setpoint;
}

/**
 * Ends a window: whether the ramp must not read it (a pause touched it), and the next window
 * starts touched if the pause still holds.
 */
export function endWindow(state: TenderState): boolean {
  const paused = Boolean(state.pause);
  const touched = paused || state.pausedWindow === true;
  if (touched) state.pausedWindow = paused;
  return touched;
}

/** The holds the ramp decides with: while paused, the pause holds every task. */
export function holdsInForce(state: TenderState): Holds {
  const pause = state.pause;
  if (!pause) return state.holds;
  return { global: { ...pause, reason: `paused: ${pause.reason}` }, tasks: {} };
}

/** What a pause or an unpause did: the answer, and whether it changed anything (then logged). */
export interface PauseOutcome {
  message: string;
  changed: boolean;
}

/** The answers that change nothing, which `steward pause` and `steward resume` tell apart. */
export const ALREADY_PAUSED = 'already paused';
export const NOT_PAUSED = 'not paused';

/** Pauses the eval set; pausing a paused one keeps the first pause and says so. */
export function pause(state: TenderState, args: PauseArgs, now: number): PauseOutcome {
  if (state.pause) return { message: `already ${describe(state.pause)}`, changed: false };
  state.pause = { reason: args.reason, since: now, ...(args.by ? { by: args.by } : {}) };
  state.pausedWindow = true;
  return { message: args.reason, changed: true };
}

/** Lifts the pause; unpausing an eval set that is not paused says so. */
export function unpause(state: TenderState, _args: UnpauseArgs, now: number): PauseOutcome {
  const was = state.pause;
  if (!was) return { message: NOT_PAUSED, changed: false };
  state.pause = null;
  const seconds = Math.round((now - was.since) / 1000);
  return { message: `resumed after ${seconds} s paused (${was.reason})`, changed: true };
}

function describe(pause: Hold): string {
  const by = pause.by ? ` by ${pause.by}` : '';
  return `paused${by} since ${new Date(pause.since).toISOString()}: ${pause.reason}`;
}

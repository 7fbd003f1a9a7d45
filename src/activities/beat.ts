/** Liveness for activities that do a bounded piece of I/O of unbounded length. */
import { Context } from '@temporalio/activity';

/** How often a long activity says it is alive: well inside the 30 s heartbeat timeouts. */
export const BEAT_MS = 5_000;

/**
 * Runs `work`, heartbeating every `everyMs` until it settles. A worker that dies mid-work is then
 * noticed within the heartbeat timeout, not the start-to-close one (minutes), and work that is
 * merely slow (a large task's log on a loaded machine) is never timed out for it.
 */
export async function whileBeating<T>(work: () => Promise<T>, everyMs = BEAT_MS): Promise<T> {
  const ctx = Context.current();
  const beat = setInterval(() => ctx.heartbeat(), everyMs);
  try {
    return await work();
  } finally {
    clearInterval(beat);
  }
}

/**
 * Steering across the eval set's hand-overs. An update (or a signal) can reach the `evalSet`
 * workflow while it continues-as-new, and the server then drops it without applying it:
 * - it reached the run that is closing: "workflow is closing" (the server's own retries usually
 *   land it on the next run; this covers the case where they ran out);
 * - the workflow task that carried it failed: the continue-as-new was refused because a signal
 *   came in meanwhile (UnhandledCommand), and every update that task had seen is aborted with
 *   FAILED_PRECONDITION "... due to unexpected workflow task failure". The server does not retry
 *   those: it cannot know that a handler had no effect outside the workflow. Steward's handlers
 *   have none (they change the workflow's state, which the failed task did not record), so the
 *   same update is sent again, to whichever run is current.
 * A refusal by the workflow (its validator, `WorkflowUpdateFailedError`) is an answer, never
 * retried.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isGrpcServiceError } from '@temporalio/client';

/** gRPC's status code FAILED_PRECONDITION. */
const GRPC_FAILED_PRECONDITION = 9;

/** Attempts in all, the first included. */
const ATTEMPTS = 5;
/** The wait before the n-th retry is n times this. */
const RETRY_STEP_MS = 200;

/** Whether `err` says the server dropped the update unapplied at a hand-over (see above). */
export function droppedAtHandOver(err: unknown): boolean {
  for (let current = err; current instanceof Error; current = current.cause) {
    if (/workflow is closing/i.test(current.message)) return true;
    if (
      isGrpcServiceError(current) &&
      current.code === GRPC_FAILED_PRECONDITION &&
      /unexpected workflow task failure/i.test(current.details)
    ) {
      return true;
    }
  }
  return false;
}

/** Runs `send` (one update or signal), again while the server drops it at a hand-over. */
export async function steerAcrossHandOvers<T>(send: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (err) {
      if (attempt >= ATTEMPTS || !droppedAtHandOver(err)) throw err;
      await sleep(RETRY_STEP_MS * attempt);
    }
  }
}

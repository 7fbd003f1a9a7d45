/**
 * What a cancelled eval set or task does before it ends: it cancels what it started (tasks,
 * samples), so that no sandbox outlives the run, and leaves its logs saying `cancelled`.
 */
import { CancellationScope, isCancellation, patched } from '@temporalio/workflow';

/** Runs started before a cancellation cleaned up keep ending at once (README, "Changing workflow code"). */
export const CANCEL_PATCH = 'cancel-cleans-up';

/**
 * Runs `body`; if the workflow is cancelled meanwhile, runs `cleanUp` out of the cancellation's
 * reach, then ends the workflow as cancelled. Anything else `body` throws passes through as is.
 */
export async function cleaningUpOnCancel<T>(
  body: () => Promise<T>,
  cleanUp: () => Promise<void>,
): Promise<T> {
  try {
    return await body();
  } catch (err) {
    if (isCancellation(err) && patched(CANCEL_PATCH)) {
      await CancellationScope.nonCancellable(cleanUp);
    }
    throw err;
  }
}

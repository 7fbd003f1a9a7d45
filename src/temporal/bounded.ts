/**
 * Temporal calls that must end in time. A query waits for a worker to answer it: one that no
 * worker will answer (the workflow's worker is stopping or gone) waits out the server's own
 * limit, about 30 s, and holds whoever awaits it, a stopping supervisor included.
 */
import type { ConnectionLike } from '@temporalio/client';

/**
 * Runs `fn`'s calls under a deadline `ms` from now, and cancels them when `signal` aborts. The
 * deadline reaches the client's retries of a failed call too; an abort signal reaches only the
 * first attempt (@temporalio/client 1.24), so it alone would not end them.
 */
export function bounded<T>(
  connection: ConnectionLike,
  ms: number,
  fn: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  const inTime = () => connection.withDeadline(Date.now() + ms, fn);
  return signal ? connection.withAbortSignal(signal, inTime) : inTime();
}

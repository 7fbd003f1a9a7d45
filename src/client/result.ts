/**
 * Waiting for a workflow's result across Temporal outages. The client's own gRPC retries give up
 * after about 20 s, less than a server restart can take; a watcher that gave up with them would
 * stop the local worker fleet of a run that is fine and only waiting for its server.
 */
import { isGrpcServiceError, type WorkflowHandle } from '@temporalio/client';
import type { Workflow } from '@temporalio/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { ExitCode, StewardError } from '../errors';
import { innermostCause } from './status';

const GRPC_UNAVAILABLE = 14;
const PROBE_INTERVAL_MS = 1_000;

export interface OutageOptions {
  /** Told once per outage, when the server stops answering, and when it answers again. */
  onLost?(error: Error): void;
  onBack?(): void;
  /** How long the server may stay unreachable before we give up. @default 300_000 (5 minutes) */
  giveUpAfterMs?: number;
}

/**
 * The workflow's result, however many times the server is unreachable meanwhile (each time for
 * less than `giveUpAfterMs`). Any other failure, the workflow's included, is thrown as it comes.
 *
 * @throws StewardError (environment) once the server has been unreachable for `giveUpAfterMs`
 */
export async function resultAcrossOutages<W extends Workflow>(
  handle: WorkflowHandle<W>,
  options: OutageOptions = {},
): Promise<Awaited<ReturnType<W>>> {
  for (;;) {
    try {
      return (await handle.result()) as Awaited<ReturnType<W>>;
    } catch (err) {
      if (!isUnavailable(err)) throw err;
      options.onLost?.(err as Error);
    }
    await untilReachable(handle, options.giveUpAfterMs ?? 300_000);
    options.onBack?.();
  }
}

/** Whether an error (or one of its causes) says the server could not be reached at all. */
export function isUnavailable(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (isGrpcServiceError(e) && e.code === GRPC_UNAVAILABLE) return true;
  }
  return false;
}

async function untilReachable(handle: WorkflowHandle, giveUpAfterMs: number): Promise<void> {
  const deadline = Date.now() + giveUpAfterMs;
  for (;;) {
    try {
      await handle.describe();
      return;
    } catch (err) {
      if (!isUnavailable(err)) return; // it answered; result() will say what it has to say
      if (Date.now() > deadline) {
        throw new StewardError(
          `Temporal has not answered for ${Math.round(giveUpAfterMs / 1000)} s ` +
            `(${innermostCause(err).message}); everything completed so far is kept: ` +
            'run `steward launch` again once it is back',
          ExitCode.environment,
        );
      }
    }
    await sleep(PROBE_INTERVAL_MS);
  }
}

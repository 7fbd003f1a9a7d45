/**
 * An eval set that ended without finishing leaves nothing running. A terminated one runs no
 * code, so it cannot cancel its tasks as a cancelled one does (src/workflows/cancel.ts), and a
 * terminated task cannot cancel its samples. The launch that ran the eval set does it instead,
 * while its fleet still serves them: each task cancels its samples (their sandboxes removed) and
 * writes its logs as cancelled. A fleet that serves on without the launch does the same from its
 * workers (src/workers/owner-watch.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { endOwnerless } from '../workers/owner-watch';

const POLL_MS = 500;

/**
 * Cancels what of the eval set runs without its owner (its tasks, if it was terminated; samples
 * whose task has closed) and waits, at most `timeoutMs`, until those have closed. Returns how
 * many it cancelled.
 */
export async function endLeftovers(
  client: Client,
  evalSetId: string,
  { timeoutMs = 120_000 }: { timeoutMs?: number } = {},
): Promise<number> {
  const cancelled = await endOwnerless(client, `WorkflowId STARTS_WITH '${evalSetId}/'`);
  const deadline = Date.now() + timeoutMs;
  let open = cancelled;
  while (open.length > 0 && Date.now() < deadline) {
    const running = await Promise.all(
      open.map((id) =>
        client.workflow
          .getHandle(id)
          .describe()
          .then(
            (d) => d.status.name === 'RUNNING',
            () => false,
          ),
      ),
    );
    open = open.filter((_, i) => running[i]);
    if (open.length > 0) await sleep(POLL_MS);
  }
  return cancelled.length;
}

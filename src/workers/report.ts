/**
 * Each window, a worker process tells the eval set what its provider accounts saw (rate-limit
 * episodes, controller cuts and limit, retries) and takes back the connection ceiling the ramp
 * set for its tasks.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { ProviderAccounts } from '../models/accounts';
import { withTimeout } from '../util/timeout';
import { statusQuery, workerReportSignal } from '../workflows/types';

const QUERY_TIMEOUT_MS = 5_000;

export async function reportAccounts(options: {
  client: Client;
  accounts: ProviderAccounts;
  evalSetId: string;
  tasks: string[];
  intervalMs: number;
  signal: AbortSignal;
}): Promise<void> {
  const handle = options.client.workflow.getHandle(options.evalSetId);
  while (!options.signal.aborted) {
    try {
      await delay(options.intervalMs, undefined, { signal: options.signal });
    } catch {
      return;
    }
    try {
      const window = options.accounts.drainWindow();
      if (window.limit !== null) {
        await handle.signal(workerReportSignal, {
          tasks: options.tasks,
          pid: process.pid,
          limit: window.limit,
          rateLimitEpisodes: window.rateLimitEpisodes,
          cuts: window.cuts,
          retries: window.retries,
          queuedShare: window.queuedShare,
          pushbackLevel: window.pushbackLevel,
        });
      }
      const status = await withTimeout(handle.query(statusQuery), QUERY_TIMEOUT_MS);
      const ceilings = status.tasks
        .filter((t) => options.tasks.includes(t.name) && t.connection_limit !== null)
        .map((t) => t.connection_limit as number);
      if (ceilings.length > 0) options.accounts.setCeiling(Math.min(...ceilings));
    } catch (err) {
      // A missed report costs one window's information, never a sample.
      console.error(
        `steward worker: report to ${options.evalSetId} failed: ${(err as Error).message}`,
      );
    }
  }
}

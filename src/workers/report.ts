/**
 * Each window, a worker process tells the eval set what its provider accounts saw (rate-limit
 * episodes, controller cuts and limit, retries, where the provider pushed back); every second it
 * takes back the connection ceiling the ramp set for its tasks.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { ProviderAccounts } from '../models/accounts';
import { withTimeout } from '../util/timeout';
import { connectionCeilingsQuery, workerReportSignal } from '../workflows/types';

const QUERY_TIMEOUT_MS = 5_000;
/**
 * How often a worker picks up its ceilings. A report is a signal, written to the eval set's
 * history, so it goes once a window; the ceilings are a query, which writes nothing, so they are
 * polled often: a wall the tend finds must reach the controllers before they walk into it again.
 */
const CEILING_POLL_MS = 1_000;

export async function reportAccounts(options: {
  client: Client;
  accounts: ProviderAccounts;
  evalSetId: string;
  tasks: string[];
  intervalMs: number;
  signal: AbortSignal;
}): Promise<void> {
  await Promise.all([report(options), followCeilings(options)]);
}

/** Once a window: what the accounts saw, to the eval set. */
async function report(options: Parameters<typeof reportAccounts>[0]): Promise<void> {
  const handle = options.client.workflow.getHandle(options.evalSetId);
  while (await pause(options.intervalMs, options.signal)) {
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
    } catch (err) {
      // A missed report costs one window's information, never a sample.
      console.error(
        `steward worker: report to ${options.evalSetId} failed: ${(err as Error).message}`,
      );
    }
  }
}

/** Every second: the ceilings the ramp set for the process's tasks, to its accounts. */
async function followCeilings(options: Parameters<typeof reportAccounts>[0]): Promise<void> {
  const handle = options.client.workflow.getHandle(options.evalSetId);
  let failing = false;
  while (await pause(Math.min(CEILING_POLL_MS, options.intervalMs), options.signal)) {
    try {
      const all = await withTimeout(handle.query(connectionCeilingsQuery), QUERY_TIMEOUT_MS);
      const ceilings = options.tasks
        .map((task) => all[task])
        .filter((ceiling): ceiling is number => typeof ceiling === 'number');
      if (ceilings.length > 0) options.accounts.setCeiling(Math.min(...ceilings));
      failing = false;
    } catch (err) {
      // The accounts keep the last ceiling. One line per outage, not one a second.
      if (!failing) {
        console.error(
          `steward worker: ceilings from ${options.evalSetId} unavailable: ${(err as Error).message}`,
        );
      }
      failing = true;
    }
  }
}

/** Waits `ms`; false once `signal` has aborted. */
async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await delay(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

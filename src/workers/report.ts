/**
 * Each window, just before the tend, a worker process tells the eval set what its provider
 * accounts saw (rate-limit episodes, controller cuts and limit, retries, where the provider
 * pushed back); every second it takes back the connection ceiling the ramp set for its tasks.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { ProviderAccounts } from '../models/accounts';
import { withTimeout } from '../util/timeout';
import { workerControlQuery, workerReportSignal } from '../workflows/types';

const QUERY_TIMEOUT_MS = 5_000;
/**
 * How often a worker polls its control: a fifth of the window, from 1 s to 5 s. A report is a
 * signal, written to the eval set's history, so it goes once a window; the control is a query,
 * which writes nothing, so it can go more often: a wall the tend finds should reach the
 * controllers before their 15 s cooldown ends and they grow back into it. Each poll is a query
 * the eval set's workflow answers, so it is no more often than that needs.
 */
const POLL_MIN_MS = 1_000;
const POLL_MAX_MS = 5_000;
/** How long before the tend a report aims to arrive. */
const REPORT_LEAD_MS = 250;

type ReportOptions = {
  client: Client;
  accounts: ProviderAccounts;
  evalSetId: string;
  tasks: string[];
  intervalMs: number;
  signal: AbortSignal;
};

/**
 * Polls the eval set's control (see {@link POLL_MIN_MS}) and applies the connection ceilings it
 * sets; reports once per tend, just before it, so the window the report covers is the tend's
 * window (SPEC §2: the time since the previous tend). Without a tend time to aim at (an outage),
 * it reports once an interval. A process whose calls go through no provider account (`mockllm`)
 * has nothing to follow or report, and asks nothing until it has.
 */
export async function reportAccounts(options: ReportOptions): Promise<void> {
  const handle = options.client.workflow.getHandle(options.evalSetId);
  const pollMs = Math.min(POLL_MAX_MS, Math.max(POLL_MIN_MS, options.intervalMs / 5));
  const leadMs = Math.min(REPORT_LEAD_MS, options.intervalMs / 4);
  let reportedFor: number | null = null;
  let lastReport = Date.now();
  let failing = false;
  while (!options.signal.aborted) {
    if (!options.accounts.inUse) {
      if (!(await pause(pollMs, options.signal))) return;
      continue;
    }
    let nextTend: number | null = null;
    try {
      const control = await withTimeout(handle.query(workerControlQuery), QUERY_TIMEOUT_MS);
      const ceilings = options.tasks
        .map((task) => control.ceilings[task])
        .filter((ceiling): ceiling is number => typeof ceiling === 'number');
      if (ceilings.length > 0) options.accounts.setCeiling(Math.min(...ceilings));
      nextTend = control.next_tend_at;
      failing = false;
    } catch (err) {
      // The accounts keep the last ceiling. One line per outage, not one a second.
      if (!failing) {
        console.error(
          `steward worker: control from ${options.evalSetId} unavailable: ${(err as Error).message}`,
        );
      }
      failing = true;
    }
    const reportAt =
      nextTend === null
        ? lastReport + options.intervalMs
        : nextTend === reportedFor
          ? Number.POSITIVE_INFINITY // reported for it; wait for the tend to set the next
          : nextTend - leadMs;
    const untilReport = reportAt - Date.now();
    if (untilReport > pollMs) {
      if (!(await pause(pollMs, options.signal))) return;
      continue;
    }
    if (!(await pause(Math.max(0, untilReport), options.signal))) return;
    await report(handle, options);
    reportedFor = nextTend;
    lastReport = Date.now();
  }
}

/** What the accounts saw since the last report, to the eval set. */
async function report(
  handle: ReturnType<Client['workflow']['getHandle']>,
  options: ReportOptions,
): Promise<void> {
  try {
    const window = options.accounts.drainWindow();
    if (window.limit === null) return;
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
  } catch (err) {
    // A missed report costs one window's information, never a sample.
    console.error(
      `steward worker: report to ${options.evalSetId} failed: ${(err as Error).message}`,
    );
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

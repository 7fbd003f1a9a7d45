/**
 * Each window, just before the tend, the owner of the host's provider accounts (the supervisor)
 * tells an eval set what each account its tasks use saw (rate-limit episodes, controller cuts and
 * limit, retries, where the provider pushed back): one report per account, not one per process.
 * With them goes the host's memory (the memory gate, SPEC §2). Every poll it takes back the
 * connection ceilings the ramp set for the tasks.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { AccountHost } from '../models/account-host';
import { bounded } from '../temporal/bounded';
import { hostReportSignal, workerControlQuery, workerReportSignal } from '../workflows/types';
import type { HostWatch } from './host-watch';

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
  host: AccountHost;
  evalSetId: string;
  intervalMs: number;
  signal: AbortSignal;
  /** The host's memory, reported each window; unset: accounts only. */
  memory?: HostWatch;
};

/**
 * Polls the eval set's control (see {@link POLL_MIN_MS}) and applies the connection ceilings it
 * sets; reports once per tend, just before it, so the window the report covers is the tend's
 * window (SPEC §2: the time since the previous tend). Without a tend time to aim at (an outage),
 * it reports once an interval. An eval set whose calls go through no provider account here
 * (`mockllm`) still hears of the host's memory; without a memory watch either, it has nothing to
 * follow or report, and is asked nothing until it has.
 */
export async function reportAccounts(options: ReportOptions): Promise<void> {
  const handle = options.client.workflow.getHandle(options.evalSetId);
  if (await followAndReport(handle, options)) await sayGoodbye(handle, options);
}

type Handle = ReturnType<Client['workflow']['getHandle']>;

/**
 * The loop of {@link reportAccounts}, until `signal` aborts or the eval set is over; whether a
 * goodbye is owed (it reported, and the eval set may still be running).
 */
async function followAndReport(handle: Handle, options: ReportOptions): Promise<boolean> {
  const pollMs = Math.min(POLL_MAX_MS, Math.max(POLL_MIN_MS, options.intervalMs / 5));
  const leadMs = Math.min(REPORT_LEAD_MS, options.intervalMs / 4);
  let reportedFor: number | null = null;
  let lastReport = Date.now();
  // The first report goes at once: a host that joins an account other hosts already call gets
  // its share of it from the eval set within a poll, not at the next tend.
  let introduced = false;
  let failing = false;
  let reportFailing = false;
  while (!options.signal.aborted) {
    if (!options.memory && !options.host.uses(options.evalSetId)) {
      if (!(await pause(pollMs, options.signal))) return introduced;
      continue;
    }
    let nextTend: number | null = null;
    try {
      // Not cancelled by a stop (see the supervisor's reconcile): bounded, it ends by then.
      const control = await bounded(options.client.connection, QUERY_TIMEOUT_MS, () =>
        handle.query(workerControlQuery),
      );
      options.host.applyControl(options.evalSetId, control);
      nextTend = control.next_tend_at;
      failing = false;
    } catch (err) {
      // Stopping: the eval set is over or its fleet is going, and nobody needs its control.
      if (options.signal.aborted) return introduced;
      if (await isOver(handle, options)) return false;
      // The accounts keep the last ceiling. One line per outage, not one a second.
      if (!failing) {
        console.error(
          `steward worker: control from ${options.evalSetId} unavailable: ${(err as Error).message}`,
        );
      }
      failing = true;
    }
    // News (a task newly on an account) goes at once, off the schedule, accounts alone.
    const news = introduced && options.host.hasNews(options.evalSetId);
    const reportAt =
      !introduced || news
        ? Date.now()
        : nextTend === null
          ? lastReport + options.intervalMs
          : nextTend === reportedFor
            ? Number.POSITIVE_INFINITY // reported for it; wait for the tend to set the next
            : nextTend - leadMs;
    const untilReport = reportAt - Date.now();
    if (untilReport > pollMs) {
      if (!(await pause(pollMs, options.signal))) return introduced;
      continue;
    }
    if (!(await pause(Math.max(0, untilReport), options.signal))) return introduced;
    const outcome = await report(handle, options, { host: !news });
    if (outcome === 'over') return false;
    // A missed report costs one window's information, never a sample. One line per outage.
    if (outcome instanceof Error && !reportFailing) {
      console.error(`steward worker: report to ${options.evalSetId} failed: ${outcome.message}`);
    }
    reportFailing = outcome instanceof Error;
    // The introduction and news are off the schedule: the report for the coming tend still goes.
    // News goes once a poll at most (a report that could not name the task leaves it news).
    if (news) {
      if (!(await pause(pollMs, options.signal))) return introduced;
      continue;
    }
    if (introduced) reportedFor = nextTend;
    introduced = true;
    lastReport = Date.now();
  }
  return introduced;
}

/**
 * The host's last word to an eval set it reported to: its fleet is stopping, so its share of each
 * account goes to the other hosts now. Best effort: the eval set may be over already.
 */
async function sayGoodbye(handle: Handle, options: ReportOptions): Promise<void> {
  await Promise.all(
    options.host
      .drain(options.evalSetId)
      .map((window) =>
        bounded(options.client.connection, QUERY_TIMEOUT_MS, () =>
          handle.signal(workerReportSignal, { ...window, leaving: true }),
        ),
      ),
  ).catch(() => undefined);
}

/**
 * What each account saw since the last report, to the eval set: sent, why not, or over when the
 * eval set has ended (between its fleet's last poll and this report: nothing to tell it, or to say).
 */
async function report(
  handle: Handle,
  options: ReportOptions,
  what: { host: boolean },
): Promise<'sent' | 'over' | Error> {
  try {
    if (options.memory && what.host) {
      await handle.signal(hostReportSignal, options.memory.report(options.evalSetId));
    }
    for (const window of options.host.drain(options.evalSetId)) {
      await handle.signal(workerReportSignal, window);
    }
    return 'sent';
  } catch (err) {
    return (await isOver(handle, options)) ? 'over' : (err as Error);
  }
}

/**
 * Whether the eval set has ended (completed, failed, cancelled, terminated): its last run is
 * closed, so no control will come and no report is wanted. Not known (Temporal unreachable) is
 * not over: an outage is reported as one.
 */
async function isOver(handle: Handle, options: ReportOptions): Promise<boolean> {
  try {
    const { status } = await bounded(options.client.connection, QUERY_TIMEOUT_MS, () =>
      handle.describe(),
    );
    return status.name !== 'RUNNING';
  } catch {
    return false;
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

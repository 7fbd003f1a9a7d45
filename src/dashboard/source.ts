/**
 * Reads what the dashboard shows of one eval set: its live status (as `steward status --json`
 * reads it, so it works with no worker answering and after the run) and its log dir's tend
 * records and ramp history.
 */
import type { Client } from '@temporalio/client';
import { readStatus } from '../client/status';
import { openLogStore } from '../logs/store';
import { evalSetWorkflowId } from '../workflows/types';
import { dashboardData, type DashboardData } from './model';

export async function readDashboard(
  client: Client,
  name: string,
  now: () => number = Date.now,
): Promise<DashboardData> {
  const workflowId = evalSetWorkflowId(name);
  // Thorough, as `steward status` reads it: numbers a stale memo shows are checked against the log dir.
  const live = await readStatus(client, workflowId, { now, thorough: true });
  const logDir =
    live.kind === 'running'
      ? live.status.log_dir
      : live.kind === 'completed'
        ? live.result.log_dir
        : live.kind === 'failed'
          ? live.last?.log_dir
          : undefined;
  const store = logDir === undefined ? undefined : openLogStore(logDir);
  const [tends, history] = store
    ? await Promise.all([store.readTendRecords(), store.readRampHistory()])
    : [[], []];
  return dashboardData({ name, workflowId, live, tends, history, now: now() });
}

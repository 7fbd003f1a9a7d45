/**
 * The sinks through which a task workflow holds the reports its worker process sends it, while it
 * continues-as-new (see ReportSinks in src/workflows/types.ts). A sink runs in the worker's main
 * thread once the workflow's activation is done, and never on replay.
 */
import type { Client } from '@temporalio/client';
import type { InjectedSinks } from '@temporalio/worker';
import type { TaskReports } from '../activities/reports';
import { reportsHeldSignal, type ReportSinks } from '../workflows/types';

/**
 * The longest a hold lasts if the next run does not end it: that run's first workflow task ends
 * it, on this process or, if another host took it, by this running out.
 */
export const REPORT_HOLD_MS = 10_000;

export function reportSinks(reports: TaskReports, client: Client): InjectedSinks<ReportSinks> {
  return {
    reports: {
      hold: {
        fn: ({ workflowId }) => {
          reports
            .hold(workflowId, REPORT_HOLD_MS)
            .then(() => client.workflow.getHandle(workflowId).signal(reportsHeldSignal))
            // The task waits for this signal a few seconds at most, then continues anyway.
            .catch((err: unknown) =>
              console.error(`steward: reports to ${workflowId} held, but it was not told: ${err}`),
            );
        },
      },
      release: { fn: ({ workflowId }) => reports.release(workflowId) },
    },
  };
}

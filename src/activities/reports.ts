/**
 * Sample reports to their task workflows: one batcher per worker process, shared by every sample
 * it runs (src/activities/report-batcher.ts), so a task receives one signal at a time from it.
 */
import type { Client } from '@temporalio/client';
import { MAX_REPORTS_PER_SIGNAL } from '../workflows/schemas';
import { samplesDoneSignal, type SampleDone } from '../workflows/types';
import { ReportBatcher } from './report-batcher';

export type TaskReports = ReportBatcher<SampleDone>;

export function taskReports(client: Client): TaskReports {
  return new ReportBatcher<SampleDone>(
    (taskWorkflowId, batch) =>
      client.workflow.getHandle(taskWorkflowId).signal(samplesDoneSignal, { reports: batch }),
    MAX_REPORTS_PER_SIGNAL,
  );
}

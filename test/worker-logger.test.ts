/**
 * The worker processes' logger drops the two SDK warnings that say nothing wrong, and only those:
 * "Workflow failed", and core's warning of a sample workflow's task over 5 s (an inline sample
 * runs inside its workflow task). Fed the entries as the runtime forwards core's logs.
 */
import type { LogEntry } from '@temporalio/worker';
import { WorkerLogger } from '../src/workers/runtime';

function logged(entries: [string, Record<string, unknown>][]): string[] {
  const seen: LogEntry[] = [];
  const logger = new WorkerLogger('WARN', (entry) => void seen.push(entry));
  for (const [message, meta] of entries) logger.warn(message, meta);
  return seen.map((e) => e.message);
}

const LONG = '[TMPRL1104] 01a2:4:1 Workflow task duration exceeded 5 seconds.';
const core = { sdkComponent: 'core', target: 'temporalio_sdk_core::worker::workflow::managed_run' };

test("a sample workflow's long task and a failed workflow are dropped; the rest is logged", () => {
  expect(
    logged([
      [LONG, { ...core, workflowType: 'sampleWorkflow', workflowTaskDuration: 5462 }],
      ['Workflow failed', { workflowType: 'evalSet' }],
      [LONG, { ...core, workflowType: 'evalTask', workflowTaskDuration: 5100 }],
      ['Activity heartbeat failed.', { ...core, workflowType: 'sampleWorkflow' }],
      ['Workflow task duration exceeded 5 seconds.', { workflowType: 'sampleWorkflow' }],
    ]),
  ).toEqual([LONG, 'Activity heartbeat failed.', 'Workflow task duration exceeded 5 seconds.']);
});

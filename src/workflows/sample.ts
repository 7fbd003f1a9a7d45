/**
 * One sample as a workflow of its own (not a child). It exists so that a sample outlives the run
 * of the `evalTask` that admitted it: the task continues-as-new without draining, and the sample
 * reports back by the task's workflow id, which the next run answers to. Not being a child also
 * keeps the task's history to about one event per sample (the report), where a child costs four.
 *
 * Cancelled (by its task's cancellation, or by hand), it ends only once its activity has torn its
 * sandbox down, and tells its task, so that a task still running does not wait for it.
 */
import {
  ActivityCancellationType,
  CancellationScope,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyActivities,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { SampleActivities } from '../activities/sample';
import { ErrorType } from '../errors';
import { badInput, failureCause } from './failures';
import { parse, sampleStartSchema } from './schemas';
import { sampleDoneSignal, type SampleDone, type SampleInput } from './types';

const options: ActivityOptions = {
  // A sample may make many slow model calls; liveness comes from the heartbeat, not from this.
  startToCloseTimeout: '24 hours',
  // The worker heartbeats every second: a killed worker's samples run again within seconds.
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    // Only crashes and timeouts come here (a sample's own errors are non-retryable failures), so
    // the budget is for infrastructure: about 15 minutes rides out a Temporal restart or an
    // overloaded server, where 5 attempts were spent in 15 seconds and lost the sample.
    maximumAttempts: 20,
  },
};
/** Samples started before a cancelled sample waited for its teardown keep not waiting. */
export const SAMPLE_CANCEL_PATCH = 'sample-cancel-waits-for-teardown';
const { runSample: runSampleNoWait } = proxyActivities<SampleActivities>(options);
const { runSample } = proxyActivities<SampleActivities>({
  ...options,
  // The workflow closes after the activity has removed its sandbox, not before.
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});

/** Runs the sample; its activity reports success to the task, this reports a failure. */
export async function sampleWorkflow(input: SampleInput): Promise<SampleDone> {
  const parsed = parse(sampleStartSchema, input, 'sampleWorkflow input');
  if (!parsed.ok) throw badInput(parsed.message);
  const waits = patched(SAMPLE_CANCEL_PATCH);
  try {
    await (waits ? runSample : runSampleNoWait)(input);
    return { index: input.index, ok: true };
  } catch (err) {
    if (waits && isCancellation(err)) {
      const done = {
        index: input.index,
        ok: false,
        error: 'cancelled',
        errorType: ErrorType.cancelled,
      };
      // A task that is gone (terminated, or cancelled and closed) is not waiting for the report.
      await CancellationScope.nonCancellable(() => tellTask(input, done).catch(() => undefined));
      throw err;
    }
    const cause = failureCause(err);
    const done = {
      index: input.index,
      ok: false,
      error: cause.message.slice(0, 500),
      errorType: cause.type,
    };
    await tellTask(input, done);
    return done;
  }
}

function tellTask(input: SampleInput, done: SampleDone): Promise<void> {
  return getExternalWorkflowHandle(input.parentId).signal(sampleDoneSignal, done);
}

/**
 * One sample as a workflow of its own (not a child). It exists so that a sample outlives the run
 * of the `evalTask` that admitted it: the task continues-as-new without draining, and the sample
 * reports back by the task's workflow id, which the next run answers to. Not being a child also
 * keeps the task's history to about one event per sample (the report), where a child costs four.
 *
 * Cancelled (by its task's cancellation, or by hand), it ends only once its activity has torn its
 * sandbox down, and tells its task, so that a task still running does not wait for it. A failed
 * attempt that runs again (stuck, or `retry_on_error`) is another activity call: a fresh sandbox.
 *
 * A sample without a sandbox (`input.inline`) runs as a local activity, inside the workflow task
 * that starts it: the server then records the sample in three transactions (start, task started,
 * task completed with the result and the workflow's end) instead of seven or eight (an activity's
 * schedule, start, heartbeat once it runs a second, and completion, and a second workflow task).
 * That is most of the server's cost per sample, which bounds how many one-call samples a second a
 * host runs (docs/orchestration.md). What it gives up, and why only sandbox-free samples take it:
 * - a killed worker is noticed when the workflow task times out (10 s, as the heartbeat timeout
 *   was), and the run starts again on another worker as a new local activity;
 * - a cancellation reaches the sample at its workflow task's next heartbeat (the SDK completes it
 *   every 8 s while the local activity runs), not at once; a sandbox's teardown should not wait;
 * - a long sample writes three history events per such heartbeat, where an activity's heartbeats
 *   write none: minutes-long agentic samples, which hold sandboxes, keep their activity.
 */
import {
  ActivityCancellationType,
  CancellationScope,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { SampleActivities } from '../activities/sample';
import { ErrorType } from '../errors';
import type { AttemptError } from '../eval/retries';
import { badInput, failureCause, innermostApplicationFailure } from './failures';
import { parse, sampleGroupSchema, sampleStartSchema } from './schemas';
import {
  sampleDoneSignal,
  sampleRetriedSignal,
  type SampleDone,
  type SampleGroup,
  type SampleInput,
} from './types';

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

const { runSample: runSampleInline } = proxyLocalActivities<SampleActivities>({
  startToCloseTimeout: options.startToCloseTimeout,
  retry: options.retry,
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});

/** Samples started before in-run retries report a failed attempt as final. */
export const SAMPLE_RETRY_PATCH = 'sample-runs-again';

/**
 * Runs the sample; its activity reports success to the task, this reports a failure. An attempt
 * that fails and that its activity says runs again (stuck, or within `retry_on_error`: see
 * `eval/retries.ts`) is run again, on a fresh sandbox, and the task is told so it can count it.
 *
 * Given a group (sandbox-free samples admitted together: see `startSamples`), it runs each of
 * them so, side by side, and ends once every one has: each keeps its own local activity, retries
 * and report, and the group shares only this workflow's start and its workflow tasks. Cancelled,
 * it passes the cancellation on once every member has told its task.
 */
export async function sampleWorkflow(input: SampleInput): Promise<SampleDone>;
export async function sampleWorkflow(input: SampleGroup): Promise<SampleDone[]>;
export async function sampleWorkflow(
  input: SampleInput | SampleGroup,
): Promise<SampleDone | SampleDone[]> {
  if ('group' in input) {
    const parsed = parse(sampleGroupSchema, input, 'sampleWorkflow input');
    if (!parsed.ok) throw badInput(parsed.message);
    const waits = patched(SAMPLE_CANCEL_PATCH);
    const runs = await Promise.allSettled(input.group.map((sample) => runOne(sample, waits)));
    const failed = runs.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    return runs.map((r) => (r as PromiseFulfilledResult<SampleDone>).value);
  }
  const parsed = parse(sampleStartSchema, input, 'sampleWorkflow input');
  if (!parsed.ok) throw badInput(parsed.message);
  return runOne(input, patched(SAMPLE_CANCEL_PATCH));
}

async function runOne(input: SampleInput, waits: boolean): Promise<SampleDone> {
  const retries: AttemptError[] = [...(input.retries ?? [])];
  for (let first = true; ; first = false) {
    try {
      const attempt = retries.length > 0 ? { ...input, retries } : input;
      if (input.inline) await runSampleInline({ ...attempt, lostRun: lostRun(first) });
      else await (waits ? runSample : runSampleNoWait)(attempt);
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
      // Asked only on a failure, so a sample that succeeds records no marker for it.
      const again = attemptRunsAgain(err);
      if (again && patched(SAMPLE_RETRY_PATCH)) {
        retries.push(again);
        const retried = {
          index: input.index,
          attempt: retries.length,
          ...(again.error_type ? { errorType: again.error_type } : {}),
        };
        await getExternalWorkflowHandle(input.parentId)
          .signal(sampleRetriedSignal, retried)
          // A count only: a task that is gone has no use for it, and the sample goes on.
          .catch(() => undefined);
        continue;
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
}

/**
 * Whether an inline run scheduled now repeats one that a lost worker had started. Scheduled while
 * replaying, the local activity left no result in history: the worker that ran it died after
 * completing a workflow task (the SDK completes one every 8 s while a local activity runs). And the
 * first run, scheduled by the workflow's first task, sees three events (started, task scheduled,
 * task started): more mean that task timed out or failed before. A lower bound (a worker lost
 * before any such task completed, on a run after the first, goes uncounted), read for the
 * activity's input only, which replay does not compare: it cannot break determinism.
 */
function lostRun(first: boolean): boolean {
  const info = workflowInfo();
  return info.unsafe.isReplaying || (first && info.historyLength > 3);
}

/** The failed attempt, when the sample's activity said it runs again. */
function attemptRunsAgain(err: unknown): AttemptError | undefined {
  const details = innermostApplicationFailure(err)?.details;
  const again = (details?.[0] as { runsAgain?: AttemptError } | undefined)?.runsAgain;
  return again && typeof again.error === 'string' ? again : undefined;
}

function tellTask(input: SampleInput, done: SampleDone): Promise<void> {
  return getExternalWorkflowHandle(input.parentId).signal(sampleDoneSignal, done);
}

/**
 * A workflow decides only on events that a workflow task has sequenced. The bundle installs this
 * interceptor for every workflow (src/workers/bundle.ts).
 *
 * Why it exists: @temporalio/worker 1.24 can run a workflow on events that no workflow task holds
 * yet, and keep what the workflow decided. A query sent while the run's sticky worker is dead
 * waits out the sticky timeout, then goes to the task queue. A worker there that has not cached
 * the run gets the whole history as it stands, with the signals, timers and activity results
 * that came in since the last workflow task. It applies them to answer the query, keeps the run
 * cached, and the commands the workflow issued in reply go out with the next real workflow task.
 * That task's history then records decisions made from part of its events, which no replay can
 * make again: every replay delivers the task's events together. The next worker to replay the run
 * fails with a nondeterminism error, and the run is stuck. Issue 28's histories
 * (test/fixtures/histories/unsequenced/) are such runs; test/sequenced-only.test.ts makes one.
 *
 * How it is told apart: every activation of a workflow task carries that task's start time, and
 * a later task always starts later. An activation whose history grew while its time did not holds
 * events that no task has started. It is refused: its failure makes the worker drop the run (the
 * query fails, and the caller asks again), and the next workflow task replays the run from its
 * history as every replay will. Activations inside one task (a cancelled activity resolved at
 * once) keep both the time and the length, and are not touched; nor is replay, whose activations
 * all come from workflow tasks.
 */
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';
import { ErrorType } from '../errors';

/** An activation's place in history: its task's start time and the events up to it. */
interface Mark {
  time: string;
  historyLength: number;
}

export const interceptors: WorkflowInterceptorsFactory = () => {
  let last: Mark | undefined;
  return {
    internals: [
      {
        activate(input, next) {
          const { activation } = input;
          const queryOnly = (activation.jobs ?? []).every((job) => job.queryWorkflow != null);
          if (!queryOnly && activation.timestamp != null) {
            const { seconds, nanos } = activation.timestamp;
            const mark = {
              time: `${String(seconds)}.${String(nanos ?? 0)}`,
              historyLength: Number(activation.historyLength ?? 0),
            };
            const unsequenced =
              last !== undefined &&
              mark.time === last.time &&
              mark.historyLength > last.historyLength;
            if (unsequenced) {
              // Thrown synchronously out of the activation: the worker fails it and evicts the run.
              const error = new Error(
                `events ${last!.historyLength + 1}-${mark.historyLength} reached the workflow ` +
                  'outside a workflow task (a query answered by a worker without the run cached); ' +
                  'the run is dropped from the cache and replays at its next workflow task',
              );
              error.name = ErrorType.unsequencedEvents;
              throw error;
            }
            last = mark;
          }
          return next(input);
        },
      },
    ],
  };
};

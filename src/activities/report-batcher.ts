/**
 * Sample reports to their task workflows, coalesced: at most one signal in flight per task, and
 * every report that arrives while it is in flight goes into the next one.
 *
 * A sample that finishes alone is reported at once, as before. When hundreds finish together
 * (zero-latency samples, a burst after a provider recovers), one signal carries them instead of
 * hundreds: each signal takes the task workflow's lock on the server and costs it a workflow
 * task, and a server that falls behind on them times signals out, which made their samples
 * retry and signal again (a collapse the 20-task load test hit). The batches grow exactly as fast
 * as the server slows, with no timer and no added latency when it keeps up.
 *
 * A report's promise settles with the signal that carried it, so a sample's activity completes
 * only once its task has the report: a crash before that re-runs the activity, which finds its
 * record and reports again (the task counts a repeat once).
 *
 * A target can be held: its reports queue and nothing is sent to it until it is released or the
 * hold runs out. A task workflow holds its reports while it continues-as-new (src/workflows/
 * eval-task.ts): the server refuses a continue-as-new that a signal overtook, and the SDK then
 * replays the whole run, seconds for a few thousand events, with every sample of the worker
 * waiting meanwhile.
 */

export type SendReports<R> = (target: string, reports: R[]) => Promise<void>;

interface Queued<R> {
  report: R;
  resolve: () => void;
  reject: (reason: unknown) => void;
}

interface Target<R> {
  queue: Queued<R>[];
  sending: boolean;
  /** While set, nothing is sent: until `release`, or the timer's end. */
  hold?: NodeJS.Timeout;
  /** Holds waiting for the send in flight to settle (see {@link ReportBatcher.hold}). */
  idle: (() => void)[];
}

export class ReportBatcher<R> {
  private readonly targets = new Map<string, Target<R>>();

  /**
   * @param send delivers one batch to one target (a signal to a task workflow)
   * @param maxBatch the most reports one send carries
   */
  constructor(
    private readonly send: SendReports<R>,
    private readonly maxBatch: number,
  ) {
    if (!(Number.isInteger(maxBatch) && maxBatch >= 1)) {
      throw new RangeError(`a batch holds at least one report (${maxBatch})`);
    }
  }

  /** Resolves once a send that carried `report` succeeded; rejects with that send's error. */
  report(target: string, report: R): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const state = this.target(target);
      state.queue.push({ report, resolve, reject });
      this.pump(target, state);
    });
  }

  /**
   * Sends nothing more to `target` until {@link release} or for `ms` at most. Resolves once the
   * send in flight, if any, has settled: from then on, everything sent to it has arrived.
   */
  hold(target: string, ms: number): Promise<void> {
    const state = this.target(target);
    clearTimeout(state.hold);
    state.hold = setTimeout(() => this.release(target), ms);
    state.hold.unref();
    if (!state.sending) return Promise.resolve();
    return new Promise<void>((resolve) => state.idle.push(resolve));
  }

  /** Ends a hold: what queued meanwhile goes in the next send. */
  release(target: string): void {
    const state = this.targets.get(target);
    if (!state?.hold) return;
    clearTimeout(state.hold);
    state.hold = undefined;
    this.pump(target, state);
  }

  private target(target: string): Target<R> {
    let state = this.targets.get(target);
    if (!state) {
      state = { queue: [], sending: false, idle: [] };
      this.targets.set(target, state);
    }
    return state;
  }

  private pump(target: string, state: Target<R>): void {
    if (state.sending) return;
    for (const resolve of state.idle.splice(0)) resolve();
    if (state.hold) return;
    if (state.queue.length === 0) {
      this.targets.delete(target);
      return;
    }
    const batch = state.queue.splice(0, this.maxBatch);
    state.sending = true;
    // Through a promise, so a send that throws at once rejects its batch like one that fails later.
    Promise.resolve()
      .then(() =>
        this.send(
          target,
          batch.map((q) => q.report),
        ),
      )
      .then(
        () => this.settle(target, state, batch, (q) => q.resolve()),
        (err: unknown) => this.settle(target, state, batch, (q) => q.reject(err)),
      );
  }

  private settle(
    target: string,
    state: Target<R>,
    batch: Queued<R>[],
    how: (q: Queued<R>) => void,
  ) {
    state.sending = false;
    for (const queued of batch) how(queued);
    this.pump(target, state);
  }
}

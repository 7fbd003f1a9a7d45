/**
 * Sends the eval set's events (decided by `notify.ts`) to its webhooks: one `notify` activity per
 * event and webhook, started and not awaited, so a slow or dead webhook never holds up a tend.
 * Its retries are the activity's policy; a delivery that still fails is logged and dropped.
 * Delivery never fails the eval set. A delivery still being tried when the eval set continues as
 * new goes on in the next run (a run's activities end with it): at least once, never lost.
 */
import { condition, log, patched, proxyActivities } from '@temporalio/workflow';
import type { NotifyActivities } from '../activities/notify';
import { describeUrl, type NotifyTarget } from '../config/notify';
import {
  StallWatch,
  failedEvent,
  finishedEvent,
  historyEvents,
  type NotifyEvent,
  type NotifyTaskCounts,
  type StallState,
} from './notify';
import type { NotifyDelivery, RampHistoryEntry, TaskStatus } from './types';

/** Workflows started before notifications issue none of these commands on replay. */
export const NOTIFY_PATCH = 'notify-webhooks';

/**
 * How long an ending eval set waits for deliveries still being tried: a workflow that closes
 * drops them. Enough for a few retries of a webhook that hiccups; a dead one costs this, once.
 */
export const NOTIFY_DRAIN_MS = 15_000;

/**
 * How long a run about to continue as new lets deliveries in progress finish: one that succeeds
 * meanwhile is not sent again by the next run, which takes over the rest.
 */
export const NOTIFY_HANDOVER_MS = 2_000;

// About five minutes of attempts (1 s, 2 s, 4 s ... at most a minute apart), each bounded by the
// activity's own timeout of 10 s.
const { notify } = proxyActivities<NotifyActivities>({
  startToCloseTimeout: '15 seconds',
  scheduleToCloseTimeout: '5 minutes',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 10,
  },
});

export class Notifier {
  private readonly stalls: StallWatch;
  /** Deliveries being tried, by a number of this run's. */
  private readonly pending = new Map<number, NotifyDelivery>();
  private sent = 0;
  private enabled: boolean | undefined;

  constructor(
    private readonly evalSet: string,
    private readonly targets: readonly NotifyTarget[],
    saved: { stalls?: Record<string, StallState>; deliveries?: NotifyDelivery[] } = {},
  ) {
    this.stalls = new StallWatch(undefined, saved.stalls);
    // The last run's deliveries that were still being tried when it handed over.
    for (const delivery of saved.deliveries ?? []) this.deliver(delivery);
  }

  /**
   * For the next run's carry: nothing unless notifications are on. Waits a little for deliveries
   * in progress; the next run goes on with the others.
   */
  async carry(): Promise<{ stalls?: Record<string, StallState>; deliveries?: NotifyDelivery[] }> {
    if (!this.enabled) return {};
    if (this.pending.size > 0) await condition(() => this.pending.size === 0, NOTIFY_HANDOVER_MS);
    const deliveries = [...this.pending.values()];
    return { stalls: this.stalls.save(), ...(deliveries.length > 0 ? { deliveries } : {}) };
  }

  /** The ramp history's new entries: holds, pauses and resumes are events. */
  history(entries: readonly RampHistoryEntry[]): void {
    if (entries.length > 0) this.send(historyEvents(entries, this.context()));
  }

  /** The tasks a tend observed running: a task without progress for a while is stalled. */
  tend(observed: readonly TaskStatus[]): void {
    if (this.on()) this.send(this.stalls.observe(observed, this.context()));
  }

  finished(result: { status: 'success' | 'error'; tasks: readonly NotifyTaskCounts[] }): void {
    this.send([finishedEvent(result, this.context())]);
  }

  failed(failure: { message: string; task?: string }): void {
    this.send([failedEvent(failure, this.context())]);
  }

  /** Waits, a little, for deliveries still being tried: the workflow is about to close. */
  async drain(): Promise<void> {
    if (this.pending.size > 0) await condition(() => this.pending.size === 0, NOTIFY_DRAIN_MS);
  }

  private on(): boolean {
    this.enabled ??= this.targets.length > 0 && patched(NOTIFY_PATCH);
    return this.enabled;
  }

  private context() {
    return { evalSet: this.evalSet, now: Date.now() };
  }

  private send(events: readonly NotifyEvent[]): void {
    if (events.length === 0 || !this.on()) return;
    for (const event of events) for (const target of this.targets) this.deliver({ target, event });
  }

  private deliver(delivery: NotifyDelivery): void {
    const id = this.sent++;
    this.pending.set(id, delivery);
    void notify(delivery)
      .catch((err: unknown) => {
        const cause = (err as { cause?: Error }).cause;
        log.warn('notification not delivered', {
          event: delivery.event.kind,
          webhook: describeUrl(delivery.target.url),
          error: cause?.message ?? (err as Error).message,
        });
      })
      .finally(() => this.pending.delete(id))
      .catch(() => undefined);
  }
}

/**
 * Sends the eval set's events (decided by `notify.ts`) to its webhooks: one `notify` activity per
 * event and webhook, started and not awaited, so a slow or dead webhook never holds up a tend.
 * Its retries are the activity's policy; a delivery that still fails is logged and dropped.
 * Delivery never fails the eval set.
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
import type { RampHistoryEntry, TaskStatus } from './types';

/** Workflows started before notifications issue none of these commands on replay. */
export const NOTIFY_PATCH = 'notify-webhooks';

/**
 * How long an ending eval set waits for deliveries still being tried: a workflow that closes
 * drops them. Enough for a few retries of a webhook that hiccups; a dead one costs this, once.
 */
export const NOTIFY_DRAIN_MS = 15_000;

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
  private pending = 0;
  private enabled: boolean | undefined;

  constructor(
    private readonly evalSet: string,
    private readonly targets: readonly NotifyTarget[],
    saved?: Record<string, StallState>,
  ) {
    this.stalls = new StallWatch(undefined, saved);
  }

  /** For the next run's carry: nothing unless notifications are on. */
  carry(): { stalls?: Record<string, StallState> } {
    return this.enabled ? { stalls: this.stalls.save() } : {};
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
    if (this.pending > 0) await condition(() => this.pending === 0, NOTIFY_DRAIN_MS);
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
    for (const event of events) {
      for (const target of this.targets) {
        this.pending++;
        void notify({ target, event })
          .catch((err: unknown) => {
            const cause = (err as { cause?: Error }).cause;
            log.warn('notification not delivered', {
              event: event.kind,
              webhook: describeUrl(target.url),
              error: cause?.message ?? (err as Error).message,
            });
          })
          .finally(() => this.pending--)
          .catch(() => undefined);
      }
    }
  }
}

/**
 * When a running task rewrites its Inspect log (`.eval`): the task's workflow is the one owner of
 * that file and asks its activity to rebuild it from the records, bounded by count and by time,
 * never once per sample. Pure: the workflow passes its clock (`Date.now()`, replay-safe there).
 */

/** The patch that guards the periodic rebuild in `evalTask` (README, "Changing workflow code"). */
export const INSPECT_LOG_PATCH = 'inspect-log-progress';

/** A rebuild waits at most this long after a sample is done (unless one is in progress). */
export const INSPECT_LOG_INTERVAL_MS = 10_000;

/** Samples done that make a rebuild due before the interval: 1/20 of the task, at least 10. */
export function rebuildEvery(total: number): number {
  return Math.max(10, Math.ceil(total / 20));
}

export class InspectLogCadence {
  private unwritten = 0;
  private lastStart: number;
  private building = false;

  /**
   * @param every samples done that make a rebuild due at once
   * @param now when the run started: the first rebuild waits the interval from here
   */
  constructor(
    private readonly every: number,
    now: number,
    private readonly intervalMs = INSPECT_LOG_INTERVAL_MS,
  ) {
    this.lastStart = now;
  }

  /** A sample ended (completed or failed). */
  noteSample(): void {
    this.unwritten++;
  }

  get inProgress(): boolean {
    return this.building;
  }

  /** A rebuild is due: samples are unwritten, none is in progress, and count or time says so. */
  due(now: number): boolean {
    if (this.building || this.unwritten === 0) return false;
    return this.unwritten >= this.every || now - this.lastStart >= this.intervalMs;
  }

  /** How long until a rebuild is due by time alone; undefined when nothing waits for one. */
  wakeIn(now: number): number | undefined {
    if (this.building || this.unwritten === 0) return undefined;
    return Math.max(1, this.lastStart + this.intervalMs - now);
  }

  /** A rebuild starts: it writes every sample recorded so far. */
  start(now: number): void {
    this.building = true;
    this.unwritten = 0;
    this.lastStart = now;
  }

  finish(): void {
    this.building = false;
  }
}

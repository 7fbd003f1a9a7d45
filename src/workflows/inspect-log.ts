/**
 * When a running task rewrites its Inspect log (`.eval`): the task's workflow is the one owner of
 * that file and asks its activity to rebuild it from the records, bounded by count and by time,
 * never once per sample. Pure: the workflow passes its clock (`Date.now()`, replay-safe there).
 */

/** The patch that guards the periodic rebuild in `evalTask` (README, "Changing workflow code"). */
export const INSPECT_LOG_PATCH = 'inspect-log-progress';

/** A rebuild waits at most this long after a sample is done (unless one is in progress). */
export const INSPECT_LOG_INTERVAL_MS = 10_000;

/**
 * After a rebuild, the next waits this many times as long as it took: a task of many samples
 * (each rebuild reads them all) spends at most a quarter of its worker's time on its log.
 */
export const INSPECT_LOG_COST_FACTOR = 3;

/** Samples done that make a rebuild due before the interval: 1/20 of the task, at least 10. */
export function rebuildEvery(total: number): number {
  return Math.max(10, Math.ceil(total / 20));
}

export class InspectLogCadence {
  private unwritten = 0;
  private lastStart: number;
  private lastFinish: number;
  private lastCost = 0;
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
    this.lastFinish = now;
  }

  /** A sample ended (completed or failed). */
  noteSample(): void {
    this.unwritten++;
  }

  get inProgress(): boolean {
    return this.building;
  }

  /**
   * A rebuild is due: samples are unwritten, none is in progress, count or time says so, and the
   * last one's cost has been waited out.
   */
  due(now: number): boolean {
    const at = this.dueAt();
    return at !== undefined && now >= at;
  }

  /** How long until a rebuild falls due; undefined while none can (nothing unwritten, or one runs). */
  wakeIn(now: number): number | undefined {
    const at = this.dueAt();
    return at === undefined ? undefined : Math.max(1, at - now);
  }

  private dueAt(): number | undefined {
    if (this.building || this.unwritten === 0) return undefined;
    const afterCost = this.lastFinish + INSPECT_LOG_COST_FACTOR * this.lastCost;
    const byCount =
      this.unwritten >= this.every ? this.lastStart : this.lastStart + this.intervalMs;
    return Math.max(byCount, afterCost);
  }

  /** A rebuild starts: it writes every sample recorded so far. */
  start(now: number): void {
    this.building = true;
    this.unwritten = 0;
    this.lastStart = now;
  }

  /** The rebuild in progress ended (written or not). */
  finish(now: number): void {
    this.building = false;
    this.lastCost = now - this.lastStart;
    this.lastFinish = now;
  }
}

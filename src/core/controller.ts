/**
 * Model connection limits, one per provider account per host (SPEC §1-2).
 *
 * {@link AdaptiveConnections} follows Inspect AI's published adaptive controller: start 20, min
 * 10, max 100 (the ramp moves the max with {@link ConnectionLimiter.setCeiling}); it doubles per
 * saturated round until the first rate-limit signal, then grows 5% per round rounded up to a
 * "nice" number; a rate limit cuts it to 0.8x and starts a 15 s cooldown. Transient errors never
 * cut. Where a rate-limit episode began (the calls in flight when the refused attempt was sent,
 * or more if more of the calls in flight at the refusal were accepted) is the account's wall: the
 * limit stays one step below it for {@link WALL_PROBE_WAIT_MS}, from the refusal on, as the tend
 * will hold the account's ceiling once it hears of it (src/core/ramp.ts).
 * {@link FixedConnections} is the same interface for an explicit `max_connections`.
 *
 * The clock is injected and nothing here does I/O, so every rule is testable by driving calls.
 */

import type { CallCost } from './pacing';

/** How one attempt at a model call ended, as the caller classified it. */
export type CallOutcome =
  /** `retried`: an earlier attempt of the same call failed, so this success proves nothing about the limit. */
  | { kind: 'success'; retried?: boolean }
  /** 429, 529 or a provider's rate-limit error. `retryAfterMs` is the server's hint, if any. */
  | { kind: 'rateLimit'; retryAfterMs?: number }
  /** 5xx, timeout, connection reset: retried, but says nothing about the rate limit. */
  | { kind: 'transient' }
  /** A failure that will not be retried (bad request, our own abort). Neutral for the controller. */
  | { kind: 'error' };

/** Gives a slot back. Call it exactly once; later calls are ignored, so `finally` blocks are safe. */
export type Release = (outcome: CallOutcome) => void;

/** Totals since the limiter was created, for status displays. */
export interface ConnectionsSnapshot {
  /** Current connection limit. */
  limit: number;
  /** Highest the limit may go (the ramp's ceiling, or the fixed `max_connections`). */
  ceiling: number;
  inFlight: number;
  /** Calls queued for a slot. */
  waiting: number;
  /** Rate-limit cuts of the limit. */
  cuts: number;
  /** Distinct rate-limit episodes (a burst of 429s inside one cooldown is one episode). */
  rateLimitEpisodes: number;
  successes: number;
  /** True while a cut's cooldown runs: no further cut, no growth. */
  coolingDown: boolean;
}

/** What happened since the previous {@link ConnectionLimiter.drainWindow}: the tend's window. */
export interface ConnectionsWindow {
  /** Limit at the end of the window. */
  limit: number;
  /** Lowest the limit was during the window. */
  lowestLimit: number;
  /** Every rate-limit error reported, retried or not. */
  rateLimitSignals: number;
  rateLimitEpisodes: number;
  cuts: number;
  transientErrors: number;
  successes: number;
  /**
   * Share of the window (0-1) during which calls queued behind a limit that binds: a fixed one,
   * or an adaptive one that has met the provider's rate limit. Near 1, the connections, not the
   * samples, limit the task, and more samples would only wait. Queueing while an adaptive limit
   * is still doubling is not counted: the next rounds grow it away.
   */
  queuedShare: number;
  /**
   * The level at which the provider pushed back, for the rate-limit episode that began in the
   * window (the highest, if several began; null: none began): the calls in flight when the
   * refused attempt was sent, itself included, or, if higher, one more than the calls the
   * provider was holding for us when it refused (see {@link SlotLimiter}'s `witness`). It can be
   * well below the limit when the samples, not the limit, bound the calls. Signals inside an
   * episode's cooldown are traffic admitted before its cut and say nothing new about the level.
   */
  pushbackLevel: number | null;
}

/**
 * Where a model call gets its slot: a {@link ConnectionLimiter} in this process, or a lease from
 * the account's owner in another (src/workers/lease-client.ts).
 */
export interface CallSlots {
  /**
   * Waits for a slot. Rejects with the signal's reason if `signal` aborts first (the call then
   * holds no slot and leaves the queue), and with {@link SlotsUnavailable} while the slots' owner
   * cannot be reached. `cost`, the call's estimate, lets an account's owner pace it against the
   * provider's limits; a bare limiter ignores it.
   */
  acquire(signal?: AbortSignal, cost?: CallCost): Promise<Release>;
}

/**
 * The owner of an account's slots cannot be reached (the supervisor that owns them died or
 * restarts). A passing state: another owner takes its place, or the worker asking stops with its
 * supervisor, and Temporal runs its samples elsewhere. A call waits and asks again, as after a
 * transient provider error, and the sample is not failed for it.
 */
export class SlotsUnavailable extends Error {
  override readonly name = 'SlotsUnavailable';
}

/** Matched by name: the error may come from another realm (see src/errors.ts). */
export function isSlotsUnavailable(err: unknown): boolean {
  return (err as { name?: unknown } | null)?.name === 'SlotsUnavailable';
}

/** A concurrency limit on model calls. Waiters are served first come, first served. */
export interface ConnectionLimiter extends CallSlots {
  /** Sets the highest the limit may go. Lowering below in-flight never interrupts a call. */
  setCeiling(ceiling: number): void;
  snapshot(): ConnectionsSnapshot;
  /** Returns the window's counters and starts a new window. */
  drainWindow(): ConnectionsWindow;
}

/** One attempt holding a slot; only its identity matters. */
type Attempt = object;

/**
 * What a rate-limit episode's refusal proves about the level, as the attempts that were in flight
 * when it came back end: each of them that succeeds was held by the provider, so the provider
 * held at least that many of our calls at once and refused one more. It matters after a burst:
 * calls granted together reach the provider in any order, so the refused one may have been
 * granted 58th and still arrived 61st, behind 60 that were accepted.
 */
interface Witness {
  /** The attempts in flight at the refusal that have not ended yet. */
  pending: Set<Attempt>;
  accepted: number;
  level: number;
  /** The window the episode began in: the level is raised there until it is drained. */
  window: ConnectionsWindow;
}

interface Waiter {
  resolve: (release: Release) => void;
  reject: (reason: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

const emptyWindow = (limit: number): ConnectionsWindow => ({
  limit,
  lowestLimit: limit,
  rateLimitSignals: 0,
  rateLimitEpisodes: 0,
  cuts: 0,
  transientErrors: 0,
  successes: 0,
  queuedShare: 0,
  pushbackLevel: null,
});

/**
 * The slot queue and the bookkeeping both limiters share: FIFO waiters, a live limit, window and
 * total counters, and rate-limit episodes (one per cooldown, so a burst of retries from one
 * episode is counted once).
 */
abstract class SlotLimiter implements ConnectionLimiter {
  protected limit: number;
  private readonly waiters: Waiter[] = [];
  /** The attempts holding a slot: their count is the calls in flight. */
  private readonly running = new Set<Attempt>();
  /** The latest episode's measure of its level, until every attempt it watches has ended. */
  private witness: Witness | null = null;
  private cooldownUntil = Number.NEGATIVE_INFINITY;
  private totals = { cuts: 0, rateLimitEpisodes: 0, successes: 0 };
  private window: ConnectionsWindow;
  private windowStart: number;
  /** Milliseconds of the window with a call queued, up to `queuedSince`. */
  private queuedMs = 0;
  /** Since when calls have queued without a break; null while the queue is empty. */
  private queuedSince: number | null = null;

  protected constructor(
    limit: number,
    protected readonly now: () => number,
    private readonly cooldownMs: number,
  ) {
    this.limit = limit;
    this.window = emptyWindow(limit);
    this.windowStart = now();
  }

  abstract setCeiling(ceiling: number): void;
  protected abstract get ceiling(): number;
  /** Called with each slot handed out, after it counts as in flight. */
  protected onGrant(_inFlight: number): void {}
  /**
   * Called once per finished attempt, after its slot is free again. `sentAt` is the calls in
   * flight when the attempt was sent, itself included.
   */
  protected onOutcome(_outcome: CallOutcome, _sentAt: number): void {}
  /** Called when the attempts in flight at an episode's refusal raise its level (`witness`). */
  protected onPushbackMeasured(_level: number): void {}
  /** Whether calls queued now wait on a limit that binds (see {@link ConnectionsWindow.queuedShare}). */
  protected limitBinds(): boolean {
    return true;
  }

  acquire(signal?: AbortSignal): Promise<Release> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.waiters.length === 0 && this.running.size < this.limit) {
      return Promise.resolve(this.grant());
    }
    return new Promise<Release>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, signal };
      if (signal) {
        waiter.onAbort = () => {
          const index = this.waiters.indexOf(waiter);
          if (index >= 0) this.waiters.splice(index, 1);
          this.queueChanged();
          reject(signal.reason);
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.waiters.push(waiter);
      this.queueChanged();
    });
  }

  snapshot(): ConnectionsSnapshot {
    return {
      limit: this.limit,
      ceiling: this.ceiling,
      inFlight: this.running.size,
      waiting: this.waiters.length,
      ...this.totals,
      coolingDown: this.coolingDown(),
    };
  }

  drainWindow(): ConnectionsWindow {
    const now = this.now();
    const queued = this.queuedMs + (this.queuedSince === null ? 0 : now - this.queuedSince);
    const elapsed = now - this.windowStart;
    const queuedShare = elapsed > 0 ? Math.min(1, queued / elapsed) : 0;
    const window = { ...this.window, limit: this.limit, queuedShare };
    this.window = emptyWindow(this.limit);
    this.windowStart = now;
    this.queuedMs = 0;
    if (this.queuedSince !== null) this.queuedSince = now;
    return window;
  }

  protected coolingDown(): boolean {
    return this.now() < this.cooldownUntil;
  }

  /** Moves the live limit; a rise admits queued waiters at once, a fall waits for releases. */
  protected setLimit(limit: number): void {
    this.limit = limit;
    this.window.lowestLimit = Math.min(this.window.lowestLimit, limit);
    this.admitWaiters();
  }

  protected countCut(): void {
    this.totals.cuts += 1;
    this.window.cuts += 1;
  }

  /**
   * Records a rate-limit signal. Inside a cooldown it is the same episode, and only lengthens the
   * cooldown when the server asks for a longer wait.
   *
   * @param sentAt calls in flight when the refused attempt was sent, itself included: the
   *   provider refused at that level (its count of ours can only be lower, as answers in transit
   *   still count here). Taken at sending, not at the refusal, so calls sent after it and refused
   *   with it do not inflate it.
   * @returns true if this signal starts a new episode (and a new cooldown).
   */
  protected rateLimitEpisode(retryAfterMs: number | undefined, sentAt: number): boolean {
    const now = this.now();
    const hint = retryAfterMs !== undefined && retryAfterMs > 0 ? retryAfterMs : 0;
    this.window.rateLimitSignals += 1;
    if (now < this.cooldownUntil) {
      this.cooldownUntil = Math.max(this.cooldownUntil, now + hint);
      return false;
    }
    this.window.pushbackLevel = Math.max(this.window.pushbackLevel ?? 0, sentAt);
    this.witness =
      this.running.size > 0
        ? { pending: new Set(this.running), accepted: 0, level: sentAt, window: this.window }
        : null;
    this.cooldownUntil = now + Math.max(this.cooldownMs, hint);
    this.totals.rateLimitEpisodes += 1;
    this.window.rateLimitEpisodes += 1;
    return true;
  }

  private grant(): Release {
    const attempt: Attempt = {};
    this.running.add(attempt);
    const sentAt = this.running.size;
    this.onGrant(sentAt);
    let released = false;
    return (outcome) => {
      if (released) return;
      released = true;
      this.running.delete(attempt);
      this.witnessed(attempt, outcome);
      if (outcome.kind === 'success') {
        this.totals.successes += 1;
        this.window.successes += 1;
      } else if (outcome.kind === 'transient') {
        this.window.transientErrors += 1;
      }
      this.onOutcome(outcome, sentAt);
      this.admitWaiters();
    };
  }

  /** An attempt ended: if the episode's refusal found it in flight, it may raise the level. */
  private witnessed(attempt: Attempt, outcome: CallOutcome): void {
    const { witness } = this;
    if (witness === null || !witness.pending.delete(attempt)) return;
    if (witness.pending.size === 0) this.witness = null;
    if (outcome.kind !== 'success') return;
    witness.accepted += 1;
    if (witness.accepted + 1 <= witness.level) return;
    witness.level = witness.accepted + 1;
    // Once drained, the window was handed out as a copy: a later raise reaches only the wall.
    witness.window.pushbackLevel = Math.max(witness.window.pushbackLevel ?? 0, witness.level);
    this.onPushbackMeasured(witness.level);
  }

  private admitWaiters(): void {
    while (this.waiters.length > 0 && this.running.size < this.limit) {
      const waiter = this.waiters.shift() as Waiter;
      if (waiter.signal && waiter.onAbort) {
        waiter.signal.removeEventListener('abort', waiter.onAbort);
      }
      waiter.resolve(this.grant());
    }
    this.queueChanged();
  }

  /** Starts or stops the clock of queued time as the queue fills or empties. */
  private queueChanged(): void {
    const queued = this.waiters.length > 0 && this.limitBinds();
    if (queued && this.queuedSince === null) this.queuedSince = this.now();
    else if (!queued && this.queuedSince !== null) {
      this.queuedMs += this.now() - this.queuedSince;
      this.queuedSince = null;
    }
  }
}

/**
 * How long a limit is held one step below a level the provider pushed back at before that level is
 * tried again: by the account's controller from the refusal, by the tend's ceiling from the tend
 * that hears of it.
 */
export const WALL_PROBE_WAIT_MS = 120_000;

/**
 * One step of the adaptive controller's grid below `level` (multiples of 5 from 10 up, any
 * integer below), and never below 20 (SPEC §2's floor for a clamped ceiling).
 */
export function belowWall(level: number): number {
  const below = level > 10 ? Math.floor((level - 1) / 5) * 5 : level - 1;
  return Math.max(20, below);
}

/** Tuning of {@link AdaptiveConnections}; defaults are Inspect AI's. */
export interface AdaptiveConnectionsOptions {
  now: () => number;
  /** Lowest a rate-limit cut may take the limit. @default 10 */
  min?: number;
  /** @default 20 */
  start?: number;
  /** Initial ceiling; the ramp replaces it with {@link ConnectionLimiter.setCeiling}. @default 100 */
  max?: number;
  /** Minimum time between two cuts; a longer `retry-after` lengthens it. @default 15_000 */
  cooldownMs?: number;
  /** @default 0.8 */
  decreaseFactor?: number;
  /** Growth per saturated round once a rate limit has been seen. @default 0.05 */
  scaleUpFraction?: number;
}

/** A round ends after max(limit, ROUND_FLOOR) clean successes. */
const ROUND_FLOOR = 4;
/**
 * Growth needs peak in-flight >= 0.8 x limit during the round: growing a limit the work never
 * filled would hand out headroom nobody has shown the provider can take.
 */
const SATURATION = 0.8;

/** The adaptive connection controller (Inspect AI's design; see the module comment). */
export class AdaptiveConnections extends SlotLimiter {
  private readonly configuredMin: number;
  private min: number;
  private max: number;
  private readonly decreaseFactor: number;
  private readonly scaleUpFraction: number;
  /** Doubling ("slow start") lasts until the first rate-limit signal. */
  private rateLimitSeen = false;
  private roundSuccesses = 0;
  private roundPeak = 0;
  /**
   * The level of the last rate-limit episode, held one step below until `until`. Growth walking
   * back into it costs a cut and a cooldown each time, and the tend that makes it the account's
   * ceiling may be a minute away.
   */
  private wall: { level: number; until: number } | null = null;
  /** The limit the last cut started from: a raised wall redoes that cut (onPushbackMeasured). */
  private cutFrom = 0;

  constructor(options: AdaptiveConnectionsOptions) {
    const { min = 10, start = 20, max = 100 } = options;
    if (!(min >= 1 && min <= start && start <= max)) {
      throw new RangeError(
        `adaptive connections need 1 <= min <= start <= max (${min}, ${start}, ${max})`,
      );
    }
    super(start, options.now, options.cooldownMs ?? 15_000);
    this.configuredMin = min;
    this.min = min;
    this.max = max;
    this.decreaseFactor = options.decreaseFactor ?? 0.8;
    this.scaleUpFraction = options.scaleUpFraction ?? 0.05;
  }

  protected get ceiling(): number {
    return this.max;
  }

  protected override limitBinds(): boolean {
    return this.rateLimitSeen;
  }

  /**
   * Lowering clamps the live limit at once (queued calls wait, running calls finish); raising
   * only lifts the cap, and the controller climbs into it round by round. The floor follows a
   * ceiling set below it and returns when the ceiling rises again.
   */
  setCeiling(ceiling: number): void {
    if (!(Number.isInteger(ceiling) && ceiling >= 1)) {
      throw new RangeError(`connection ceiling must be a positive integer (${ceiling})`);
    }
    this.max = ceiling;
    this.min = Math.min(this.configuredMin, ceiling);
    if (this.limit > ceiling) this.setLimit(ceiling);
  }

  // Peak in-flight is sampled when a slot is handed out: at release the finishing call no longer
  // counts, so at a limit of 4 a saturated round would never see more than 3. Grants during a
  // cooldown are traffic admitted under the old, higher limit and are no evidence for growth.
  protected override onGrant(inFlight: number): void {
    if (!this.coolingDown()) this.roundPeak = Math.max(this.roundPeak, inFlight);
  }

  protected override onOutcome(outcome: CallOutcome, sentAt: number): void {
    if (outcome.kind === 'rateLimit') this.onRateLimit(outcome.retryAfterMs, sentAt);
    else if (outcome.kind === 'success' && !outcome.retried) this.onCleanSuccess();
  }

  private onRateLimit(retryAfterMs: number | undefined, sentAt: number): void {
    // Every signal, even one debounced by the cooldown, voids the round in progress.
    this.rateLimitSeen = true;
    this.roundSuccesses = 0;
    this.roundPeak = 0;
    if (!this.rateLimitEpisode(retryAfterMs, sentAt)) return;
    this.wall = { level: sentAt, until: this.now() + WALL_PROBE_WAIT_MS };
    this.cutFrom = this.limit;
    const cut = this.cutLimit();
    if (cut < this.limit) {
      this.setLimit(cut);
      this.countCut();
    }
  }

  /** A cut: the limit it started from times the decrease factor, and under the wall. */
  private cutLimit(): number {
    const decreased = floorToNice(Math.floor(this.cutFrom * this.decreaseFactor));
    return Math.max(Math.min(decreased, this.wallCap()), this.min, 1);
  }

  private onCleanSuccess(): void {
    // Successes during a cooldown were mostly in flight before the cut; they say nothing about
    // whether the lower limit holds.
    if (this.coolingDown()) return;
    this.roundSuccesses += 1;
    if (this.roundSuccesses < Math.max(this.limit, ROUND_FLOOR)) return;
    const saturated = this.roundPeak >= SATURATION * this.limit;
    this.roundSuccesses = 0;
    this.roundPeak = 0;
    if (!saturated) return;
    const grown = this.rateLimitSeen
      ? ceilToNice(this.limit + Math.max(1, Math.round(this.limit * this.scaleUpFraction)))
      : this.limit * 2;
    const next = Math.min(grown, this.max, this.wallCap());
    if (next > this.limit) this.setLimit(next);
  }

  /**
   * The episode's refusal was behind more accepted calls than its send level said: a higher wall,
   * and the cut it made is redone under it (while its cooldown holds the limit; after that the
   * rounds grow into it).
   */
  protected override onPushbackMeasured(level: number): void {
    if (this.wall === null) return;
    this.wall = { ...this.wall, level: Math.max(this.wall.level, level) };
    if (!this.coolingDown()) return;
    const cut = Math.min(this.cutLimit(), this.max);
    if (cut > this.limit) this.setLimit(cut);
  }

  /** The most the wall allows now: one step below it while it holds. */
  private wallCap(): number {
    const { wall } = this;
    return wall !== null && this.now() < wall.until ? belowWall(wall.level) : Infinity;
  }
}

/** Options of {@link FixedConnections}. */
export interface FixedConnectionsOptions {
  now: () => number;
  /** Rate-limit signals closer together than this are one episode. @default 15_000 */
  cooldownMs?: number;
}

/**
 * An explicit `max_connections`: what the account allows, fleet-wide. Rate limits never move it,
 * but their episodes are still counted so the ramp can reverse on sustained pushback.
 */
export class FixedConnections extends SlotLimiter {
  constructor(
    private readonly connections: number,
    options: FixedConnectionsOptions,
  ) {
    if (!(Number.isInteger(connections) && connections >= 1)) {
      throw new RangeError(`max_connections must be a positive integer (${connections})`);
    }
    super(connections, options.now, options.cooldownMs ?? 15_000);
  }

  protected get ceiling(): number {
    return this.limit;
  }

  /**
   * The user's number is the most this host may use; the ramp never raises it. A lower ceiling
   * is this host's share of it when several hosts call the account (src/core/shares.ts).
   */
  setCeiling(ceiling: number): void {
    const limit = Math.max(1, Math.min(this.connections, Math.floor(ceiling)));
    if (limit !== this.limit) this.setLimit(limit);
  }

  protected override onOutcome(outcome: CallOutcome, sentAt: number): void {
    if (outcome.kind === 'rateLimit') this.rateLimitEpisode(outcome.retryAfterMs, sentAt);
  }
}

/**
 * Rounds a raised limit up to a round step, so limits read 10, 15, 20 rather than 11, 13, 17
 * (the same steps as Inspect's controller); below 10 every integer is a step, never under 1.
 */
function ceilToNice(value: number): number {
  return value < 10 ? Math.max(1, value) : Math.ceil(value / 5) * 5;
}

/** Rounds a cut limit down to the same steps as {@link ceilToNice}. */
function floorToNice(value: number): number {
  return value < 10 ? Math.max(1, value) : Math.floor(value / 5) * 5;
}

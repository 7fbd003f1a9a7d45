/**
 * Per-sample limits, with Inspect AI's names and meanings (`inspect_ai/util/_limit.py`):
 *
 * - `time_limit`: seconds of wall clock from the start of the solvers (the sandbox is up by then);
 * - `working_limit`: the same clock less the time the sample's model calls spent waiting for a
 *   connection slot or a rate-limit backoff;
 * - `message_limit`: messages in the conversation. A model call on a conversation that has
 *   reached the limit is not made, and a conversation never grows past it;
 * - `token_limit`: input plus output tokens over the sample's model calls. A call is not made once
 *   the limit is reached, and the call that goes past it stops the sample (its reply is dropped,
 *   its tokens are counted).
 *
 * The agent's `max_turns` is Inspect's `turn` limit. A sample that reaches any of them stops with
 * a {@link SampleLimitExceeded}; its caller scores it on what it had.
 */
import type { z } from 'zod';
import type { SampleLimits, sampleLimitTypeSchema } from '../config/knobs';
import type { TokenUsage } from '../definition/types';

/** The kinds of limit Steward enforces: a subset of Inspect's `EvalSampleLimitType`. */
export type SampleLimitType = z.infer<typeof sampleLimitTypeSchema>;

/** Which limit stopped a sample, and its value: Inspect's `EvalSampleLimit` (seconds for time). */
export interface SampleLimitHit {
  type: SampleLimitType;
  limit: number;
}

/** A sample reached one of its limits. Match on `name`, not `instanceof`. */
export class SampleLimitExceeded extends Error {
  constructor(readonly hit: SampleLimitHit) {
    super(`${hit.type} limit of ${hit.limit}${UNITS[hit.type]} reached`);
    this.name = 'SampleLimitExceeded';
  }
}

const UNITS: Record<SampleLimitType, string> = {
  time: ' s',
  working: ' s',
  message: ' messages',
  token: ' tokens',
  turn: ' turns',
};

/** The limit `err` reports, when it is a {@link SampleLimitExceeded}. */
export function limitHitOf(err: unknown): SampleLimitHit | undefined {
  if ((err as Error | undefined)?.name !== 'SampleLimitExceeded') return undefined;
  return (err as SampleLimitExceeded).hit;
}

/** A task's limits under the eval set's: each limit the eval set sets replaces the task's. */
export function effectiveLimits(task: SampleLimits = {}, evalSet: SampleLimits = {}): SampleLimits {
  const defined = Object.entries(evalSet).filter(([, value]) => value !== undefined);
  return { ...task, ...Object.fromEntries(defined) };
}

/**
 * Working time: wall clock less the time during which at least one wait was open. Pure, on an
 * injected clock.
 */
export class WorkingClock {
  private waits = 0;
  private waitingSince = 0;
  private waitedMs = 0;

  constructor(private readonly startedAt: number) {}

  begin(now: number): void {
    if (this.waits++ === 0) this.waitingSince = now;
  }

  end(now: number): void {
    if (this.waits === 0) return;
    if (--this.waits === 0) this.waitedMs += now - this.waitingSince;
  }

  get waiting(): boolean {
    return this.waits > 0;
  }

  /** Milliseconds of work up to `now`. */
  workedMs(now: number): number {
    const open = this.waits > 0 ? now - this.waitingSince : 0;
    return now - this.startedAt - this.waitedMs - open;
  }
}

export interface LimiterOptions {
  now: () => number;
  /** The sample's own cancellation (its activity's): aborts {@link SampleLimiter.signal} too. */
  signal: AbortSignal;
}

/**
 * One sample's limits, enforced from the start of its solvers: the time limits by timers that
 * abort {@link signal} (which every model call and sandbox command of the solvers watches), the
 * counting limits by checks around each model call and each message appended.
 */
export class SampleLimiter {
  private readonly controller = new AbortController();
  readonly signal: AbortSignal;
  private readonly clock: WorkingClock;
  private readonly timers = new Set<NodeJS.Timeout>();
  private tokens: TokenUsage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
  private hit?: SampleLimitExceeded;
  private disposed = false;

  constructor(
    readonly limits: SampleLimits,
    private readonly options: LimiterOptions,
  ) {
    this.signal = AbortSignal.any([options.signal, this.controller.signal]);
    this.clock = new WorkingClock(options.now());
    if (limits.time_limit !== undefined) {
      const hit: SampleLimitHit = { type: 'time', limit: limits.time_limit };
      this.after(limits.time_limit * 1000, () => this.tripQuietly(hit));
    }
    if (limits.working_limit !== undefined) this.watchWorkingTime(limits.working_limit * 1000);
  }

  /** The limit that stopped the sample, if one did. */
  get tripped(): SampleLimitExceeded | undefined {
    return this.hit;
  }

  /** Usage of every model call made through {@link beforeCall}/{@link afterCall}. */
  get usage(): TokenUsage {
    return this.tokens;
  }

  /** Checks before a model call on a conversation of `messages` messages: it may not be made. */
  beforeCall(messages: number): void {
    this.throwIfTripped();
    const { message_limit: messageLimit, token_limit: tokenLimit } = this.limits;
    if (messageLimit !== undefined && messages >= messageLimit) {
      this.trip({ type: 'message', limit: messageLimit });
    }
    if (tokenLimit !== undefined && this.tokens.total_tokens >= tokenLimit) {
      this.trip({ type: 'token', limit: tokenLimit });
    }
  }

  /** Counts a call's usage; the call that goes past `token_limit` stops the sample. */
  afterCall(usage: TokenUsage): void {
    this.tokens = {
      input_tokens: this.tokens.input_tokens + usage.input_tokens,
      output_tokens: this.tokens.output_tokens + usage.output_tokens,
      total_tokens: this.tokens.total_tokens + usage.total_tokens,
    };
    const tokenLimit = this.limits.token_limit;
    if (tokenLimit !== undefined && this.tokens.total_tokens > tokenLimit) {
      this.trip({ type: 'token', limit: tokenLimit });
    }
  }

  /** Checks a conversation about to hold `messages` messages: it may not pass `message_limit`. */
  checkMessages(messages: number): void {
    this.throwIfTripped();
    const messageLimit = this.limits.message_limit;
    if (messageLimit !== undefined && messages > messageLimit) {
      this.trip({ type: 'message', limit: messageLimit });
    }
  }

  /** Runs `wait` (for a connection slot, a backoff) as time that is not work. */
  async during<T>(wait: Promise<T>): Promise<T> {
    this.clock.begin(this.options.now());
    try {
      return await wait;
    } finally {
      this.clock.end(this.options.now());
    }
  }

  /** Seconds of work so far. */
  workedSeconds(): number {
    return this.clock.workedMs(this.options.now()) / 1000;
  }

  /** Stops the timers: the solvers are over. */
  dispose(): void {
    this.disposed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private throwIfTripped(): void {
    if (this.hit) throw this.hit;
  }

  private trip(hit: SampleLimitHit): never {
    this.hit ??= new SampleLimitExceeded(hit);
    if (!this.controller.signal.aborted) this.controller.abort(this.hit);
    throw this.hit;
  }

  /**
   * Trips the working limit when the work done reaches `limitMs`: a timer set for the work left,
   * which, when it fires after waits, finds work still left and is set again for it.
   */
  private watchWorkingTime(limitMs: number): void {
    const check = (): void => {
      const left = limitMs - this.clock.workedMs(this.options.now());
      if (left <= 0) {
        this.tripQuietly({ type: 'working', limit: limitMs / 1000 });
      } else {
        this.after(left, check);
      }
    };
    this.after(limitMs, check);
  }

  private after(ms: number, fn: () => void): void {
    if (this.disposed) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
  }

  /** A timer's trip: the abort is what stops the solvers, nobody catches a throw here. */
  private tripQuietly(hit: SampleLimitHit): void {
    try {
      this.trip(hit);
    } catch {
      // Thrown for the solvers' benefit; a timer has nobody to throw to.
    }
  }
}

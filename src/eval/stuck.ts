/**
 * Stuck samples: a sample that makes no progress for `stuck_after` seconds is stuck. Progress is
 * a model call returning, a tool call (a sandbox command) starting or ending, or a solver saying
 * so through `SampleContext.heartbeat()`. Time spent waiting for a connection slot or a
 * rate-limit backoff is not counted: a sample queued behind a saturated provider is waiting, not
 * stuck. A stuck sample's work is aborted (its sandbox torn down by the caller) with a
 * {@link SampleStuck}; whether it runs again is `retries.ts`'s business.
 */
import type { Model, WaitMeter } from '../definition/types';
import { ErrorType } from '../errors';
import type { Sandbox, SandboxService } from '../sandbox/types';
import { WorkingClock } from './limits';

/** `stuck_after` when neither the task nor the eval set sets it: 30 minutes. */
export const DEFAULT_STUCK_AFTER_S = 1800;

/** The sample made no progress for `afterSeconds`. Match on `name` or `type`, not `instanceof`. */
export class SampleStuck extends Error {
  readonly type = ErrorType.stuck;

  constructor(readonly afterSeconds: number) {
    super(
      `no progress for ${afterSeconds} s (stuck_after): no model call returned and no tool call started or ended`,
    );
    this.name = 'SampleStuck';
  }
}

/** What a heartbeat tells of a sample's progress (Temporal shows it as the heartbeat details). */
export interface ProgressNote {
  /** Progress events so far in this attempt. */
  progress: number;
  /** Seconds of working time since the last one. */
  idle_s: number;
}

/**
 * Watches one attempt of a sample for progress, on an injected clock: {@link signal} aborts with a
 * {@link SampleStuck} once `afterMs` of working time pass without a {@link progress} call.
 */
export class ProgressWatch {
  private readonly controller = new AbortController();
  private readonly clock: WorkingClock;
  private progressAt = 0;
  private events = 0;
  private timer?: NodeJS.Timeout;
  private disposed = false;

  constructor(
    private readonly afterMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.clock = new WorkingClock(now());
    this.arm(afterMs);
  }

  /** Aborted, with the {@link SampleStuck}, once the sample is stuck. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The sample moved on: the stuck clock starts again. */
  progress(): void {
    this.events++;
    this.progressAt = this.clock.workedMs(this.now());
  }

  /** Runs `wait` (for a connection slot, a backoff) as time that cannot make a sample stuck. */
  async during<T>(wait: Promise<T>): Promise<T> {
    this.clock.begin(this.now());
    try {
      return await wait;
    } finally {
      this.clock.end(this.now());
    }
  }

  /** The sample's progress as a heartbeat carries it. */
  note(): ProgressNote {
    return { progress: this.events, idle_s: Math.round(this.idleMs() / 1000) };
  }

  /** Stops watching: the attempt is over. */
  dispose(): void {
    this.disposed = true;
    clearTimeout(this.timer);
  }

  private idleMs(): number {
    return this.clock.workedMs(this.now()) - this.progressAt;
  }

  /**
   * A timer for the idle time left; when it fires after progress or waits, it finds time left and
   * is set again for it.
   */
  private arm(ms: number): void {
    if (this.disposed) return;
    this.timer = setTimeout(() => {
      const left = this.afterMs - this.idleMs();
      if (left > 0) return this.arm(left);
      this.controller.abort(new SampleStuck(this.afterMs / 1000));
    }, ms);
  }
}

/** `model` with each call's return counted as progress and its waits as not working. */
export function watchedModel(model: Model, watch: ProgressWatch): Model {
  return {
    name: model.name,
    ...(model.maxRetries !== undefined ? { maxRetries: model.maxRetries } : {}),
    generate: async (messages, options = {}) => {
      const inner = options.waiting;
      const waiting: WaitMeter = {
        during: (wait) => watch.during(inner ? inner.during(wait) : wait),
      };
      const output = await model.generate(messages, { ...options, waiting });
      watch.progress();
      return output;
    },
  };
}

/** `sandbox` with each tool call (a command, a file written or read) counted as progress as it starts and ends. */
export function watchedSandbox(sandbox: Sandbox, watch: ProgressWatch): Sandbox {
  const tracked = async <T>(call: () => Promise<T>): Promise<T> => {
    watch.progress();
    try {
      return await call();
    } finally {
      watch.progress();
    }
  };
  const watched = (service: SandboxService): SandboxService => ({
    name: service.name,
    exec: (cmd, options) => tracked(() => service.exec(cmd, options)),
    writeFile: (file, content) => tracked(() => service.writeFile(file, content)),
    readFile: (file) => tracked(() => service.readFile(file)),
  });
  return {
    ...watched(sandbox),
    owner: sandbox.owner,
    project: sandbox.project,
    services: sandbox.services,
    service: (name) => watched(sandbox.service(name)),
    destroy: () => sandbox.destroy(),
  };
}

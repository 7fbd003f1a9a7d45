/**
 * The ramp in virtual time: the product's own tend decision ({@link decideTend}), adaptive
 * controller and retry policy, driving one task against a modelled provider that answers 429
 * over its limits. A few minutes of run take well under a second, so
 * `npm run sim:ramp` sweeps provider capacities that the real bench (`npm run bench:ramp`, one
 * capacity, about 15 minutes) cannot.
 *
 * Modelled, not measured: Temporal's share of a sample (0.1-0.4 s to start it and 0.05-0.15 s to
 * record it), one worker process, HTTP (a 429 takes 5 ms; an answer, the latency). The provider's
 * limits are the simulated provider's own limiter. The real bench is the judge; this is for
 * seeing how a rule behaves across providers.
 */
import FakeTimers from '@sinonjs/fake-timers';
import { createRateLimiter, type RateLimits } from '../../src/sim/limits';
import { mulberry32 } from '../../src/util/random';
import { retryModelCall } from '../../src/core/backoff';
import { AdaptiveConnections } from '../../src/core/controller';
import {
  decideTend,
  type RampChange,
  type RampSettings,
  type SamplesMode,
  type TaskRampState,
} from '../../src/core/ramp';

export interface SimulationOptions {
  /** Samples to finish (completed or errored). */
  samples: number;
  /** Model calls per sample, one after another. */
  calls: number;
  /**
   * The provider's limits (the simulated provider's own limiter, `src/sim/limits.ts`): requests
   * at once, and requests per minute (a token bucket holding a minute's allowance).
   */
  limits: RateLimits;
  latencyMs: number;
  /** Each request takes `latencyMs` plus uniform [0, jitterMs). */
  jitterMs: number;
  tendMs: number;
  samplesMode: SamplesMode;
  /**
   * Whether workers report where the provider pushed back, so the tend keeps a connection wall.
   * False is the tend without one (the controller still holds below a wall it met): the baseline.
   */
  walls: boolean;
  seed: number;
}

export interface SimulationResult {
  wallS: number;
  /** The least time the provider allows (see {@link idealSeconds}). */
  idealS: number;
  /** Share of requests answered 429. */
  rateLimitedShare: number;
  /** Mean requests in flight at the provider. */
  meanInFlight: number;
  /** Mean samples running (each would hold a sandbox in an agentic eval). */
  meanSamples: number;
  cuts: number;
  /** Samples whose model calls ran out of retries. */
  errored: number;
  history: RampChange[];
}

class RateLimited extends Error {
  constructor(readonly retryAfterMs: number) {
    super('429');
  }
}

export async function simulateRamp(options: SimulationOptions): Promise<SimulationResult> {
  const clock = FakeTimers.createClock(0);
  const now = (): number => clock.now;
  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => clock.setTimeout(() => resolve(), Math.max(0, ms)));
  const random = mulberry32(options.seed);

  const limits = createRateLimiter(options.limits, now);
  const provider = { answered: 0, refused: 0, area: new Area(now) };
  const request = async (): Promise<void> => {
    const admission = limits.admit(0);
    if (!admission.admitted) {
      await sleep(5);
      provider.refused += 1;
      throw new RateLimited(admission.retryAfterMs);
    }
    provider.area.set(limits.inFlight);
    await sleep(options.latencyMs + random() * options.jitterMs);
    admission.release();
    provider.area.set(limits.inFlight);
    provider.answered += 1;
  };

  const limiter = new AdaptiveConnections({ now });
  let retries = 0;
  const call = (): Promise<void> =>
    retryModelCall(request, {
      now,
      sleep,
      random,
      controller: limiter,
      classify: (err) =>
        err instanceof RateLimited
          ? { kind: 'rateLimit', retryAfterMs: err.retryAfterMs }
          : { kind: 'no' },
      onRetry: () => void retries++,
    });

  const settings: RampSettings = {
    samples: options.samplesMode,
    connections: { type: 'adaptive', min: 10, start: 20, max: 100 },
    maxSandboxes: null,
  };
  const mode = options.samplesMode;
  let state: TaskRampState = {
    setpoint: mode.type === 'ramp' ? mode.start : mode.value,
    connectionCeiling: 0,
    connectionClamp: null,
    pushbackWindows: 0,
    wall: null,
  };
  const task = { pending: options.samples, running: 0, completed: 0, errored: 0, saturated: false };
  let erroredSeen = 0;
  const samplesArea = new Area(now);
  let finishedAt = 0;

  const runSample = async (): Promise<void> => {
    await sleep(100 + random() * 300);
    try {
      for (let i = 0; i < options.calls; i++) await call();
    } catch {
      // Retries ran out (30 minutes of failing): the sample errors, as it would in Steward.
      task.errored += 1;
    }
    await sleep(50 + random() * 100);
    samplesArea.set(--task.running);
    task.completed += 1;
    if (task.completed === options.samples) finishedAt = clock.now;
    admit();
  };
  const admit = (): void => {
    while (task.pending > 0 && task.running < state.setpoint) {
      task.pending -= 1;
      samplesArea.set(++task.running);
      void runSample();
    }
    if (task.pending > 0 && task.running >= state.setpoint) task.saturated = true;
  };

  const history: RampChange[] = [];
  const tend = (): void => {
    const window = limiter.drainWindow();
    const plan = decideTend({
      settings,
      now: clock.now,
      holds: { global: null, tasks: {} },
      tasks: [
        {
          ...state,
          name: 't',
          sandboxed: false,
          status: 'running',
          remainingSamples: options.samples - task.completed,
          window: {
            saturated: task.saturated,
            rateLimitEpisodes: window.rateLimitSignals,
            controllerCuts: window.cuts,
            controllerLimit: window.lowestLimit,
            httpRetries: retries,
            sampleErrors: task.errored - erroredSeen,
            networkCapacityErrors: 0,
            connectionQueuedShare: window.queuedShare,
            pushbackLevel: options.walls ? window.pushbackLevel : null,
          },
        },
      ],
    });
    task.saturated = false;
    erroredSeen = task.errored;
    retries = 0;
    const { ramp: _ramp, name: _name, ...next } = plan.tasks[0];
    state = next;
    limiter.setCeiling(state.connectionCeiling);
    history.push(...plan.changes);
    admit();
  };

  tend();
  clock.setInterval(tend, options.tendMs);
  while (task.completed < options.samples) await clock.nextAsync();

  return {
    wallS: finishedAt / 1000,
    idealS: idealSeconds(options, options.samples * options.calls),
    rateLimitedShare: provider.refused / (provider.refused + provider.answered),
    meanInFlight: provider.area.mean(finishedAt),
    meanSamples: samplesArea.mean(finishedAt),
    cuts: limiter.snapshot().cuts,
    errored: task.errored,
    history,
  };
}

/**
 * The least time the provider allows for `requests`: every concurrency slot busy all the time
 * (Little's law, at the mean latency), and the requests-per-minute bucket spent at its refill
 * rate after its first full minute's allowance.
 */
export function idealSeconds(
  options: Pick<SimulationOptions, 'limits' | 'latencyMs' | 'jitterMs'>,
  requests: number,
): number {
  const meanLatencyS = (options.latencyMs + options.jitterMs / 2) / 1000;
  const { concurrency, rpm } = options.limits;
  return Math.max(
    concurrency === undefined ? 0 : (requests * meanLatencyS) / concurrency,
    rpm === undefined ? 0 : (Math.max(0, requests - rpm) * 60) / rpm,
  );
}

/** The time integral of a level that changes in steps, for its mean over a run. */
class Area {
  private total = 0;
  private level = 0;
  private since = 0;
  constructor(private readonly now: () => number) {}
  set(level: number): void {
    const t = this.now();
    this.total += this.level * (t - this.since);
    this.level = level;
    this.since = t;
  }
  mean(until: number): number {
    return until > 0 ? (this.total + this.level * (until - this.since)) / until : 0;
  }
}

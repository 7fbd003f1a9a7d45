/**
 * What the ramp bench reports about a run, computed from what it observed: the provider's
 * per-second series and the eval set's ramp history. Pure: no clock, no I/O.
 */
import type { SimStatsPoint } from '../../src/sim/provider';
import type { RampHistoryEntry } from '../../src/workflows/types';

/** A step of a step function: `value` holds from `t` (seconds since the run started) on. */
export interface Step {
  t: number;
  value: number;
}

/**
 * A task's setpoint over time, from its ramp history: the starting value at 0 (the first
 * change's `from`, else `initial`), then each change's `to` at its time. `startedAt` is the
 * run's start in ms since the epoch.
 */
export function setpointSteps(
  history: RampHistoryEntry[],
  task: string,
  startedAt: number,
  initial: number,
): Step[] {
  return stepsOf(history, task, 'setpoint', startedAt, initial);
}

/** The task's connection ceiling over time; `undefined` where the history never sets one. */
export function connectionSteps(
  history: RampHistoryEntry[],
  task: string,
  startedAt: number,
): Step[] | undefined {
  const changes = changesOf(history, task, 'connections');
  if (changes.length === 0) return undefined;
  return stepsOf(history, task, 'connections', startedAt, changes[0].from ?? changes[0].to ?? 0);
}

/**
 * Seconds from the run's start to the end of the ramp's climb: the first tend at which the
 * setpoint stopped rising. The history records changes only, so that tend is the one after the
 * last rise of the opening run of rises (rises at most 1.5 tend intervals apart), unless an
 * earlier change that is not a rise marks it. 0 when the setpoint never rose.
 */
export function climbEndSeconds(steps: Step[], tendIntervalSeconds: number): number {
  let lastRise: Step | undefined;
  for (let i = 1; i < steps.length; i++) {
    const step = steps[i];
    const rose = step.value > steps[i - 1].value;
    const onTime = !lastRise || step.t - lastRise.t <= 1.5 * tendIntervalSeconds;
    if (!rose || !onTime) {
      return lastRise ? Math.min(step.t, lastRise.t + tendIntervalSeconds) : 0;
    }
    lastRise = step;
  }
  return lastRise ? lastRise.t + tendIntervalSeconds : 0;
}

/** Share of the requests received from second `fromSeconds` on that were answered 429. */
export function rateLimitedShare(series: SimStatsPoint[], fromSeconds = 0): number {
  let requests = 0;
  let rateLimited = 0;
  for (const point of series) {
    if (point.t < fromSeconds) continue;
    requests += point.requests;
    rateLimited += point.rate_limited;
  }
  return requests === 0 ? 0 : rateLimited / requests;
}

/** The mean of periodic readings, 0 when there are none. */
export function mean(values: number[]): number {
  return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}

function changesOf(
  history: RampHistoryEntry[],
  task: string,
  kind: RampHistoryEntry['kind'],
): RampHistoryEntry[] {
  // After a crash the last tend's entries may be written twice: keep one of each.
  const seen = new Set<string>();
  return history
    .filter((e) => e.kind === kind && (e.task === task || e.task === '*') && e.to !== null)
    .filter((e) => {
      const key = `${e.time}|${e.task}|${e.from}|${e.to}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .sort((a, b) => Date.parse(a.time) - Date.parse(b.time));
}

function stepsOf(
  history: RampHistoryEntry[],
  task: string,
  kind: RampHistoryEntry['kind'],
  startedAt: number,
  initial: number,
): Step[] {
  const changes = changesOf(history, task, kind);
  const steps: Step[] = [{ t: 0, value: changes[0]?.from ?? initial }];
  for (const change of changes) {
    steps.push({ t: (Date.parse(change.time) - startedAt) / 1000, value: change.to as number });
  }
  return steps;
}

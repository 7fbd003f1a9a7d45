/**
 * The peers bench's provider profiles and the ideal time of a run against each: the
 * provider's physical limit for that many calls. Pure: no clock, no I/O.
 */
import type { SimLimits } from './sim-process';

export type ProfileName = 'wall' | 'rpm' | 'tpm';
export const PROFILE_NAMES: ProfileName[] = ['wall', 'rpm', 'tpm'];

/** What the bench's flags set; every profile shares the latency. */
export interface ProfileSettings {
  concurrency: number;
  rpm: number;
  /** Tokens per minute; sized from the dataset when unset (see {@link profileLimits}). */
  tpm?: number;
  latencyMs: number;
  jitterMs: number;
  seed: number;
}

/**
 * One binding limit per profile, nothing else: a concurrency wall, a requests-per-minute
 * bucket, a tokens-per-minute bucket. Unset `tpm` is sized so the tokens bucket refills at the
 * same calls per second as the requests bucket, given the dataset's mean tokens per call.
 */
export function profileLimits(
  name: ProfileName,
  settings: ProfileSettings,
  meanTokensPerCall: number,
): SimLimits {
  const timing = {
    latencyMs: settings.latencyMs,
    jitterMs: settings.jitterMs,
    seed: settings.seed,
  };
  switch (name) {
    case 'wall':
      return { ...timing, concurrency: settings.concurrency };
    case 'rpm':
      return { ...timing, rpm: settings.rpm };
    case 'tpm':
      return { ...timing, tpm: settings.tpm ?? Math.round(settings.rpm * meanTokensPerCall) };
  }
}

/** What a run asks of the provider: every call answered once. */
export interface Workload {
  calls: number;
  /** Prompt + completion tokens of all calls, as the provider counts them. */
  tokens: number;
}

/** Seconds an answered call takes on average: the jitter is uniform in [0, jitterMs]. */
export function meanLatencySeconds(limits: Pick<SimLimits, 'latencyMs' | 'jitterMs'>): number {
  return (limits.latencyMs + limits.jitterMs / 2) / 1000;
}

/**
 * The shortest time in which the provider can answer the workload, from the most binding of
 * its limits:
 *
 * - concurrency C: every slot busy all the time, each call holding one for the mean latency L:
 *   calls × L / C (Little's law).
 * - a per-minute bucket of B units (requests or tokens): it starts full, so a client sending
 *   everything at once has B units admitted at 0 and the rest as the bucket refills at B / 60
 *   per second; the last call is answered L later: L + max(0, units − B) / (B / 60).
 */
export function idealSeconds(limits: SimLimits, work: Workload): number {
  const latency = meanLatencySeconds(limits);
  const bounds = [latency];
  if (limits.concurrency !== undefined) bounds.push((work.calls * latency) / limits.concurrency);
  const bucket = (units: number, perMinute: number) =>
    latency + (Math.max(0, units - perMinute) * 60) / perMinute;
  if (limits.rpm !== undefined) bounds.push(bucket(work.calls, limits.rpm));
  if (limits.tpm !== undefined) bounds.push(bucket(work.tokens, limits.tpm));
  return Math.max(...bounds);
}

/**
 * The ideal of a client that never uses a bucket's opening burst, pacing at its refill rate
 * from the start: every unit at the refill rate, plus the last call's latency. The same as
 * {@link idealSeconds} where no bucket binds. Printed beside the ideal, for comparisons that
 * leave the burst out.
 */
export function refillOnlySeconds(limits: SimLimits, work: Workload): number {
  const latency = meanLatencySeconds(limits);
  const bounds = [idealSeconds({ ...limits, rpm: undefined, tpm: undefined }, work)];
  if (limits.rpm !== undefined) bounds.push(latency + (work.calls * 60) / limits.rpm);
  if (limits.tpm !== undefined) bounds.push(latency + (work.tokens * 60) / limits.tpm);
  return Math.max(...bounds);
}

/** One line saying what a profile is, for the table's header. */
export function describeLimits(name: ProfileName, limits: SimLimits): string {
  const latency = `${meanLatencySeconds(limits)} s calls (${limits.latencyMs}+U[0,${limits.jitterMs}] ms)`;
  switch (name) {
    case 'wall':
      return `wall: ${limits.concurrency} concurrent requests, ${latency}`;
    case 'rpm':
      return `rpm: ${limits.rpm} requests/min bucket, no concurrency limit, ${latency}`;
    case 'tpm':
      return `tpm: ${limits.tpm} tokens/min bucket, no concurrency limit, ${latency}`;
  }
}

/**
 * The wide bench's sweeps (many tasks, or many samples a task, against a provider with room for
 * a thousand calls at once) and the ideal wall time of each. Pure: no clock, no I/O.
 */
import type { SimLimits } from '../peers/sim-process';

export interface Sweep {
  /** `<tasks>x<samples per task>`, as `--sweeps` takes it. */
  name: string;
  tasks: number;
  samplesPerTask: number;
}

export const SWEEPS: readonly Sweep[] = [
  { name: '100x20', tasks: 100, samplesPerTask: 20 },
  { name: '500x4', tasks: 500, samplesPerTask: 4 },
  { name: '20x1000', tasks: 20, samplesPerTask: 1000 },
  { name: '4x1500', tasks: 4, samplesPerTask: 1500 },
];

export function totalSamples(sweep: Sweep): number {
  return sweep.tasks * sweep.samplesPerTask;
}

/** The sweeps `--sweeps` names, in the order given; an unknown name is an error. */
export function selectSweeps(names: string): Sweep[] {
  return names.split(',').map((name) => {
    const sweep = SWEEPS.find((s) => s.name === name.trim());
    if (!sweep)
      throw new Error(`unknown sweep ${name} (known: ${SWEEPS.map((s) => s.name).join(', ')})`);
    return sweep;
  });
}

/**
 * The provider's physical limit for the sweep: each sample is one call, each call holds one of
 * the provider's `concurrency` slots for the mean latency, so the calls go in waves of
 * `concurrency`: ceil(samples / concurrency) × latency. Nothing else (no tool, no start-up).
 */
export function idealSeconds(
  sweep: Sweep,
  limits: Pick<SimLimits, 'concurrency' | 'latencyMs' | 'jitterMs'>,
): number {
  const latencyS = (limits.latencyMs + limits.jitterMs / 2) / 1000;
  const waves = Math.ceil(totalSamples(sweep) / (limits.concurrency ?? Infinity));
  return Math.max(1, waves) * latencyS;
}

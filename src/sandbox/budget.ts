/**
 * How many sandboxes a run may hold at once: the default budget a Docker daemon gives
 * (`max_sandboxes` unset: 2 × its CPUs), and the peak demand the preflight checks the daemon's
 * address pools against.
 */

import type Docker from 'dockerode';

import type { ResolvedSettings } from '../config/settings';
import { dockerCpuCount } from './cleanup';

/** `max_sandboxes` when unset, on Docker: twice the CPUs the daemon reports (SPEC §2). */
export async function defaultMaxSandboxes(docker: Docker): Promise<number> {
  return 2 * (await dockerCpuCount(docker));
}

/** What {@link peakSandboxDemand} needs of a task. */
export interface DemandTask {
  /** Dataset size × epochs. */
  samples: number;
  sandboxed: boolean;
}

/**
 * The most sandboxed samples the settings allow at once: the `max_tasks` largest sandboxed tasks
 * each at the highest setpoint it can reach (pinned `max_samples`, 50 with the ramp off, else the
 * ramp's `hi`, never more than its samples), summed, and capped by the budget. A pinned setpoint
 * is not cut by the budget (see `core/ramp.ts`), so with `max_samples` set the budget caps
 * nothing.
 *
 * @param budget `max_sandboxes` as resolved (the setting, else the provider's default); `null`
 *   for no budget.
 */
export function peakSandboxDemand(
  settings: Pick<ResolvedSettings, 'samples' | 'maxTasks'>,
  tasks: readonly DemandTask[],
  budget: number | null,
): number {
  const mode = settings.samples;
  const ceiling = mode.type === 'ramp' ? mode.hi : mode.value;
  const peaks = tasks
    .filter((task) => task.sandboxed)
    .map((task) => Math.min(task.samples, ceiling))
    .sort((a, b) => b - a)
    .slice(0, settings.maxTasks ?? undefined);
  const sum = peaks.reduce((total, peak) => total + peak, 0);
  return budget === null || mode.type === 'pinned' ? sum : Math.min(sum, budget);
}

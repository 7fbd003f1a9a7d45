/** A task's status as the eval-set workflow reports it, for tests that feed status to a view or a tender. */
import type { TaskStatus } from '../../src/workflows/types';

/** A running task with nothing done yet; `overrides` sets what a test cares about. */
export function taskStatus(overrides: Partial<TaskStatus> & Pick<TaskStatus, 'name'>): TaskStatus {
  return {
    state: 'running',
    taskQueue: `q-${overrides.name}`,
    samples: 1_000,
    completed: 0,
    errored: 0,
    in_flight: 0,
    waiting: 0,
    setpoint: 10,
    resumed: 0,
    saturations: 0,
    runs: 1,
    network_errors: 0,
    connection_limit: null,
    rate_limit_episodes: 0,
    ramp_state: 'steady',
    ...overrides,
  };
}

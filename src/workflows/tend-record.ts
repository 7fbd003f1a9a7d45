/**
 * The line each tend appends to `<log_dir>/tend.jsonl`: every task's and provider account's
 * numbers as the tend left them, so the dashboard and `steward plot` can draw a run over time,
 * live or finished (docs/log-format.md). Pure and deterministic (workflow code).
 */
import type { AccountStatus, HostStatus, RampState, TaskStatus } from './types';

/** Tells new runs of the eval set to append a tend record at each tend and at the end. */
export const TEND_RECORD_PATCH = 'tend-record';

export interface TendRecord {
  /** ISO time of the tend. */
  time: string;
  tasks: TendTaskRecord[];
  accounts: TendAccountRecord[];
  /** The hosts' memory as they last reported it (absent: none reported, or an older run). */
  hosts?: TendHostRecord[];
}

export interface TendHostRecord {
  host: string;
  headroom_bytes: number;
  /** The lowest headroom in the window, over RAM: what the memory gate read. */
  lowest_headroom_share: number;
  fleet_resident_bytes: number;
  processes: number;
}

export interface TendTaskRecord {
  task: string;
  state: TaskStatus['state'];
  samples: number;
  completed: number;
  errored: number;
  limited: number;
  stuck: number;
  in_flight: number;
  setpoint: number;
  /** The model-connection ceiling sent to the task's workers; null: not set yet. */
  connection_ceiling: number | null;
  /** Rate-limit episodes (429s) the task's workers reported in the window just ended. */
  rate_limit_episodes: number;
  ramp_state: RampState;
  /** Why the ramp is where it is (a hold's reason, a cap, pushback), when it says. */
  ramp_reason?: string;
}

export interface TendAccountRecord {
  account: string;
  tasks: string[];
  connection_ceiling: number;
  /** The controllers' lowest limit in the window; null: no report. */
  controller_limit: number | null;
  in_flight: number | null;
  /** Where the provider pushed back (the wall's level); null: no wall. */
  wall: number | null;
  clamp: number | null;
  /** Calls were being paced from the provider's rate-limit headers. */
  pacing: boolean;
  rate_limit_episodes: number;
}

/** The record of a tend at `now` from the tasks' and accounts' status after it. */
export function tendRecord(
  now: number,
  tasks: readonly TaskStatus[],
  accounts: readonly AccountStatus[],
  hosts: readonly HostStatus[] = [],
): TendRecord {
  return {
    time: new Date(now).toISOString(),
    tasks: tasks.map((t) => ({
      task: t.name,
      state: t.state,
      samples: t.samples,
      completed: t.completed,
      errored: t.errored,
      limited: t.limited ?? 0,
      stuck: t.stuck ?? 0,
      in_flight: t.in_flight,
      setpoint: t.setpoint,
      connection_ceiling: t.connection_limit,
      rate_limit_episodes: t.rate_limit_episodes,
      ramp_state: t.ramp_state,
      ...(t.ramp_reason === undefined ? {} : { ramp_reason: t.ramp_reason }),
    })),
    accounts: accounts.map((a) => ({
      account: a.account,
      tasks: a.tasks,
      connection_ceiling: a.connection_ceiling,
      controller_limit: a.controller_limit,
      in_flight: a.in_flight,
      wall: a.wall?.level ?? null,
      clamp: a.clamp,
      pacing: a.pacing?.pacing ?? false,
      rate_limit_episodes: a.rate_limit_episodes,
    })),
    ...(hosts.length === 0
      ? {}
      : {
          hosts: hosts.map((h) => ({
            host: h.host,
            headroom_bytes: h.headroom_bytes,
            lowest_headroom_share: h.lowest_headroom_share,
            fleet_resident_bytes: h.fleet_resident_bytes,
            processes: h.processes,
          })),
        }),
  };
}

/**
 * The ramp (SPEC §2): at each tend, from what every task saw during the window, decide each
 * task's sample setpoint and model-connection ceiling.
 *
 * Pure functions of plain JSON data. The `evalSet` workflow calls {@link decideTend} in its tend
 * loop (so it is deterministic: time comes in as `now`, nothing is random), applies the plan, and
 * carries each task's {@link TaskRampState} into the next tend. One tend, per running task:
 *
 * 1. range clamp down: above `hi` comes to `hi` at once, without window or hold checks;
 * 2. reversal: rate-limit pushback in this window and the one before steps the setpoint down one
 *    step (never below `lo`) and clamps the connection ceiling to where the controllers fell
 *    (never below 20); again at every tend while the pushback lasts;
 * 3. a fleet over the sandbox budget cuts every task above an even share to it (may go below
 *    `lo`);
 * 4. raises fill the budget left, lowest setpoints first: below `lo` comes up to `lo` (no window
 *    or hold checks; only the budget may keep a task below `lo`); then a climb by one step when
 *    the six gates held, capped by `hi`, the remaining samples and the budget. A task whose
 *    model calls queued for a connection through most of the window, behind a limit that has met
 *    the provider's rate limit (or a fixed `max_connections`), shows no demand for more samples
 *    (gate 1): more would only sit idle, holding sandboxes. It does not climb; its connection
 *    ceiling still may;
 * 5. connection ceiling: `hi`, or the reversal clamp lifted one step per clean window, and never
 *    above the step below a wall the provider pushed back at, until a probe (see
 *    {@link ConnectionWall}).
 *
 * A hold blocks climbs and connection raises (probes included), nothing else. Pinned setpoints
 * never move.
 */

import { budgetUsed, fitClimb, overBudgetCuts, startShares, type BudgetClaim } from './budget';
import { belowWall, WALL_PROBE_WAIT_MS } from './controller';
import { MEMORY_FLOOR } from './slots';

/**
 * How many samples a task runs at once.
 * - `pinned`: an explicit `max_samples`; honoured exactly, never moves (not even for the budget).
 * - `ramp`: `samples_ramp [lo, hi]`, by default `[50, 200]`, step 20, start clamp(50, lo, hi).
 * - `fixed`: `samples_ramp: false`; tasks stay at `value` (50), moved only by the sandbox budget.
 */
export type SamplesMode =
  | { type: 'pinned'; value: number }
  | { type: 'ramp'; lo: number; hi: number; step: number; start: number }
  | { type: 'fixed'; value: number };

/**
 * Model connections per provider account. `fixed` is an explicit `max_connections`. `adaptive`
 * bounds the controller; its `max` applies while no ramp is active, else the ceiling is `hi`.
 */
export type ConnectionsMode =
  { type: 'fixed'; n: number } | { type: 'adaptive'; min: number; start: number; max: number };

export interface RampSettings {
  samples: SamplesMode;
  connections: ConnectionsMode;
  /** The sandbox budget; null means unlimited (elastic providers). */
  maxSandboxes: number | null;
}

/** A `steward ramp hold`, in force until resumed. */
export interface Hold {
  reason: string;
  /** Epoch milliseconds. */
  since: number;
  by?: string;
}

export interface Holds {
  /** Holds every task. */
  global: Hold | null;
  /** Holds by task name; a task's own hold is the one shown. */
  tasks: Record<string, Hold>;
}

/** What a task saw during the window (the time since the previous tend). */
export interface TaskWindow {
  /** Samples were waiting and in-flight reached the setpoint. */
  saturated: boolean;
  /** 429/529/provider rate-limit errors. */
  rateLimitEpisodes: number;
  /** Rate-limit cuts by the task's adaptive controllers. */
  controllerCuts: number;
  /** Lowest current adaptive limit reported by the task's workers; null if none reported. */
  controllerLimit: number | null;
  /** Model calls retried (rate limit and transient). */
  httpRetries: number;
  /** Samples that errored, not counting Docker refusing a network. */
  sampleErrors: number;
  /** Docker refused a network: the host is at capacity. Blocks climbs; not a model error. */
  networkCapacityErrors: number;
  /**
   * Largest share of the window (0-1) during which a worker of the task had model calls queued
   * for a connection. From {@link CONNECTION_BOUND_SHARE} up, samples wait on connections.
   */
  connectionQueuedShare: number;
  /**
   * Calls in flight (the refused one included) when the attempt whose refusal began a rate-limit
   * episode was sent, highest over the task's workers (null: none began): where the provider
   * pushed back on the task's connections.
   */
  pushbackLevel: number | null;
}

/**
 * From this share of a window with calls queued for a connection, the task's samples are bound
 * by model connections, not by the setpoint: a climb would add samples that only wait.
 */
export const CONNECTION_BOUND_SHARE = 0.5;

/** What the ramp carries for a task from one tend to the next. */
export interface TaskRampState {
  setpoint: number;
  /** The connection ceiling last sent to the task's workers. */
  connectionCeiling: number;
  /** Where reversal clamped the ceiling below `hi` until climbs lift it; null: it follows `hi`. */
  connectionClamp: number | null;
  /** Consecutive windows with rate-limit pushback, the latest included. */
  pushbackWindows: number;
  /** Where the provider last pushed back on connections; null (or absent): no wall known. */
  wall?: ConnectionWall | null;
}

/**
 * A connection level the provider pushed back at. The ceiling stays one step below it, so the
 * adaptive controllers do not walk into it again and again (each time costing a cut to 0.8x and
 * a 15 s cooldown), until `probeAt`; then it may go back up to `level`. Pushback during that
 * probe doubles the wait; a window at `level` without pushback lifts the wall.
 */
export interface ConnectionWall {
  /** The pushback level: calls in flight when the refusal that began the episode was sent. */
  level: number;
  /** Epoch milliseconds from which the ceiling may go back up to `level`. */
  probeAt: number;
  /** The wait that set `probeAt`. */
  waitMs: number;
}

/** The longest wait under a wall that keeps pushing back. */
export const WALL_PROBE_MAX_WAIT_MS = 600_000;

export interface TaskTendInput extends TaskRampState {
  name: string;
  sandboxed: boolean;
  /**
   * The task's model calls go through a provider account whose ceiling {@link decideAccount}
   * decides (SPEC §2: the wall, the reversal clamp and the ceiling belong to the account): the
   * task's own ceiling is carried as is. Unset: the task's own, as before any account reported.
   */
  accountManaged?: boolean;
  status: 'running' | 'finished';
  /** Samples not yet finished, in flight included. */
  remainingSamples: number;
  window: TaskWindow;
}

export interface TendInput {
  settings: RampSettings;
  /** Epoch milliseconds of this tend. */
  now: number;
  holds: Holds;
  tasks: TaskTendInput[];
  /**
   * The host whose memory headroom fell lowest in the window, over its RAM (gate 6); absent or
   * null: no host reported its memory.
   */
  memory?: HostMemoryWindow | null;
}

/**
 * What the lowest host's memory did during the window (SPEC §2, gate 6). A headroom under
 * {@link MEMORY_FLOOR} of RAM fails every task's climb: a climb adds samples to processes on
 * every host of the fleet, so one host short of memory holds them all. Otherwise a fleet that
 * outgrows its host is noticed only when the kernel kills a worker.
 */
export interface HostMemoryWindow {
  host: string;
  /** Its lowest headroom (available memory plus free swap) in the window, over its RAM (0-1). */
  lowestHeadroomShare: number;
}

/** For display: what the ramp is doing with a task, and why. */
export type RampStatus =
  | { state: 'held'; reason: string }
  | {
      state: 'climbing' | 'backing_off' | 'pinned' | 'at_ceiling' | 'steady' | 'finished';
      reason?: string;
    };

/** One move, with the reason a user reads in `steward status`. */
export interface RampChange {
  task: string;
  kind: 'setpoint' | 'connections';
  from: number;
  to: number;
  reason: string;
  /** Epoch milliseconds. */
  at: number;
}

export interface TaskTendPlan extends TaskRampState {
  name: string;
  ramp: RampStatus;
}

export interface TendPlan {
  /** Every input task, in input order; finished ones unchanged. */
  tasks: TaskTendPlan[];
  /** In the order decided; a task may move twice (e.g. reversal, then a budget cut). */
  changes: RampChange[];
  /** Setpoints of running sandboxed tasks against the budget; null without a budget. */
  budget: { limit: number; used: number } | null;
}

/** The floor and ceiling a setpoint keeps to; `fixed` is the range [value, value]. */
interface Range {
  lo: number;
  hi: number;
}

type Recorder = (
  task: string,
  kind: RampChange['kind'],
  from: number,
  to: number,
  why: string,
) => void;

/** A running task's setpoint through one tend. */
interface Draft {
  task: TaskTendInput;
  setpoint: number;
  pushbackWindows: number;
  reversed: boolean;
  /** Failed climb gates (SPEC §2's five); connection raises need none failed either. */
  gates: string[];
  /** Other reasons it does not climb (Docker at capacity, caps, budget). */
  blocked: string[];
  raise?: { to: number; kind: 'floor' | 'climb'; cap?: string };
  hold: Hold | null;
}

/** Decides one tend. */
export function decideTend(input: TendInput): TendPlan {
  const { settings, now } = input;
  const changes: RampChange[] = [];
  const record: Recorder = (task, kind, from, to, reason) => {
    if (from !== to) changes.push({ task, kind, from, to, reason, at: now });
  };
  const mode = settings.samples;
  const range = mode.type === 'pinned' ? null : rangeOf(mode);
  const running = input.tasks.filter((task) => task.status === 'running');
  const drafts = running.map((task) => draftSetpoint(task, input, record));

  const budget = mode.type === 'pinned' ? null : settings.maxSandboxes;
  const claimants = budget === null ? [] : drafts.filter((draft) => draft.task.sandboxed);
  if (budget !== null) {
    const fleet = budgetUsed(claimants.map(claimOf));
    for (const cut of overBudgetCuts(claimants.map(claimOf), budget)) {
      const draft = claimants.find((candidate) => candidate.task.name === cut.name) as Draft;
      const why = `budget: fleet ${fleet} over max_sandboxes ${budget}, cut to even share ${cut.to}`;
      record(cut.name, 'setpoint', cut.from, cut.to, why);
      draft.setpoint = cut.to;
      draft.raise = undefined;
      draft.blocked.push(`budget: cut to even share ${cut.to}`);
    }
  }

  // Floors before climbs: lo is the least the user asked for; growth comes after. (Only unpinned
  // tasks ask for raises, so `range` is set whenever there is one.)
  let free = budget === null ? 0 : budget - budgetUsed(claimants.map(claimOf));
  for (const kind of ['floor', 'climb'] as const) {
    const wanting = drafts.filter((draft) => draft.raise?.kind === kind);
    const funded = wanting.filter((draft) => claimants.includes(draft));
    const fit = fitClimb(
      funded.map((draft) => ({ name: draft.task.name, from: draft.setpoint, to: draft.raise!.to })),
      free,
    );
    free = fit.free;
    for (const draft of wanting) {
      const raise = draft.raise!;
      const index = funded.indexOf(draft);
      const to = index >= 0 ? fit.granted[index] : raise.to;
      const short = to < raise.to ? `capped by max_sandboxes ${budget}` : undefined;
      if (short) draft.blocked.push(`budget: max_sandboxes ${budget} in use`);
      record(
        draft.task.name,
        'setpoint',
        draft.setpoint,
        to,
        raiseReason(raise, short, range as Range),
      );
      draft.setpoint = to;
    }
  }

  const tasks = input.tasks.map((task): TaskTendPlan => {
    const draft = drafts.find((candidate) => candidate.task === task);
    if (!draft) return { ...carried(task), name: task.name, ramp: { state: 'finished' } };
    const ceiling = task.accountManaged
      ? {
          ceiling: task.connectionCeiling,
          clamp: task.connectionClamp,
          wall: task.wall ?? null,
          raised: false,
        }
      : decideCeiling(draft, settings, now, record);
    return {
      name: task.name,
      setpoint: draft.setpoint,
      connectionCeiling: ceiling.ceiling,
      connectionClamp: ceiling.clamp,
      pushbackWindows: draft.pushbackWindows,
      wall: ceiling.wall,
      ramp: rampStatus(draft, mode, ceiling.raised),
    };
  });
  const used = budgetUsed(claimants.map(claimOf));
  return { tasks, changes, budget: budget === null ? null : { limit: budget, used } };
}

/**
 * The six climb gates of SPEC §2. Returns the reason for each that failed in the window; none
 * failing means the task may climb (budget, `hi` and remaining samples permitting).
 */
export function failedGates(
  task: TaskTendInput,
  hold: Hold | null,
  memory: HostMemoryWindow | null = null,
): string[] {
  const { window } = task;
  const failed: string[] = [];
  if (!window.saturated) failed.push('not saturated');
  if (window.rateLimitEpisodes > 0 || window.controllerCuts > 0) {
    const windows = task.pushbackWindows + 1;
    failed.push(`rate-limit pushback (${windows} consecutive window${windows > 1 ? 's' : ''})`);
  }
  if (window.sampleErrors > 0) failed.push(`${window.sampleErrors} sample error(s)`);
  if (window.httpRetries > 0.25 * task.setpoint) {
    failed.push(`HTTP retries surged (${window.httpRetries} > 0.25 x ${task.setpoint})`);
  }
  if (hold) failed.push(`hold: ${hold.reason}`);
  if (memory && memory.lowestHeadroomShare < MEMORY_FLOOR) {
    // Rounded down: a share just under the floor never reads as the floor itself.
    const percent = (Math.floor(memory.lowestHeadroomShare * 1000) / 10).toFixed(1);
    failed.push(
      `host memory low (${memory.host}: headroom ${percent}% of RAM < ${MEMORY_FLOOR * 100}%)`,
    );
  }
  return failed;
}

/** Setpoint moves that need no budget (pin, clamp down, reversal) and the raise wanted. */
function draftSetpoint(task: TaskTendInput, input: TendInput, record: Recorder): Draft {
  const mode = input.settings.samples;
  const { window } = task;
  const pushback = window.rateLimitEpisodes > 0 || window.controllerCuts > 0;
  // Own keys only: a task named `constructor` must not find Object.prototype's.
  const { tasks: holds, global } = input.holds;
  const hold = Object.hasOwn(holds, task.name) ? holds[task.name] : global;
  const draft: Draft = {
    task,
    setpoint: task.setpoint,
    pushbackWindows: pushback ? task.pushbackWindows + 1 : 0,
    reversed: false,
    gates: failedGates(task, hold, input.memory ?? null),
    blocked: [],
    hold,
  };
  if (mode.type === 'pinned') {
    record(task.name, 'setpoint', task.setpoint, mode.value, `max_samples pinned at ${mode.value}`);
    draft.setpoint = mode.value;
    return draft;
  }
  const range = rangeOf(mode);

  if (draft.setpoint > range.hi) {
    const why =
      mode.type === 'fixed'
        ? `samples_ramp off: stays at ${range.hi}`
        : `range narrowed to ${show(range)}`;
    record(task.name, 'setpoint', draft.setpoint, range.hi, why);
    draft.setpoint = range.hi;
  }
  if (mode.type === 'ramp' && draft.pushbackWindows >= 2) {
    draft.reversed = true;
    // One step from where the task stood, so a range clamp in the same tend is not doubled.
    const target = Math.max(range.lo, task.setpoint - mode.step);
    const why = `reversal: rate-limit pushback in ${draft.pushbackWindows} consecutive windows`;
    if (target < draft.setpoint) {
      record(task.name, 'setpoint', draft.setpoint, target, why);
      draft.setpoint = target;
    }
  }

  if (draft.setpoint < range.lo) {
    draft.raise = { to: range.lo, kind: 'floor' };
  } else if (mode.type === 'ramp' && draft.setpoint < range.hi && draft.gates.length === 0) {
    if (window.networkCapacityErrors > 0) {
      draft.blocked.push('docker is out of networks');
      return draft;
    }
    if (window.connectionQueuedShare >= CONNECTION_BOUND_SHARE) {
      const share = Math.round(window.connectionQueuedShare * 100);
      draft.blocked.push(
        `connection-bound: model calls queued for a connection ${share}% of the window`,
      );
      return draft;
    }
    const stepped = Math.min(draft.setpoint + mode.step, range.hi);
    if (task.remainingSamples < stepped) {
      const cap = `capped by ${task.remainingSamples} remaining samples`;
      if (task.remainingSamples > draft.setpoint)
        draft.raise = { to: task.remainingSamples, kind: 'climb', cap };
      else draft.blocked.push(cap);
    } else {
      const cap = stepped === range.hi ? `capped at hi ${range.hi}` : undefined;
      draft.raise = { to: stepped, kind: 'climb', cap };
    }
  }
  return draft;
}

/**
 * The connection ceiling: the fixed `max_connections`; else the ramp's `hi` while a ramp is
 * active, lowered by reversal to where the controllers fell (never below 20) and lifted back one
 * step per clean window, and kept one step below a wall the provider pushed back at (see
 * {@link ConnectionWall}); else the adaptive `max`.
 */
/** A task's connection ceiling (a task whose calls no account manages): {@link planCeiling}. */
function decideCeiling(
  draft: Draft,
  settings: RampSettings,
  now: number,
  record: Recorder,
): CeilingPlan {
  const { task } = draft;
  return planCeiling(
    {
      settings,
      now,
      previous: task.connectionCeiling,
      bound: (range) => ({
        hi: range.hi,
        follows: `range ${show(range)}: connection ceiling follows hi`,
        narrowed: `range narrowed to ${show(range)}`,
      }),
      wall: task.wall ?? null,
      window: task.window,
      clamp: task.connectionClamp,
      held: draft.hold !== null,
      reverse: draft.reversed,
      clean: draft.gates.length === 0,
    },
    (from, to, why) => record(task.name, 'connections', from, to, why),
  );
}

/** The connection ceiling a tend leaves, and whether it rose. */
interface CeilingPlan {
  ceiling: number;
  clamp: number | null;
  wall: ConnectionWall | null;
  raised: boolean;
}

/** What {@link planCeiling} decides from: a task's or an account's state and window. */
interface CeilingInput {
  settings: RampSettings;
  now: number;
  previous: number;
  /**
   * Under the ramp's range: the most it allows (a task's `hi`, or the sum of its tasks' for an
   * account), why the ceiling sits there, and why it fell to a lower one.
   */
  bound(range: Range): { hi: number; follows: string; narrowed: string };
  wall: ConnectionWall | null;
  window: PushbackWindow;
  clamp: number | null;
  held: boolean;
  /** Reversal: clamp to where the controllers fell. */
  reverse: boolean;
  /** A clean window: a clamp rises one step. */
  clean: boolean;
}

/**
 * The one ceiling policy, for a task's connections and for an account's (SPEC §2 "Connections
 * and samples together"). With `max_connections` fixed, that; with no ramp active, the adaptive
 * `max`. Otherwise `hi`, lowered by the wall (held one step below where the provider pushed back,
 * until a probe; see {@link ConnectionWall}) and by reversal (to where the controllers fell,
 * never below 20), lifted back one step per clean window. A hold freezes raises, including a
 * range widened while it is in force. Each move goes to `note` with the reason a user reads.
 */
function planCeiling(
  input: CeilingInput,
  note: (from: number, to: number, why: string) => void,
): CeilingPlan {
  const { settings, previous } = input;
  const mode = settings.samples;
  if (settings.connections.type === 'fixed' || mode.type !== 'ramp') {
    const ceiling = connectionCeilingFor(settings);
    const why =
      settings.connections.type === 'fixed'
        ? `max_connections fixed at ${ceiling}`
        : `no ramp active: adaptive max ${ceiling}`;
    note(previous, ceiling, why);
    return { ceiling, clamp: null, wall: null, raised: false };
  }

  const { hi, follows, narrowed } = input.bound(mode);
  const wall = nextWall(input.wall, input.window, input.now, input.held);
  const cap = wallCap(wall.wall, input.now);
  // The highest the ceiling may be this tend: `hi`, or less under a wall.
  const upper = Math.min(hi, cap ?? hi);
  let clamp = input.clamp !== null && input.clamp < upper ? input.clamp : null;
  if (input.held && Math.min(upper, clamp ?? upper) > previous) clamp = previous;
  let ceiling = Math.min(upper, clamp ?? upper);
  let why = follows;
  if (ceiling < previous) {
    const byWall = ceiling < hi && ceiling === cap && wall.wall !== null;
    why = byWall ? wall.why || `held below the wall at ${wall.wall!.level} connections` : narrowed;
  } else if (ceiling > previous && wall.why) why = wall.why;
  note(previous, ceiling, why);

  const level = input.window.controllerLimit;
  if (input.reverse && level !== null && Math.max(20, level) < ceiling) {
    const to = Math.max(20, level);
    const where = level < 20 ? `20 (controllers at ${level}; never below 20)` : `${level}`;
    note(ceiling, to, `reversal: clamped to where the controllers fell, ${where}`);
    return { ceiling: to, clamp: to, wall: wall.wall, raised: false };
  }
  if (clamp !== null && input.clean) {
    const to = Math.min(upper, clamp + mode.step);
    note(ceiling, to, 'climb: connection ceiling raised one step after a clean window');
    ceiling = to;
    clamp = to >= upper ? null : to;
    return { ceiling, clamp, wall: wall.wall, raised: true };
  }
  return { ceiling, clamp, wall: wall.wall, raised: ceiling > previous };
}

/**
 * The wall after this window, and why the ceiling moves for it. Pushback starts or moves the
 * wall to the level it came at; pushback during a probe (at or after `probeAt`) doubles the wait
 * before the next, up to {@link WALL_PROBE_MAX_WAIT_MS}. A window whose controllers stayed at the
 * wall's level throughout without pushback, once probing, lifts it. A hold defers both the probe
 * and the lift: they are raises.
 */
function nextWall(
  wall: ConnectionWall | null,
  window: PushbackWindow,
  now: number,
  held: boolean,
): { wall: ConnectionWall | null; why: string } {
  const level = window.pushbackLevel;
  if (level !== null) {
    const probing = wall !== null && now >= wall.probeAt;
    const waitMs = probing ? Math.min(WALL_PROBE_MAX_WAIT_MS, wall.waitMs * 2) : WALL_PROBE_WAIT_MS;
    const next = { level, probeAt: now + waitMs, waitMs };
    const why =
      `wall: the provider pushed back at ${level} connections; ` +
      `held at ${belowWall(level)} for ${waitMs / 1000} s before trying ${level} again`;
    return { wall: next, why };
  }
  if (wall === null) return { wall, why: '' };
  if (held) {
    return { wall: { ...wall, probeAt: Math.max(wall.probeAt, now) }, why: '' };
  }
  if (now < wall.probeAt) return { wall, why: '' };
  const pushback = window.rateLimitEpisodes > 0 || window.controllerCuts > 0;
  if (!pushback && window.controllerLimit !== null && window.controllerLimit >= wall.level) {
    return { wall: null, why: `wall at ${wall.level} lifted: a window there without pushback` };
  }
  return {
    wall,
    why: `probe: ${wall.waitMs / 1000} s under the wall at ${wall.level}; trying ${wall.level} again`,
  };
}

/** The ceiling a wall allows: one step below it until its probe, then the wall's level. */
function wallCap(wall: ConnectionWall | null, now: number): number | null {
  if (wall === null) return null;
  return now >= wall.probeAt ? wall.level : belowWall(wall.level);
}

function rampStatus(draft: Draft, mode: SamplesMode, raised: boolean): RampStatus {
  if (mode.type === 'pinned') return { state: 'pinned', reason: `max_samples ${mode.value}` };
  const range = rangeOf(mode);
  if (draft.reversed) {
    const why = `rate-limit pushback in ${draft.pushbackWindows} consecutive windows`;
    return { state: 'backing_off', reason: why };
  }
  if (draft.hold) return { state: 'held', reason: draft.hold.reason };
  if (draft.setpoint > draft.task.setpoint || raised) return { state: 'climbing' };
  if (mode.type === 'fixed') return { state: 'steady', reason: 'samples_ramp off' };
  if (draft.setpoint >= range.hi) return { state: 'at_ceiling', reason: `hi ${range.hi}` };
  const why = [...draft.blocked, ...draft.gates][0];
  return why === undefined ? { state: 'steady' } : { state: 'steady', reason: why };
}

function raiseReason(raise: NonNullable<Draft['raise']>, short: string | undefined, range: Range) {
  if (raise.kind === 'floor') {
    return `up to lo ${raise.to} (range ${show(range)})${short ? `, ${short}` : ''}`;
  }
  const caps = [raise.cap, short].filter((cap) => cap !== undefined);
  return `climb: saturated, no pushback${caps.length > 0 ? ` (${caps.join(', ')})` : ''}`;
}

/** What a window said about rate-limit pushback: a task's, or a provider account's. */
type PushbackWindow = Pick<
  TaskWindow,
  'rateLimitEpisodes' | 'controllerCuts' | 'controllerLimit' | 'pushbackLevel'
>;

/** What a provider account's owners reported during the window (summed over hosts). */
export type AccountWindow = PushbackWindow;

/** What the ramp carries for a provider account from one tend to the next. */
export interface AccountRampState {
  /** The connection ceiling of the account's controllers. */
  ceiling: number;
  /** Where reversal clamped the ceiling until clean windows lift it; null: none. */
  clamp: number | null;
  /** Consecutive windows with rate-limit pushback on the account, the latest included. */
  pushbackWindows: number;
  wall: ConnectionWall | null;
}

export interface AccountTendInput extends AccountRampState {
  /** The account, named without a secret (model, base URL, key hash). */
  account: string;
  /** Running tasks whose calls use the account. */
  tasks: string[];
  /** A hold on any of them freezes the account's raises: they are all its calls. */
  held: boolean;
  window: AccountWindow;
}

/** One move of an account's ceiling, with the reason a user reads. */
export interface AccountChange {
  account: string;
  tasks: string[];
  from: number;
  to: number;
  reason: string;
  at: number;
}

/**
 * A provider account's connection ceiling at a tend (SPEC §2 "Connections and samples
 * together"): while a ramp is active, the sum of the `hi`s of the running tasks that use it,
 * lowered by the account's wall (held one step below where the provider pushed back, until a
 * probe; see {@link ConnectionWall}) and by reversal (pushback in two consecutive windows clamps
 * it to where the controllers fell, never below 20), lifted back one step per clean window. With
 * `max_connections` fixed, that; with no ramp active, the adaptive `max`.
 */
export function decideAccount(
  settings: RampSettings,
  now: number,
  input: AccountTendInput,
): { state: AccountRampState; changes: AccountChange[] } {
  const changes: AccountChange[] = [];
  const { window } = input;
  const pushback = window.rateLimitEpisodes > 0 || window.controllerCuts > 0;
  const pushbackWindows = pushback ? input.pushbackWindows + 1 : 0;
  const tasks = Math.max(1, input.tasks.length);
  const plan = planCeiling(
    {
      settings,
      now,
      previous: input.ceiling,
      bound: (range) => {
        const follows =
          tasks === 1
            ? `range ${show(range)}: connection ceiling follows hi`
            : `range ${show(range)}: connection ceiling follows the sum of the hi of its ${tasks} tasks`;
        return {
          hi: range.hi * tasks,
          follows,
          narrowed: `fewer tasks or a narrower range: ${follows}`,
        };
      },
      wall: input.wall,
      window,
      clamp: input.clamp,
      held: input.held,
      reverse: pushbackWindows >= 2,
      clean: !pushback && !input.held,
    },
    (from, to, reason) => {
      if (from !== to) {
        changes.push({ account: input.account, tasks: input.tasks, from, to, reason, at: now });
      }
    },
  );
  return {
    state: { ceiling: plan.ceiling, clamp: plan.clamp, pushbackWindows, wall: plan.wall },
    changes,
  };
}

/** A task that is starting, and one already running (for the budget share). */
export interface StartingTask {
  name: string;
  sandboxed: boolean;
}

export interface RunningTask extends StartingTask {
  setpoint: number;
}

export interface StartInput {
  settings: RampSettings;
  now: number;
  starting: StartingTask[];
  running: RunningTask[];
}

export interface StartPlan {
  /** The starting tasks' first state, in input order. */
  tasks: Array<TaskRampState & { name: string }>;
  /** Budget cuts of running tasks that the newcomers pushed over budget: apply each `to`. */
  changes: RampChange[];
}

/**
 * First state of tasks that start. Pinned tasks start at `max_samples`, others at the ramp's
 * start (or 50 with the ramp off); under a sandbox budget, sandboxed ones start at a share of it,
 * and running tasks the newcomers push over budget are cut at once (see {@link startShares}).
 */
export function initialSetpoints(input: StartInput): StartPlan {
  const { settings, now } = input;
  const mode = settings.samples;
  const value = mode.type === 'ramp' ? mode.start : mode.value;
  const budget = mode.type === 'pinned' ? null : settings.maxSandboxes;
  const setpoints = input.starting.map(() => value);
  const changes: RampChange[] = [];
  if (budget !== null) {
    const running = input.running
      .filter((task) => task.sandboxed)
      .map((task) => ({ name: task.name, setpoint: task.setpoint }));
    const sandboxed = input.starting.flatMap((task, index) => (task.sandboxed ? [index] : []));
    const shares = startShares(budget, value, running, sandboxed.length);
    sandboxed.forEach((index, position) => (setpoints[index] = shares.setpoints[position]));
    for (const cut of shares.cuts) {
      const reason = `budget: fleet ${shares.fleet} over max_sandboxes ${budget}, cut to even share ${cut.to}`;
      changes.push({
        task: cut.name,
        kind: 'setpoint',
        from: cut.from,
        to: cut.to,
        reason,
        at: now,
      });
    }
  }
  const connectionCeiling = connectionCeilingFor(settings);
  return {
    tasks: input.starting.map((task, index) => ({
      name: task.name,
      setpoint: setpoints[index],
      connectionCeiling,
      connectionClamp: null,
      pushbackWindows: 0,
      wall: null,
    })),
    changes,
  };
}

/** The ceiling connections follow when nothing clamps them. */
export function connectionCeilingFor(settings: RampSettings): number {
  if (settings.connections.type === 'fixed') return settings.connections.n;
  return settings.samples.type === 'ramp' ? settings.samples.hi : settings.connections.max;
}

function rangeOf(mode: Exclude<SamplesMode, { type: 'pinned' }>): Range {
  return mode.type === 'ramp' ? { lo: mode.lo, hi: mode.hi } : { lo: mode.value, hi: mode.value };
}

function show(range: Range): string {
  return `[${range.lo}, ${range.hi}]`;
}

function claimOf(draft: Draft): BudgetClaim {
  return { name: draft.task.name, setpoint: draft.setpoint };
}

function carried(task: TaskTendInput): TaskRampState {
  const { setpoint, connectionCeiling, connectionClamp, pushbackWindows, wall } = task;
  return { setpoint, connectionCeiling, connectionClamp, pushbackWindows, wall: wall ?? null };
}

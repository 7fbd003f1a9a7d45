/**
 * The eval set's ramp state between tends: per task, what the ramp carries and what the window
 * has seen so far; plus the holds, the range, and the history. Deterministic (workflow code): the
 * decisions themselves are the pure `decideTend` of src/core/ramp.
 */
import {
  decideAccount,
  decideTend,
  initialSetpoints,
  type AccountRampState,
  type Holds,
  type RampChange,
  type RampSettings,
  type TaskRampState,
  type TaskWindow,
} from '../core/ramp';
import type {
  HoldRampArgs,
  RampHistoryEntry,
  ResolvedSettings,
  ResumeRampArgs,
  AccountStatus,
  SetSamplesRampArgs,
  TaskPlan,
  TaskStatus,
  WorkerReport,
} from './types';

/** Entries kept in workflow state (and shown by `status`); the log has them all. */
const HISTORY_KEPT = 100;

interface WorkerWindow {
  rateLimitEpisodes: number;
  cuts: number;
  retries: number;
  lowestLimit: number | null;
  /** The largest queued share any worker of the task reported. */
  queuedShare: number;
  /** The highest pushback level any worker of the task reported (see `TaskWindow`). */
  pushbackLevel: number | null;
}

export interface TendedTask {
  plan: TaskPlan;
  status: TaskStatus;
  ramp: TaskRampState;
  /** Cumulative counters at the previous tend, to diff into a window. */
  seen: { saturations: number; errored: number; networkErrors: number };
  workers: WorkerWindow;
}

/** A provider account the eval set's tasks use, as its hosts' owners reported it. */
export interface TendedAccount {
  /** Named without a secret (see `WorkerReport.account`). */
  name: string;
  /** Tasks whose calls went through it. */
  tasks: string[];
  state: AccountRampState;
  window: WorkerWindow;
  /** The last window's rate-limit errors, for status. */
  lastRateLimitEpisodes: number;
  /** The last window's lowest controller limit, for status. */
  lastLimit: number | null;
  /** What each reporting host (by pid) said most recently: in flight and pacing, for status. */
  hosts: Record<string, Pick<WorkerReport, 'inFlight' | 'pacing'>>;
  /** Hosts that reported in the current window; one silent for a whole window is dropped. */
  reportedBy: string[];
}

export class Tender {
  readonly tasks = new Map<string, TendedTask>();
  /** By name; a task is on at most one (a task has one model). */
  readonly accounts = new Map<string, TendedAccount>();
  readonly holds: Holds = { global: null, tasks: {} };
  readonly history: RampHistoryEntry[] = [];
  /** History entries not yet written to the log. */
  private unsaved: RampHistoryEntry[] = [];
  private settings: RampSettings;

  constructor(settings: ResolvedSettings) {
    this.settings = {
      samples: settings.samples,
      connections: settings.connections,
      maxSandboxes: settings.maxSandboxes,
    };
  }

  add(plan: TaskPlan, status: TaskStatus): void {
    this.tasks.set(plan.name, {
      plan,
      status,
      ramp: {
        setpoint: status.setpoint,
        connectionCeiling: 0,
        connectionClamp: null,
        pushbackWindows: 0,
      },
      seen: { saturations: 0, errored: 0, networkErrors: 0 },
      workers: emptyWindow(),
    });
  }

  /** First limits of a starting task; may cut running ones (returned) to fit the budget. */
  start(name: string, now: number): string[] {
    const running = this.running()
      .filter((t) => t.plan.name !== name)
      .map((t) => ({ name: t.plan.name, sandboxed: t.plan.sandboxed, setpoint: t.ramp.setpoint }));
    const task = this.tasks.get(name)!;
    const plan = initialSetpoints({
      settings: this.settings,
      now,
      starting: [{ name, sandboxed: task.plan.sandboxed }],
      running,
    });
    const { setpoint, connectionCeiling, connectionClamp, pushbackWindows, wall } = plan.tasks[0];
    task.ramp = { setpoint, connectionCeiling, connectionClamp, pushbackWindows, wall };
    task.status.setpoint = task.ramp.setpoint;
    task.status.connection_limit = task.ramp.connectionCeiling;
    task.status.ramp_state = this.settings.samples.type === 'pinned' ? 'pinned' : 'steady';
    return this.apply(plan.changes);
  }

  /** Decides a tend from the window just ended; returns the tasks whose limits changed. */
  tend(now: number): string[] {
    const running = this.running();
    const plan = decideTend({
      settings: this.settings,
      now,
      holds: this.holds,
      tasks: running.map((t) => ({
        ...t.ramp,
        name: t.plan.name,
        sandboxed: t.plan.sandboxed,
        status: 'running',
        remainingSamples: t.status.samples - t.status.completed - t.status.errored,
        window: this.window(t),
        accountManaged: this.accountOf(t.plan.name) !== undefined,
      })),
    });
    for (const decided of plan.tasks) {
      const task = this.tasks.get(decided.name)!;
      const { setpoint, connectionCeiling, connectionClamp, pushbackWindows, wall } = decided;
      task.ramp = { setpoint, connectionCeiling, connectionClamp, pushbackWindows, wall };
      task.status.ramp_state = decided.ramp.state;
      task.status.ramp_reason = decided.ramp.reason;
      task.status.rate_limit_episodes = task.workers.rateLimitEpisodes;
      task.seen = {
        saturations: task.status.saturations,
        errored: task.status.errored,
        networkErrors: task.status.network_errors,
      };
      task.workers = emptyWindow();
    }
    return [...new Set([...this.apply(plan.changes), ...this.tendAccounts(now)])];
  }

  report(report: WorkerReport): void {
    if (report.account !== undefined) this.reportAccount(report.account, report);
    for (const name of report.tasks) {
      const w = this.tasks.get(name)?.workers;
      if (w) addReport(w, report);
    }
  }

  hold(args: HoldRampArgs, now: number): void {
    const hold = { reason: args.reason, since: now, by: args.by };
    if (args.task) this.holds.tasks[args.task] = hold;
    else this.holds.global = hold;
    this.log({
      time: now,
      task: args.task ?? '*',
      kind: 'hold',
      from: null,
      to: null,
      reason: args.reason,
      by: args.by,
    });
  }

  resume(args: ResumeRampArgs, now: number): void {
    if (args.task) delete this.holds.tasks[args.task];
    else {
      this.holds.global = null;
      for (const task of Object.keys(this.holds.tasks)) delete this.holds.tasks[task];
    }
    this.log({
      time: now,
      task: args.task ?? '*',
      kind: 'resume',
      from: null,
      to: null,
      reason: 'resumed',
      by: args.by,
    });
  }

  /** A new range takes effect at the next tend (SPEC §2); pinned samples never move. */
  setRange(args: SetSamplesRampArgs, now: number): void {
    const samples = this.settings.samples;
    const range = args.range === false ? 'off' : `[${args.range[0]}, ${args.range[1]}]`;
    if (samples.type === 'pinned') {
      const reason = `samples_ramp ${range} ignored: max_samples pins samples at ${samples.value}`;
      this.log({ time: now, task: '*', kind: 'range', from: null, to: null, reason, by: args.by });
      return;
    }
    this.settings = {
      ...this.settings,
      samples:
        args.range === false
          ? { type: 'fixed', value: 50 }
          : {
              type: 'ramp',
              lo: args.range[0],
              hi: args.range[1],
              step: 20,
              start: clamp(50, args.range[0], args.range[1]),
            },
    };
    this.log({
      time: now,
      task: '*',
      kind: 'range',
      from: null,
      to: null,
      reason: `samples_ramp set to ${range}`,
      by: args.by,
    });
  }

  /**
   * Each account's ceiling from its window (SPEC §2: the wall, the reversal clamp and the ceiling
   * belong to the account); its running tasks show it and their workers' owners apply it.
   * Returns the tasks whose ceiling moved.
   */
  private tendAccounts(now: number): string[] {
    const touched: string[] = [];
    for (const account of this.accounts.values()) {
      const tasks = account.tasks.filter(
        (name) => this.tasks.get(name)?.status.state === 'running',
      );
      if (tasks.length === 0) continue;
      const held =
        this.holds.global !== null || tasks.some((name) => Object.hasOwn(this.holds.tasks, name));
      const w = account.window;
      const decided = decideAccount(this.settings, now, {
        ...account.state,
        account: account.name,
        tasks,
        held,
        window: {
          rateLimitEpisodes: w.rateLimitEpisodes,
          controllerCuts: w.cuts,
          controllerLimit: w.lowestLimit,
          pushbackLevel: w.pushbackLevel,
        },
      });
      account.state = decided.state;
      account.lastRateLimitEpisodes = w.rateLimitEpisodes;
      account.lastLimit = w.lowestLimit;
      for (const pid of Object.keys(account.hosts)) {
        if (!account.reportedBy.includes(pid)) delete account.hosts[pid];
      }
      account.reportedBy = [];
      account.window = emptyWindow();
      for (const change of decided.changes) {
        this.log({
          time: change.at,
          task: change.tasks.join(','),
          account: change.account,
          kind: 'connections',
          from: change.from,
          to: change.to,
          reason: change.reason,
        });
      }
      for (const name of tasks) {
        const task = this.tasks.get(name)!;
        if (task.ramp.connectionCeiling === decided.state.ceiling) continue;
        task.ramp.connectionCeiling = decided.state.ceiling;
        task.status.connection_limit = decided.state.ceiling;
        touched.push(name);
      }
    }
    return touched;
  }

  private reportAccount(name: string, report: WorkerReport): void {
    let account = this.accounts.get(name);
    if (!account) {
      // It starts where its tasks' ceilings stand: what its owner applies until the next tend.
      const ceilings = report.tasks.flatMap((t) => {
        const limit = this.tasks.get(t)?.ramp.connectionCeiling;
        return limit ? [limit] : [];
      });
      account = {
        name,
        tasks: [],
        state: {
          ceiling: ceilings.length > 0 ? Math.min(...ceilings) : report.limit,
          clamp: null,
          pushbackWindows: 0,
          wall: null,
        },
        window: emptyWindow(),
        lastRateLimitEpisodes: 0,
        lastLimit: null,
        hosts: {},
        reportedBy: [],
      };
      this.accounts.set(name, account);
    }
    for (const task of report.tasks) {
      if (this.tasks.has(task) && !account.tasks.includes(task)) account.tasks.push(task);
    }
    addReport(account.window, report);
    const pid = String(report.pid);
    account.hosts[pid] = { inFlight: report.inFlight, pacing: report.pacing };
    if (!account.reportedBy.includes(pid)) account.reportedBy.push(pid);
  }

  /** The accounts for `status`: what the tend decided and what their owners last reported. */
  accountStatus(): AccountStatus[] {
    return [...this.accounts.values()].map((a) => {
      const hosts = Object.values(a.hosts);
      const known = hosts.filter((h) => h.inFlight !== undefined);
      const pacing = hosts.find((h) => h.pacing?.pacing)?.pacing ?? hosts[0]?.pacing;
      return {
        account: a.name,
        tasks: [...a.tasks],
        connection_ceiling: a.state.ceiling,
        controller_limit: a.lastLimit,
        in_flight: known.length > 0 ? known.reduce((n, h) => n + (h.inFlight ?? 0), 0) : null,
        wall: a.state.wall
          ? { level: a.state.wall.level, probe_at: new Date(a.state.wall.probeAt).toISOString() }
          : null,
        clamp: a.state.clamp,
        pacing: pacing
          ? { pacing: pacing.pacing, binding: pacing.binding, spacing_ms: pacing.spacingMs }
          : null,
        rate_limit_episodes: a.lastRateLimitEpisodes,
      };
    });
  }

  private accountOf(task: string): TendedAccount | undefined {
    for (const account of this.accounts.values()) if (account.tasks.includes(task)) return account;
    return undefined;
  }

  /** History entries recorded since the last call, for the log. */
  takeUnsaved(): RampHistoryEntry[] {
    const entries = this.unsaved;
    this.unsaved = [];
    return entries;
  }

  private running(): TendedTask[] {
    return [...this.tasks.values()].filter((t) => t.status.state === 'running');
  }

  private window(t: TendedTask): TaskWindow {
    const networkErrors = t.status.network_errors - t.seen.networkErrors;
    return {
      saturated: t.status.saturations > t.seen.saturations,
      rateLimitEpisodes: t.workers.rateLimitEpisodes,
      controllerCuts: t.workers.cuts,
      controllerLimit: t.workers.lowestLimit,
      connectionQueuedShare: t.workers.queuedShare ?? 0,
      pushbackLevel: t.workers.pushbackLevel ?? null,
      httpRetries: t.workers.retries,
      sampleErrors: t.status.errored - t.seen.errored - networkErrors,
      networkCapacityErrors: networkErrors,
    };
  }

  private apply(changes: RampChange[]): string[] {
    const touched = new Set<string>();
    for (const change of changes) {
      const task = this.tasks.get(change.task)!;
      if (change.kind === 'setpoint') {
        task.ramp.setpoint = change.to;
        task.status.setpoint = change.to;
      } else {
        task.ramp.connectionCeiling = change.to;
        task.status.connection_limit = change.to;
      }
      touched.add(change.task);
      this.log({
        time: change.at,
        task: change.task,
        kind: change.kind,
        from: change.from,
        to: change.to,
        reason: change.reason,
      });
    }
    return [...touched];
  }

  private log(entry: Omit<RampHistoryEntry, 'time'> & { time: number }): void {
    const full = { ...entry, time: new Date(entry.time).toISOString() };
    this.history.push(full);
    if (this.history.length > HISTORY_KEPT) this.history.shift();
    this.unsaved.push(full);
  }
}

function addReport(w: WorkerWindow, report: WorkerReport): void {
  w.rateLimitEpisodes += report.rateLimitEpisodes;
  w.cuts += report.cuts;
  w.retries += report.retries;
  // State carried over from a run before this field existed has none yet.
  w.queuedShare = Math.max(w.queuedShare ?? 0, report.queuedShare ?? 0);
  const level = report.pushbackLevel ?? null;
  if (level !== null) w.pushbackLevel = Math.max(w.pushbackLevel ?? 0, level);
  w.lowestLimit = w.lowestLimit === null ? report.limit : Math.min(w.lowestLimit, report.limit);
}

function emptyWindow(): WorkerWindow {
  return {
    rateLimitEpisodes: 0,
    cuts: 0,
    retries: 0,
    lowestLimit: null,
    queuedShare: 0,
    pushbackLevel: null,
  };
}

function clamp(value: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, value));
}

/**
 * The eval set's ramp state between tends: per task, what the ramp carries and what the window
 * has seen so far; plus the holds, the range, and the history. Deterministic (workflow code): the
 * decisions themselves are the pure `decideTend` of src/core/ramp.
 */
import { samplesSettingForRange } from '../config/settings';
import { splitAccount } from '../core/shares';
import {
  decideAccount,
  decideTend,
  initialSetpoints,
  type Hold,
  type Holds,
  type RampChange,
  type HostMemoryWindow,
  type RampSettings,
  type TaskWindow,
} from '../core/ramp';
import { QUIET_WINDOW, admitting, endWindow, holdsInForce, pause, unpause } from './pause';
import type {
  AccountStatus,
  HoldRampArgs,
  HostReport,
  HostStatus,
  PauseArgs,
  RampHistoryEntry,
  ResolvedSettings,
  ResumeRampArgs,
  SetSamplesRampArgs,
  TaskPlan,
  TaskStatus,
  TendedAccount,
  TendedTask,
  TenderState,
  UnpauseArgs,
  WorkerReport,
  WorkerWindow,
} from './types';

/** A steering command as the tender takes it (parsed already: see src/workflows/schemas.ts). */
export type Steering =
  | { kind: 'hold'; args: HoldRampArgs }
  | { kind: 'resume'; args: ResumeRampArgs }
  | { kind: 'range'; args: SetSamplesRampArgs }
  | { kind: 'pause'; args: PauseArgs }
  | { kind: 'unpause'; args: UnpauseArgs };

/** Entries kept in workflow state (and shown by `status`); the log has them all. */
const HISTORY_KEPT = 100;

export class Tender {
  /** The tasks by name; the same objects as the state's list. */
  readonly tasks = new Map<string, TendedTask>();
  /** The provider accounts by name, likewise; a task is on at most one (it has one model). */
  readonly accounts = new Map<string, TendedAccount>();
  /** History entries not yet written to the log. */
  private unsaved: RampHistoryEntry[] = [];

  /**
   * A tender for a new eval set; tasks are added as planned. `accountCeilingsSum`: see
   * `TenderState` (the workflow passes its patch).
   */
  static fresh(settings: ResolvedSettings, options: { accountCeilingsSum?: boolean } = {}): Tender {
    return new Tender({
      ...(options.accountCeilingsSum ? { accountCeilingsSum: true } : {}),
      settings: {
        samples: settings.samples,
        connections: settings.connections,
        maxSandboxes: settings.maxSandboxes,
      },
      tasks: [],
      accounts: [],
      holds: { global: null, tasks: {} },
      history: [],
    });
  }

  /** Takes over the state a previous run saved (continue-as-new). */
  constructor(private readonly state: TenderState) {
    for (const task of state.tasks) this.tasks.set(task.plan.name, task);
    state.accounts ??= [];
    for (const account of state.accounts) this.accounts.set(account.name, account);
    this.unsaved = state.unsaved ?? [];
    delete state.unsaved;
  }

  /** The ramp's settings now: a range set on the live run replaces the launched one. */
  get settings(): RampSettings {
    return this.state.settings;
  }

  get holds(): Holds {
    return this.state.holds;
  }

  /** The pause in force, if any (src/workflows/pause.ts). */
  get paused(): Hold | null {
    return this.state.pause ?? null;
  }

  /** The limits to send a task: its setpoint is 0 while paused. */
  limits(name: string): { setpoint: number; connectionLimit: number } {
    const { ramp } = this.tasks.get(name)!;
    return {
      setpoint: admitting(this.state, ramp.setpoint),
      connectionLimit: ramp.connectionCeiling,
    };
  }

  get history(): readonly RampHistoryEntry[] {
    return this.state.history;
  }

  /** The whole state, for the next run, with the history entries it has still to log. */
  save(): TenderState {
    return { ...this.state, unsaved: this.unsaved };
  }

  add(plan: TaskPlan, status: TaskStatus): void {
    const task: TendedTask = {
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
    };
    this.state.tasks.push(task);
    this.tasks.set(plan.name, task);
  }

  /** First limits of a starting task; may cut running ones (returned) to fit the budget. */
  start(name: string, now: number): string[] {
    const running = this.running()
      .filter((t) => t.plan.name !== name)
      .map((t) => ({ name: t.plan.name, sandboxed: t.plan.sandboxed, setpoint: t.ramp.setpoint }));
    const task = this.tasks.get(name)!;
    const plan = initialSetpoints({
      settings: this.state.settings,
      now,
      starting: [{ name, sandboxed: task.plan.sandboxed }],
      running,
    });
    const { setpoint, connectionCeiling, connectionClamp, pushbackWindows, wall } = plan.tasks[0];
    task.ramp = { setpoint, connectionCeiling, connectionClamp, pushbackWindows, wall };
    task.status.setpoint = task.ramp.setpoint;
    task.status.connection_limit = task.ramp.connectionCeiling;
    task.status.ramp_state = this.state.settings.samples.type === 'pinned' ? 'pinned' : 'steady';
    return this.apply(plan.changes);
  }

  /** Decides a tend from the window just ended; returns the tasks whose limits changed. */
  tend(now: number): string[] {
    for (const name of this.tasks.keys()) this.noteStuck(name, now);
    const running = this.running();
    const quiet = endWindow(this.state);
    const plan = decideTend({
      settings: this.state.settings,
      now,
      holds: holdsInForce(this.state),
      memory: this.tendHosts(),
      tasks: running.map((t) => ({
        ...t.ramp,
        name: t.plan.name,
        sandboxed: t.plan.sandboxed,
        status: 'running',
        remainingSamples: t.status.samples - t.status.completed - t.status.errored,
        window: quiet ? { ...QUIET_WINDOW } : this.window(t),
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
        ...task.seen,
        saturations: task.status.saturations,
        errored: task.status.errored,
        networkErrors: task.status.network_errors,
      };
      task.workers = emptyWindow();
    }
    return [...new Set([...this.apply(plan.changes), ...this.tendAccounts(now, quiet)])];
  }

  report(report: WorkerReport): void {
    if (report.account !== undefined) this.reportAccount(report.account, report);
    for (const name of report.tasks) {
      const w = this.tasks.get(name)?.workers;
      if (w) addReport(w, report);
    }
  }

  /** A host's memory, from its owner, once a window (SPEC §2, gate 6). */
  hostReport(report: HostReport, now: number): void {
    const hosts = (this.state.hosts ??= {});
    const known = Object.hasOwn(hosts, report.host) ? hosts[report.host] : undefined;
    const lowest = Math.min(known?.windowLowestBytes ?? Infinity, report.lowestHeadroomBytes);
    hosts[report.host] = { last: report, at: now, windowLowestBytes: lowest, silent: false };
  }

  /**
   * Ends the hosts' window: the host whose headroom fell lowest in it, over its RAM (null: none
   * reported). A host silent for two whole windows in a row has left and is dropped, as an
   * account's host is; silent for one, its last report stands.
   */
  private tendHosts(): HostMemoryWindow | null {
    let lowest: HostMemoryWindow | null = null;
    const hosts = this.state.hosts ?? {};
    for (const [name, host] of Object.entries(hosts)) {
      if (host.windowLowestBytes === null) {
        if (host.silent) delete hosts[name];
        else host.silent = true;
        continue;
      }
      const share = host.windowLowestBytes / host.last.totalBytes;
      if (lowest === null || share < lowest.lowestHeadroomShare) {
        lowest = { host: name, lowestHeadroomShare: share };
      }
      host.windowLowestBytes = null;
    }
    return lowest;
  }

  /** The hosts for `status`, by name. */
  hostStatus(): HostStatus[] {
    return Object.entries(this.state.hosts ?? {})
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([host, { last, at }]) => ({
        host,
        total_bytes: last.totalBytes,
        headroom_bytes: last.headroomBytes,
        lowest_headroom_share: last.lowestHeadroomBytes / last.totalBytes,
        fleet_resident_bytes: last.fleetResidentBytes,
        processes: last.processes,
        reported_at: new Date(at).toISOString(),
      }));
  }

  /**
   * Why a steering command cannot apply to this eval set, or undefined when it can. The payload
   * has been parsed already (src/workflows/schemas.ts); this checks it against the run.
   */
  refusal(command: Steering): string | undefined {
    const task = 'task' in command.args ? command.args.task : undefined;
    if (task !== undefined && !this.tasks.has(task)) {
      const known = [...this.tasks.keys()];
      return known.length === 0
        ? `no task "${task}": the eval set has not planned its tasks yet`
        : `no task "${task}"; the tasks are ${known.join(', ')}`;
    }
    const samples = this.state.settings.samples;
    if (command.kind === 'range' && samples.type === 'pinned') {
      return `max_samples pins samples at ${samples.value}: a samples_ramp range has no effect`;
    }
    return undefined;
  }

  /** Applies a steering command that {@link refusal} allows; returns what the history records. */
  steer(command: Steering, now: number): string {
    const refused = this.refusal(command);
    if (refused !== undefined) throw new Error(refused);
    const { by } = command.args;
    if (command.kind === 'pause' || command.kind === 'unpause') {
      const outcome =
        command.kind === 'pause'
          ? pause(this.state, command.args, now)
          : unpause(this.state, command.args, now);
      // Pausing a paused eval set (or resuming a running one) is answered, and leaves no entry.
      if (outcome.changed) {
        const { kind } = command;
        this.log({ time: now, task: '*', kind, from: null, to: null, reason: outcome.message, by });
      }
      return outcome.message;
    }
    const task = command.kind === 'range' ? '*' : (command.args.task ?? '*');
    let reason: string;
    switch (command.kind) {
      case 'hold': {
        const { reason: why } = command.args;
        const hold = { reason: why, since: now, by };
        if (task === '*') this.holds.global = hold;
        else this.holds.tasks[task] = hold;
        reason = why;
        break;
      }
      case 'resume':
        if (task === '*') {
          this.holds.global = null;
          for (const name of Object.keys(this.holds.tasks)) delete this.holds.tasks[name];
        } else delete this.holds.tasks[task];
        reason = 'resumed';
        break;
      case 'range': {
        const { range } = command.args;
        this.state.settings = { ...this.state.settings, samples: samplesSettingForRange(range) };
        reason = `samples_ramp set to ${range === false ? 'off' : `[${range[0]}, ${range[1]}]`}`;
        break;
      }
    }
    this.log({ time: now, task, kind: command.kind, from: null, to: null, reason, by });
    return reason;
  }

  /** Records a steering signal that was refused, so the operator can see it and why. */
  refuse(message: string, now: number, by?: string): void {
    this.log({ time: now, task: '*', kind: 'refused', from: null, to: null, reason: message, by });
  }

  /**
   * Each account's ceiling from its window (SPEC §2: the wall, the reversal clamp and the ceiling
   * belong to the account); its running tasks show it and their workers' owners apply it.
   * Returns the tasks whose ceiling moved.
   */
  private tendAccounts(now: number, quiet: boolean): string[] {
    const touched: string[] = [];
    for (const account of this.accounts.values()) {
      const tasks = account.tasks.filter(
        (name) => this.tasks.get(name)?.status.state === 'running',
      );
      if (tasks.length === 0) continue;
      // A window a pause touched raises nothing, and says nothing of pushback.
      const held =
        quiet ||
        this.holds.global !== null ||
        tasks.some((name) => Object.hasOwn(this.holds.tasks, name));
      const w = account.window;
      const read = quiet ? emptyWindow() : w;
      const decided = decideAccount(this.state.settings, now, {
        ...account.state,
        account: account.name,
        tasks,
        held,
        window: {
          rateLimitEpisodes: read.rateLimitEpisodes,
          controllerCuts: read.cuts,
          controllerLimit: read.lowestLimit,
          pushbackLevel: read.pushbackLevel,
        },
      });
      account.state = decided.state;
      account.tended = true;
      account.lastRateLimitEpisodes = w.rateLimitEpisodes;
      account.lastLimit = w.lowestLimit;
      // A host silent for two whole windows in a row has left: its share goes back to the
      // others. Silent for one, it keeps its share on what it last said.
      const silent: string[] = [];
      for (const host of Object.keys(account.hosts)) {
        if (account.reportedBy.includes(host)) continue;
        if (account.silent?.includes(host)) delete account.hosts[host];
        else silent.push(host);
      }
      account.silent = silent;
      account.shares = this.split(account, Object.keys(account.hosts));
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
      this.state.accounts!.push(account);
    }
    for (const task of report.tasks) {
      if (this.tasks.has(task) && !account.tasks.includes(task)) account.tasks.push(task);
    }
    if (this.state.accountCeilingsSum && !account.tended) {
      // Until the tend decides it, what the tend would: room for every task on it at its ceiling,
      // not one task's worth for all of them.
      const sum = account.tasks.reduce(
        (n, t) => n + (this.tasks.get(t)?.ramp.connectionCeiling ?? 0),
        0,
      );
      if (sum > 0) account.state.ceiling = sum;
    }
    addReport(account.window, report);
    const host = report.host ?? String(report.pid);
    if (report.leaving) {
      // Its share goes to the hosts that stay now, not a window later; what it still has in
      // flight while its workers stop is handed over like any shrinking share.
      account.reportedBy = account.reportedBy.filter((h) => h !== host);
      if (account.shares !== undefined && Object.hasOwn(account.shares, host)) {
        account.hosts[host] = { inFlight: report.inFlight, demand: 0 };
        // Its workers stop, so it starts no call beyond those: it holds what it has in flight.
        const { [host]: _leaving, ...staying } = account.shares;
        account.shares = this.split(account, Object.keys(account.shares), staying);
        delete account.shares[host];
      }
      delete account.hosts[host];
      return;
    }
    const joined = !Object.hasOwn(account.hosts, host);
    account.hosts[host] = {
      inFlight: report.inFlight,
      pacing: report.pacing,
      demand: report.demand,
    };
    if (!account.reportedBy.includes(host)) account.reportedBy.push(host);
    // A host that joins a split account is split in at once: the others are told their smaller
    // shares now, so it grows into its own at the next tend, once they have read them (until
    // then it has one slot, src/core/shares.ts), not a window later still.
    if (joined && account.shares !== undefined && Object.keys(account.shares).length > 0) {
      account.shares = this.split(account, [...Object.keys(account.shares), host]);
    }
  }

  /**
   * The account's ceiling split among `hosts` by what each last said it wanted, handed over
   * from the last split without granting a slot twice (src/core/shares.ts).
   */
  private split(
    account: TendedAccount,
    hosts: string[],
    previous = account.shares,
  ): Record<string, number> {
    const known = [...new Set(hosts)].filter((h) => Object.hasOwn(account.hosts, h));
    return splitAccount(
      account.state.ceiling,
      known.map((h) => ({
        host: h,
        demand: account.hosts[h].demand ?? 0,
        inFlight: account.hosts[h].inFlight ?? 0,
      })),
      previous,
    );
  }

  /** Each account's ceiling and split, for the hosts' owners (the `workerControl` query). */
  accountControl(): Record<string, { ceiling: number; shares: Record<string, number> }> {
    return Object.fromEntries(
      [...this.accounts.values()].map((a) => [
        a.name,
        { ceiling: a.state.ceiling, shares: { ...(a.shares ?? {}) } },
      ]),
    );
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
        hosts: Object.entries(a.hosts).map(([host, h]) => ({
          host,
          share: a.shares?.[host] ?? null,
          demand: h.demand ?? null,
          in_flight: h.inFlight ?? null,
        })),
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

  /** Writes the task's stuck attempts counted since the last note to the history, if any. */
  noteStuck(name: string, now: number): void {
    const task = this.tasks.get(name)!;
    const seen = task.seen.stuck ?? 0;
    const stuck = task.status.stuck ?? 0;
    if (stuck <= seen) return;
    task.seen.stuck = stuck;
    const n = stuck - seen;
    this.log({
      time: now,
      task: task.plan.name,
      kind: 'stuck',
      from: seen,
      to: stuck,
      reason:
        `${n} ${n === 1 ? 'attempt' : 'attempts'} of its samples made no progress for stuck_after: ` +
        "a sample's first stuck attempt runs again on a fresh sandbox, its second fails (StewardSampleStuck)",
    });
  }

  private log(entry: Omit<RampHistoryEntry, 'time'> & { time: number }): void {
    const full = { ...entry, time: new Date(entry.time).toISOString() };
    this.state.history.push(full);
    if (this.state.history.length > HISTORY_KEPT) this.state.history.shift();
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

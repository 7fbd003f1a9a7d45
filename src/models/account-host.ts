/**
 * The owner of a host's provider accounts (SPEC §1: one controller per provider account per
 * host). Every model call of every worker process on the host takes its slot from the one
 * controller of its account, here (the supervisor's process; workers lease slots over a local
 * socket, see src/workers/lease-server.ts). What an account saw is reported to each eval set
 * whose tasks use it, once per account, and the ramp's ceilings come back here.
 *
 * No I/O and an injected clock: the socket and the eval sets are the callers' business.
 */
import { setTimeout as sleepFor } from 'node:timers/promises';
import { AdaptiveConnections, FixedConnections, type CallSlots } from '../core/controller';
import { ONE_REQUEST, Pacer, type PacingState, type RateLimitReading } from '../core/pacing';
import type { ConnectionLimiter, ConnectionsWindow } from '../core/controller';
import type { ConnectionsSetting } from '../config/settings';
import { newcomerShare } from '../core/shares';
import type { WorkerControl, WorkerReport } from '../workflows/types';

/** A provider account, as a worker names it: never the key itself. */
export interface AccountRef {
  /** provider, base URL, hash of the API key, model: what tells accounts apart. */
  key: string;
  /** For people: `<model name> at <base URL>`. */
  label: string;
  /** The first 8 hex digits of the key's SHA-256 (empty: no key). */
  keyHash: string;
  /**
   * The connections setting of the eval set whose call first used the account: the controller
   * is built from it once, and later users share that controller.
   */
  connections: ConnectionsSetting;
}

/** Whose calls these are: the eval set and the tasks a worker process serves. */
export interface AccountUser {
  evalSetId: string;
  tasks: string[];
}

/** Where a process's model calls get their slots (the host itself, or a lease client of it). */
export interface SlotSource {
  slots(account: AccountRef, user: AccountUser | null): CallSlots;
  /** A call of the account is about to be retried (counted for the ramp's surge gate). */
  retried(key: string): void;
  /**
   * What an answer's rate-limit headers said of the account's limits (for pacing), and how long
   * ago the answered call was sent: calls sent since then are not in the reading.
   */
  observe(key: string, reading: RateLimitReading, sentMsAgo?: number): void;
}

/** One account's state as `steward status` shows it. */
export interface AccountSnapshot {
  label: string;
  keyHash: string;
  /** The controller's current limit. */
  limit: number;
  /** The highest the limit may go now (the ramp's ceiling, or a fixed `max_connections`). */
  ceiling: number;
  inFlight: number;
  waiting: number;
  rateLimitEpisodes: number;
  cuts: number;
  coolingDown: boolean;
  /** Pacing from the provider's rate-limit headers. */
  pacing: PacingState;
  /** Eval set id -> tasks using the account. */
  users: Record<string, string[]>;
}

/** A window being collected for one eval set: several drains of the controller folded together. */
interface PendingWindow {
  lowestLimit: number | null;
  /** The most calls in flight or waiting at once. */
  peakWanting: number;
  rateLimitSignals: number;
  cuts: number;
  retries: number;
  queuedMs: number;
  elapsedMs: number;
  pushbackLevel: number | null;
}

interface HostedAccount {
  ref: AccountRef;
  limiter: ConnectionLimiter;
  pacer: Pacer;
  /** The limiter behind the pacer: what callers get. */
  slots: CallSlots;
  /** Eval set id -> tasks whose calls went through the account. */
  users: Map<string, Set<string>>;
  /** Retries since the controller was last drained. */
  retries: number;
  lastDrainAt: number;
  /** Eval set id -> what it has not been told yet. */
  pending: Map<string, PendingWindow>;
  /** Eval set id -> how many of its tasks the last report to it named. */
  told: Map<string, number>;
  /** Calls in flight or waiting for a slot (pacing included), now. */
  wanting: number;
}

export interface AccountHostOptions {
  now: () => number;
  /**
   * The process that owns the accounts, and its machine. Reports name it, and the tend's split
   * of each account knows it as `<host>:<pid>`, unique across the fleet's machines.
   */
  owner: { pid: number; host: string };
  /** Waits out a pacing delay; rejects when `signal` aborts. @default a timer */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export class AccountHost implements SlotSource {
  private readonly accounts = new Map<string, HostedAccount>();
  /** Eval set id -> what its tend last set: ceilings by task, and each account's split. */
  private readonly controls = new Map<string, Pick<WorkerControl, 'ceilings' | 'accounts'>>();
  private readonly hostName: string;

  constructor(private readonly options: AccountHostOptions) {
    this.hostName = `${options.owner.host}:${options.owner.pid}`;
  }

  slots(ref: AccountRef, user: AccountUser | null): CallSlots {
    let account = this.accounts.get(ref.key);
    if (!account) {
      const sleep = this.options.sleep ?? ((ms, signal) => sleepFor(ms, undefined, { signal }));
      const state: Omit<HostedAccount, 'slots'> = {
        ref,
        limiter: newLimiter(ref.connections, this.options.now),
        pacer: new Pacer({ now: this.options.now }),
        users: new Map(),
        retries: 0,
        lastDrainAt: this.options.now(),
        pending: new Map(),
        told: new Map(),
        wanting: 0,
      };
      account = Object.assign(state, { slots: pacedSlots(state, sleep) });
      this.accounts.set(ref.key, account);
    }
    if (user) this.use(account, user);
    return account.slots;
  }

  retried(key: string): void {
    const account = this.accounts.get(key);
    if (account) account.retries += 1;
  }

  observe(key: string, reading: RateLimitReading, sentMsAgo = 0): void {
    this.accounts.get(key)?.pacer.observe(reading, this.options.now() - sentMsAgo);
  }

  /** Whether any call of the eval set's tasks has gone through an account here. */
  uses(evalSetId: string): boolean {
    for (const account of this.accounts.values()) if (account.users.has(evalSetId)) return true;
    return false;
  }

  /**
   * What an eval set's tend set (its `workerControl` answer): each account's ceiling split among
   * the hosts that call it, of which this host's controller takes its share; from an eval set
   * that splits nothing (older workflow code), its tasks' ceilings, the lowest of them.
   */
  applyControl(evalSetId: string, control: Pick<WorkerControl, 'ceilings' | 'accounts'>): void {
    this.controls.set(evalSetId, control);
    for (const account of this.accounts.values()) {
      if (account.users.has(evalSetId)) this.applyCeiling(account);
    }
  }

  /**
   * Whether the eval set has news it should hear before its next tend: a task of it that began
   * calling through an account here since its last report. Until its first tend an account's
   * ceiling is the sum of the ceilings of the tasks reported on it (src/workflows/tend.ts), so a
   * task that joins is room the eval set should know of now, not a window later.
   */
  hasNews(evalSetId: string): boolean {
    for (const account of this.accounts.values()) {
      const tasks = account.users.get(evalSetId);
      if (tasks && tasks.size > (account.told.get(evalSetId) ?? 0)) return true;
    }
    return false;
  }

  /**
   * What each account the eval set uses saw since the eval set was last told: one report per
   * account, naming the eval set's tasks on it. Another eval set on the same account is told the
   * same window in its own report, never a part of it.
   */
  drain(evalSetId: string): WorkerReport[] {
    const reports: WorkerReport[] = [];
    const now = this.options.now();
    for (const account of this.accounts.values()) {
      const tasks = account.users.get(evalSetId);
      if (!tasks) continue;
      collect(account, now);
      const live = account.limiter.snapshot();
      const pacing = account.pacer.state();
      const window = account.pending.get(evalSetId) ?? emptyPending();
      account.pending.set(evalSetId, emptyPending(account.wanting));
      if (window.lowestLimit === null) continue;
      account.told.set(evalSetId, tasks.size);
      reports.push({
        account: accountName(account.ref),
        tasks: [...tasks],
        pid: this.options.owner.pid,
        host: this.hostName,
        demand: window.peakWanting,
        limit: window.lowestLimit,
        // Every 429 of the window counts (SPEC §2): the controller folds a burst into one cut,
        // but a window with any rate-limit error is a pushback window.
        rateLimitEpisodes: window.rateLimitSignals,
        cuts: window.cuts,
        retries: window.retries,
        queuedShare: window.elapsedMs > 0 ? Math.min(1, window.queuedMs / window.elapsedMs) : 0,
        pushbackLevel: window.pushbackLevel,
        inFlight: live.inFlight,
        pacing: { pacing: pacing.pacing, binding: pacing.binding, spacingMs: pacing.spacingMs },
      });
    }
    return reports;
  }

  /** The eval set is gone: its tasks no longer hold ceilings or receive windows here. */
  forget(evalSetId: string): void {
    this.controls.delete(evalSetId);
    for (const account of this.accounts.values()) {
      account.users.delete(evalSetId);
      account.pending.delete(evalSetId);
      account.told.delete(evalSetId);
      this.applyCeiling(account);
    }
  }

  snapshot(): AccountSnapshot[] {
    return [...this.accounts.values()].map((account) => {
      const s = account.limiter.snapshot();
      return {
        label: account.ref.label,
        keyHash: account.ref.keyHash,
        limit: s.limit,
        ceiling: s.ceiling,
        inFlight: s.inFlight,
        waiting: s.waiting,
        rateLimitEpisodes: s.rateLimitEpisodes,
        cuts: s.cuts,
        coolingDown: s.coolingDown,
        pacing: account.pacer.state(),
        users: Object.fromEntries([...account.users].map(([id, tasks]) => [id, [...tasks]])),
      };
    });
  }

  private use(account: HostedAccount, user: AccountUser): void {
    let tasks = account.users.get(user.evalSetId);
    if (!tasks) {
      tasks = new Set();
      account.users.set(user.evalSetId, tasks);
      // The window of a new user starts now: what came before was other eval sets' business.
      collect(account, this.options.now());
      account.pending.set(user.evalSetId, emptyPending(account.wanting));
    }
    const before = tasks.size;
    for (const task of user.tasks) tasks.add(task);
    if (tasks.size !== before) this.applyCeiling(account);
  }

  /** Each eval set using the account allows this host some of it; the controller takes the least. */
  private applyCeiling(account: HostedAccount): void {
    const set: number[] = [];
    const name = accountName(account.ref);
    for (const [evalSetId, tasks] of account.users) {
      const control = this.controls.get(evalSetId);
      const split = control?.accounts?.[name];
      if (split) {
        set.push(split.shares[this.hostName] ?? newcomerShare(split.ceiling, split.shares));
        continue;
      }
      const ceilings = control?.ceilings ?? {};
      for (const task of tasks) {
        const ceiling = Object.hasOwn(ceilings, task) ? ceilings[task] : null;
        if (typeof ceiling === 'number') set.push(ceiling);
      }
    }
    if (set.length > 0) account.limiter.setCeiling(Math.min(...set));
  }
}

/** How reports and status name an account: never the key, at most a prefix of its hash. */
export function accountName(ref: Pick<AccountRef, 'label' | 'keyHash'>): string {
  return ref.keyHash ? `${ref.label} key ${ref.keyHash}` : ref.label;
}

function newLimiter(connections: ConnectionsSetting, now: () => number): ConnectionLimiter {
  return connections.type === 'fixed'
    ? new FixedConnections(connections.n, { now })
    : new AdaptiveConnections({
        now,
        min: connections.min,
        start: connections.start,
        max: connections.max,
      });
}

/**
 * The account's slots as callers get them: paced before a slot is taken (a call waiting out the
 * provider's limit holds no connection the controller would count as in flight), and counted as
 * demand from the moment a call wants a slot until it gives it back.
 */
function pacedSlots(
  account: Omit<HostedAccount, 'slots'>,
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>,
): CallSlots {
  return {
    async acquire(signal, cost) {
      account.wanting += 1;
      for (const pending of account.pending.values()) {
        pending.peakWanting = Math.max(pending.peakWanting, account.wanting);
      }
      try {
        const wait = account.pacer.reserve(cost ?? ONE_REQUEST);
        if (wait > 0) await sleep(wait, signal);
        const release = await account.limiter.acquire(signal);
        let released = false;
        return (outcome) => {
          if (!released) account.wanting -= 1;
          released = true;
          release(outcome);
        };
      } catch (err) {
        account.wanting -= 1;
        throw err;
      }
    },
  };
}

/** Drains the controller's window into every user's pending window. */
function collect(account: HostedAccount, now: number): void {
  const window: ConnectionsWindow = account.limiter.drainWindow();
  const elapsedMs = Math.max(0, now - account.lastDrainAt);
  const retries = account.retries;
  account.retries = 0;
  account.lastDrainAt = now;
  for (const pending of account.pending.values()) fold(pending, window, elapsedMs, retries);
}

function fold(into: PendingWindow, w: ConnectionsWindow, elapsedMs: number, retries: number) {
  into.lowestLimit =
    into.lowestLimit === null ? w.lowestLimit : Math.min(into.lowestLimit, w.lowestLimit);
  into.rateLimitSignals += w.rateLimitSignals;
  into.cuts += w.cuts;
  into.retries += retries;
  into.queuedMs += w.queuedShare * elapsedMs;
  into.elapsedMs += elapsedMs;
  if (w.pushbackLevel !== null) {
    into.pushbackLevel = Math.max(into.pushbackLevel ?? 0, w.pushbackLevel);
  }
}

function emptyPending(wanting = 0): PendingWindow {
  return {
    lowestLimit: null,
    peakWanting: wanting,
    rateLimitSignals: 0,
    cuts: 0,
    retries: 0,
    queuedMs: 0,
    elapsedMs: 0,
    pushbackLevel: null,
  };
}

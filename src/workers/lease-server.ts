/**
 * The supervisor's side of call-slot leases: serves a host's {@link AccountHost} to the worker
 * processes over a local Unix socket. A lease lives as long as its connection: a worker that dies
 * (its socket closes) or hangs (it stops renewing, see LEASE_TTL_MS) gives back every slot it
 * held, as neutral outcomes, so nothing leaks and the controller learns nothing false.
 */
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { CallSlots, Release } from '../core/controller';
import type { CallCost } from '../core/pacing';
import type { AccountHost, AccountRef, AccountUser } from '../models/account-host';
import {
  LEASE_TTL_MS,
  lineReader,
  parseCost,
  parseOutcome,
  parseReading,
  type ClientMessage,
  type HostStats,
  type LeaseHolder,
  type ServerMessage,
} from './lease-protocol';

export interface LeaseServer {
  /** Where workers connect. */
  readonly socketPath: string;
  /** Leases held and acquires waiting, over every connection (for tests and status). */
  leases(): { held: number; waiting: number; connections: number };
  close(): Promise<void>;
}

export interface LeaseServerOptions {
  /** @default LEASE_TTL_MS */
  ttlMs?: number;
  now?: () => number;
}

/** Unix socket paths are limited to about 100 bytes; a deep STEWARD_HOME falls back to tmp. */
const MAX_SOCKET_PATH = 100;

/** A socket path for this process under `dir`, or under the system's tmp if that is too long. */
export function leaseSocketPath(dir: string): string {
  const name = `accounts-${process.pid}.sock`;
  const preferred = path.join(dir, name);
  return Buffer.byteLength(preferred) <= MAX_SOCKET_PATH
    ? preferred
    : path.join(os.tmpdir(), `steward-${name}`);
}

export async function serveLeases(
  host: AccountHost,
  socketPath: string,
  options: LeaseServerOptions = {},
): Promise<LeaseServer> {
  const ttlMs = options.ttlMs ?? LEASE_TTL_MS;
  const now = options.now ?? Date.now;
  const connections = new Set<Connection>();
  const stats = (): HostStats => ({
    pid: process.pid,
    accounts: host.snapshot(),
    // A worker says hello first; a connection that did not (a status reader) holds nothing.
    holders: [...connections].flatMap((c) => c.holder() ?? []),
  });
  const server: Server = createServer((socket) => {
    const connection = new Connection(host, socket, now, stats);
    connections.add(connection);
    socket.on('close', () => {
      connections.delete(connection);
      connection.closed();
    });
  });
  mkdirSync(path.dirname(socketPath), { recursive: true });
  // A socket file left by a process that died is in the way; ours carries our pid, so it is
  // never a live server's.
  rmSync(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Only this user's processes may take slots.
  chmodSync(socketPath, 0o600);
  const sweep = setInterval(
    () => {
      for (const connection of connections) connection.expireIfSilent(ttlMs);
    },
    Math.min(1_000, ttlMs / 4),
  );
  sweep.unref();
  return {
    socketPath,
    leases() {
      let held = 0;
      let waiting = 0;
      for (const c of connections) {
        held += c.held.size;
        waiting += c.waiting.size;
      }
      return { held, waiting, connections: connections.size };
    },
    async close() {
      clearInterval(sweep);
      for (const c of connections) c.socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(socketPath, { force: true });
    },
  };
}

class Connection {
  readonly held = new Map<number, Release>();
  readonly waiting = new Map<number, AbortController>();
  private readonly accounts = new Map<number, { slots: CallSlots; key: string }>();
  /** Whose calls this connection made: from its hello, and from each account it named. */
  private readonly users = new Map<string, Set<string>>();
  /** The user a process named in its hello, for accounts it names without one. */
  private hello: AccountUser | null = null;
  private pid: number | null = null;
  private lastSeen: number;
  private open = true;

  constructor(
    private readonly host: AccountHost,
    readonly socket: Socket,
    private readonly now: () => number,
    private readonly stats: () => HostStats,
  ) {
    this.lastSeen = now();
    socket.setNoDelay(true);
    socket.on(
      'data',
      lineReader((message) => this.receive(message as ClientMessage)),
    );
    // A reset from a dying worker is its close; there is nothing to report.
    socket.on('error', () => undefined);
  }

  /** Every slot the connection held goes back, and its queued acquires leave the queue. */
  closed(): void {
    this.open = false;
    for (const release of this.held.values()) release({ kind: 'error' });
    this.held.clear();
    for (const abort of this.waiting.values()) abort.abort(new Error('lease connection closed'));
    this.waiting.clear();
  }

  holder(): LeaseHolder | null {
    if (this.pid === null && this.users.size === 0) return null;
    const [evalSetId] = this.users.keys();
    return {
      pid: this.pid,
      evalSetId: evalSetId ?? null,
      tasks: [...this.users.values()].flatMap((tasks) => [...tasks]),
      held: this.held.size,
      waiting: this.waiting.size,
    };
  }

  expireIfSilent(ttlMs: number): void {
    const holding = this.held.size + this.waiting.size > 0;
    if (holding && this.now() - this.lastSeen > ttlMs) this.socket.destroy();
  }

  private note(user: AccountUser | null): void {
    if (!user) return;
    const tasks = this.users.get(user.evalSetId) ?? new Set<string>();
    for (const task of user.tasks) tasks.add(task);
    this.users.set(user.evalSetId, tasks);
  }

  private receive(message: ClientMessage): void {
    if (!this.open || typeof message !== 'object' || message === null) return;
    this.lastSeen = this.now();
    switch (message.t) {
      case 'hello':
        this.hello = validUser(message.user);
        this.note(this.hello);
        this.pid = Number.isInteger(message.pid) ? message.pid : null;
        return;
      case 'account':
        if (Number.isInteger(message.n) && validAccount(message.account)) {
          const user = validUser(message.user) ?? this.hello;
          this.note(user);
          const slots = this.host.slots(message.account, user);
          this.accounts.set(message.n, { slots, key: message.account.key });
        }
        return;
      case 'acquire':
        return this.acquire(message.id, message.n, parseCost(message.cost));
      case 'limits': {
        const account = this.accounts.get(message.n);
        const ago = Number(message.sentMsAgo);
        if (account) {
          this.host.observe(
            account.key,
            parseReading(message.reading),
            Number.isFinite(ago) && ago >= 0 ? ago : 0,
          );
        }
        return;
      }
      case 'cancel':
        this.waiting.get(message.id)?.abort(new Error('cancelled'));
        return;
      case 'release': {
        const release = this.held.get(message.id);
        const outcome = parseOutcome(message.outcome);
        if (!release || !outcome) return;
        this.held.delete(message.id);
        release(outcome);
        return;
      }
      case 'retried': {
        const account = this.accounts.get(message.n);
        if (account) this.host.retried(account.key);
        return;
      }
      case 'renew':
        return;
      case 'stats':
        if (Number.isInteger(message.id))
          this.send({ t: 'stats', id: message.id, stats: this.stats() });
        return;
    }
  }

  private acquire(id: number, n: number, cost: CallCost | undefined): void {
    const account = this.accounts.get(n);
    if (!Number.isInteger(id) || this.held.has(id) || this.waiting.has(id)) return;
    if (!account) {
      this.send({ t: 'refuse', id, error: `unknown account ${n}` });
      return;
    }
    const abort = new AbortController();
    this.waiting.set(id, abort);
    account.slots.acquire(abort.signal, cost).then(
      (release) => {
        this.waiting.delete(id);
        if (!this.open) {
          release({ kind: 'error' });
          return;
        }
        this.held.set(id, release);
        this.send({ t: 'grant', id });
      },
      () => {
        // Cancelled, or the connection closed: the acquire left the queue holding nothing.
        this.waiting.delete(id);
      },
    );
  }

  private send(message: ServerMessage): void {
    this.socket.write(`${JSON.stringify(message)}\n`);
  }
}

function validUser(value: unknown): AccountUser | null {
  const u = value as Partial<AccountUser> | null;
  if (typeof u !== 'object' || u === null || typeof u.evalSetId !== 'string') return null;
  if (!Array.isArray(u.tasks) || !u.tasks.every((t) => typeof t === 'string')) return null;
  return { evalSetId: u.evalSetId, tasks: u.tasks };
}

function validAccount(value: unknown): value is AccountRef {
  const a = value as Partial<AccountRef> | null;
  if (typeof a !== 'object' || a === null) return false;
  if (typeof a.key !== 'string' || typeof a.label !== 'string') return false;
  if (typeof a.keyHash !== 'string') return false;
  const c = a.connections as Record<string, unknown> | undefined;
  if (!c) return false;
  if (c.type === 'fixed') return Number.isInteger(c.n) && (c.n as number) >= 1;
  return (
    c.type === 'adaptive' &&
    [c.min, c.start, c.max].every((v) => Number.isInteger(v)) &&
    1 <= (c.min as number) &&
    (c.min as number) <= (c.start as number) &&
    (c.start as number) <= (c.max as number)
  );
}

/**
 * A worker process's side of call-slot leases: each model call's slot comes from the host's one
 * controller of its account, in the supervisor, over a local Unix socket (see lease-server.ts).
 * To `retryModelCall` it is an ordinary {@link CallSlots}.
 */
import { connect, type Socket } from 'node:net';
import {
  SlotsUnavailable,
  type CallOutcome,
  type CallSlots,
  type Release,
} from '../core/controller';
import type { CallCost, RateLimitReading } from '../core/pacing';
import type { AccountRef, AccountUser, SlotSource } from '../models/account-host';
import {
  LEASE_RENEW_MS,
  lineReader,
  type ClientMessage,
  type HostStats,
  type ServerMessage,
} from './lease-protocol';

interface Waiting {
  resolve: (release: Release) => void;
  reject: (reason: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

/** One connection to the lease server, and what was said on it. */
interface Link {
  socket: Socket;
  ready: Promise<void>;
  /** Account numbers named on this connection, by key. */
  named: Map<string, number>;
  /** The users named for each account number (see ClientMessage 'account'). */
  users: Set<string>;
  waiting: Map<number, Waiting>;
  held: Set<number>;
  open: boolean;
}

export class LeaseClient implements SlotSource {
  private link: Link | null = null;
  private nextId = 0;
  private nextAccount = 0;
  private readonly renew: NodeJS.Timeout;

  constructor(private readonly socketPath: string) {
    this.renew = setInterval(() => {
      const link = this.link;
      if (link?.open && link.held.size + link.waiting.size > 0) this.send(link, { t: 'renew' });
    }, LEASE_RENEW_MS);
    this.renew.unref();
  }

  slots(account: AccountRef, user: AccountUser | null): CallSlots {
    return { acquire: (signal, cost) => this.acquire(account, user, signal, cost) };
  }

  observe(key: string, reading: RateLimitReading, sentMsAgo = 0): void {
    const link = this.link;
    const n = link?.named.get(key);
    if (link?.open && n !== undefined && Object.keys(reading).length > 0) {
      this.send(link, { t: 'limits', n, reading, sentMsAgo });
    }
  }

  retried(key: string): void {
    const link = this.link;
    const n = link?.named.get(key);
    if (link?.open && n !== undefined) this.send(link, { t: 'retried', n });
  }

  close(): void {
    clearInterval(this.renew);
    this.link?.socket.destroy();
    this.link = null;
  }

  private async acquire(
    account: AccountRef,
    user: AccountUser | null,
    signal?: AbortSignal,
    cost?: CallCost,
  ): Promise<Release> {
    if (signal?.aborted) throw signal.reason;
    const link = this.connection();
    await link.ready.catch((err: unknown) => {
      throw new SlotsUnavailable(
        `the account host ${this.socketPath} does not answer: ${(err as Error).message}`,
      );
    });
    if (signal?.aborted) throw signal.reason;
    let n = link.named.get(account.key);
    if (n === undefined) {
      n = this.nextAccount++;
      link.named.set(account.key, n);
    }
    // Named once for each of its users: the host counts the account's tasks from these.
    const named = `${n}\u0000${user ? `${user.evalSetId}\u0000${user.tasks.join('\u0000')}` : ''}`;
    if (!link.users.has(named)) {
      link.users.add(named);
      this.send(link, { t: 'account', n, account, user });
    }
    const id = this.nextId++;
    return new Promise<Release>((resolve, reject) => {
      const waiting: Waiting = { resolve, reject, signal };
      if (signal) {
        waiting.onAbort = () => {
          link.waiting.delete(id);
          if (link.open) this.send(link, { t: 'cancel', id });
          reject(signal.reason);
        };
        signal.addEventListener('abort', waiting.onAbort, { once: true });
      }
      link.waiting.set(id, waiting);
      this.send(link, cost ? { t: 'acquire', id, n, cost } : { t: 'acquire', id, n });
    });
  }

  /** The open connection, or a new one (after the first, or after the server went away). */
  private connection(): Link {
    if (this.link?.open) return this.link;
    const socket = connect(this.socketPath);
    socket.setNoDelay(true);
    const link: Link = {
      socket,
      ready: new Promise((resolve, reject) => {
        socket.once('connect', () => resolve());
        socket.once('error', reject);
      }),
      named: new Map(),
      users: new Set(),
      waiting: new Map(),
      held: new Set(),
      open: true,
    };
    // A failed connect rejects `ready` for its waiters; it must not also crash the process.
    link.ready.catch(() => undefined);
    socket.on('error', () => undefined);
    socket.on(
      'data',
      lineReader((message) => this.receive(link, message as ServerMessage)),
    );
    socket.on('close', () => {
      link.open = false;
      if (this.link === link) this.link = null;
      // Leases held die with the connection (the server gave them back); calls waiting for one
      // fail, and their retry policy decides.
      for (const waiting of link.waiting.values()) {
        this.unlisten(waiting);
        waiting.reject(
          new SlotsUnavailable(`connection to the account host ${this.socketPath} closed`),
        );
      }
      link.waiting.clear();
      link.held.clear();
    });
    this.send(link, { t: 'hello', pid: process.pid, user: null });
    this.link = link;
    return link;
  }

  private receive(link: Link, message: ServerMessage): void {
    if (message.t === 'stats') return;
    const waiting = link.waiting.get(message.id);
    if (message.t === 'grant') {
      if (!waiting) {
        // Granted as its call gave up: give it straight back.
        this.send(link, { t: 'release', id: message.id, outcome: { kind: 'error' } });
        return;
      }
      link.waiting.delete(message.id);
      link.held.add(message.id);
      this.unlisten(waiting);
      waiting.resolve(this.releaser(link, message.id));
    } else if (waiting) {
      link.waiting.delete(message.id);
      this.unlisten(waiting);
      waiting.reject(new Error(`the account host refused a slot: ${message.error}`));
    }
  }

  private releaser(link: Link, id: number): Release {
    let released = false;
    return (outcome: CallOutcome) => {
      if (released) return;
      released = true;
      if (!link.held.delete(id) || !link.open) return;
      this.send(link, { t: 'release', id, outcome });
    };
  }

  private unlisten(waiting: Waiting): void {
    if (waiting.signal && waiting.onAbort) {
      waiting.signal.removeEventListener('abort', waiting.onAbort);
    }
  }

  private send(link: Link, message: ClientMessage): void {
    link.socket.write(`${JSON.stringify(message)}\n`);
  }
}

/**
 * The live state of the accounts owner listening at `socketPath`, or null if nothing answers
 * within `timeoutMs` (no supervisor on this host, or a stale socket file).
 */
export async function readHostStats(
  socketPath: string,
  timeoutMs = 2_000,
): Promise<HostStats | null> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    const done = (stats: HostStats | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(stats);
    };
    const timer = setTimeout(() => done(null), timeoutMs);
    socket.on('error', () => done(null));
    socket.on(
      'data',
      lineReader((message) => {
        const m = message as ServerMessage;
        if (m.t === 'stats' && m.id === 0) done(m.stats);
      }),
    );
    socket.write(`${JSON.stringify({ t: 'stats', id: 0 } satisfies ClientMessage)}\n`);
  });
}

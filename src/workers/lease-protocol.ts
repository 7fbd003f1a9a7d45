/**
 * The wire of call-slot leases between worker processes and the host's account owner: one JSON
 * object per line over a local Unix socket. A call costs one round trip (`acquire` out, `grant`
 * back); its release goes one way.
 */
import type { CallOutcome } from '../core/controller';
import { BUCKETS, type CallCost, type RateLimitReading } from '../core/pacing';
import type { AccountRef, AccountSnapshot, AccountUser } from '../models/account-host';

export type ClientMessage =
  /** Who the process is; sent first on every connection. */
  | { t: 'hello'; pid: number; user: AccountUser | null }
  /** Names account `n` for the rest of the connection, so acquires stay small. */
  // Names account `n` on this connection; again for each further user of it (the eval set and
  // task a call is made for: a worker slot serves several tasks, which come and go).
  | { t: 'account'; n: number; account: AccountRef; user?: AccountUser | null }
  | { t: 'acquire'; id: number; n: number; cost?: CallCost }
  /** An answer's rate-limit headers, read (for the account's pacing). */
  | { t: 'limits'; n: number; reading: RateLimitReading; sentMsAgo?: number }
  /** A queued acquire no longer wanted (its call was aborted). */
  | { t: 'cancel'; id: number }
  | { t: 'release'; id: number; outcome: CallOutcome }
  | { t: 'retried'; n: number }
  /** The process is alive and still holds its leases (see LEASE_TTL_MS). */
  | { t: 'renew' }
  /** The host's accounts and who holds their slots (for `steward status` and tests). */
  | { t: 'stats'; id: number };

/** One worker process's connection, as the owner sees it. */
export interface LeaseHolder {
  pid: number | null;
  evalSetId: string | null;
  tasks: string[];
  held: number;
  waiting: number;
}

export interface HostStats {
  /** The owner's process id. */
  pid: number;
  accounts: AccountSnapshot[];
  holders: LeaseHolder[];
}

export type ServerMessage =
  | { t: 'grant'; id: number }
  | { t: 'refuse'; id: number; error: string }
  | { t: 'stats'; id: number; stats: HostStats };

/**
 * A connection that holds leases and says nothing for this long is taken for hung, and its
 * leases go back. (A dead process's socket closes at once; this is the backstop.)
 */
export const LEASE_TTL_MS = 10_000;
/** How often a worker holding leases renews them: well inside the TTL. */
export const LEASE_RENEW_MS = 2_000;

/** Splits a stream into lines and hands each parsed one on; a line that is not JSON is dropped. */
export function lineReader(onMessage: (message: unknown) => void): (chunk: Buffer) => void {
  let buffered = '';
  return (chunk) => {
    buffered += chunk.toString('utf8');
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line.length > 0) {
        let message: unknown;
        try {
          message = JSON.parse(line);
        } catch {
          message = undefined;
        }
        if (message !== undefined) onMessage(message);
      }
      newline = buffered.indexOf('\n');
    }
  };
}

/** A cost off the wire, or undefined if it is not one. */
export function parseCost(value: unknown): CallCost | undefined {
  const c = value as Partial<Record<keyof CallCost, unknown>> | null;
  if (typeof c !== 'object' || c === null) return undefined;
  const fields = [c.requests, c.tokens, c.inputTokens, c.outputTokens];
  if (!fields.every((v) => typeof v === 'number' && Number.isFinite(v) && v >= 0)) return undefined;
  return c as CallCost;
}

/** A reading off the wire, keeping only well-formed limits. */
export function parseReading(value: unknown): RateLimitReading {
  const reading: RateLimitReading = {};
  if (typeof value !== 'object' || value === null) return reading;
  for (const name of BUCKETS) {
    const b = (value as Record<string, Record<string, unknown> | undefined>)[name];
    if (
      b &&
      typeof b.limit === 'number' &&
      b.limit > 0 &&
      typeof b.remaining === 'number' &&
      b.remaining >= 0 &&
      typeof b.resetAt === 'number' &&
      Number.isFinite(b.resetAt)
    ) {
      reading[name] = { limit: b.limit, remaining: b.remaining, resetAt: b.resetAt };
    }
  }
  return reading;
}

/** An outcome off the wire, or null if it is not one. */
export function parseOutcome(value: unknown): CallOutcome | null {
  const o = value as Partial<Record<string, unknown>> | null;
  if (typeof o !== 'object' || o === null) return null;
  switch (o.kind) {
    case 'success':
      return { kind: 'success', retried: o.retried === true };
    case 'rateLimit':
      return typeof o.retryAfterMs === 'number' && o.retryAfterMs >= 0
        ? { kind: 'rateLimit', retryAfterMs: o.retryAfterMs }
        : { kind: 'rateLimit' };
    case 'transient':
      return { kind: 'transient' };
    case 'error':
      return { kind: 'error' };
    default:
      return null;
  }
}

/**
 * Docker address-pool arithmetic: how many more bridge networks a daemon can create.
 *
 * Every sandboxed sample gets its own network, and the daemon carves each one out of its
 * `default-address-pools`. This module answers "how many fit" from the pools and the subnets
 * already taken, without talking to Docker. IPv4 only: the pools that run out are IPv4 ones.
 */

import type { ConfigIssue } from '../errors';

/** One `default-address-pools` entry, in its canonical form (base masked to its prefix). */
export interface AddressPool {
  /** CIDR, e.g. `172.16.0.0/12`. */
  base: string;
  /** Prefix length of each network carved from `base`, e.g. `20`. */
  size: number;
}

/**
 * The pools a daemon uses when `daemon.json` sets none, in libnetwork's allocation order
 * (`ipamutils.localScopeDefaultNetworks`): 172.17–172.31 as /16s and 192.168.0.0/16 as /20s,
 * 31 networks, one of which the default bridge takes.
 */
export const BUILT_IN_POOLS: readonly AddressPool[] = [
  { base: '172.17.0.0/16', size: 16 },
  { base: '172.18.0.0/16', size: 16 },
  { base: '172.19.0.0/16', size: 16 },
  { base: '172.20.0.0/14', size: 16 },
  { base: '172.24.0.0/14', size: 16 },
  { base: '172.28.0.0/14', size: 16 },
  { base: '192.168.0.0/16', size: 20 },
];

/**
 * The pools Steward offers to write: the same ranges Docker already claims, carved finer
 * (256 /20s plus 256 /24s = 512 networks).
 */
export const RECOMMENDED_POOLS: readonly AddressPool[] = [
  { base: '172.16.0.0/12', size: 20 },
  { base: '192.168.0.0/16', size: 24 },
];

/** A half-open range of IPv4 addresses as 32-bit numbers: `[start, end)`. */
interface Range {
  start: number;
  end: number;
}

const IPV4_SPACE = 2 ** 32;

/**
 * Parses `default-address-pools` as written in `daemon.json` (`{base, size}`) or as `docker info`
 * reports it (`{Base, Size}`). Bases are canonicalised the way Docker reads them: `172.17.0.0/12`
 * is `172.16.0.0/12`. IPv6 pools are skipped (they do not limit IPv4 networks); anything else
 * malformed is an issue naming its index.
 */
export function parseAddressPools(value: unknown): { pools: AddressPool[]; issues: ConfigIssue[] } {
  const pools: AddressPool[] = [];
  const issues: ConfigIssue[] = [];
  if (!Array.isArray(value)) {
    return { pools, issues: [{ path: 'default-address-pools', message: 'must be a list', value }] };
  }
  value.forEach((entry: unknown, index) => {
    const path = `default-address-pools.${index}`;
    const record = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<
      string,
      unknown
    >;
    const base = record.base ?? record.Base;
    const size = record.size ?? record.Size;
    if (typeof base === 'string' && base.includes(':')) return;
    const range = typeof base === 'string' ? parseCidr(base) : undefined;
    if (!range) {
      issues.push({
        path: `${path}.base`,
        message: 'must be an IPv4 CIDR such as 172.16.0.0/12',
        value: base,
      });
      return;
    }
    if (typeof size !== 'number' || !Number.isInteger(size) || size < range.prefix || size > 32) {
      issues.push({
        path: `${path}.size`,
        message: `must be a whole number from ${range.prefix} (the base's prefix) to 32`,
        value: size,
      });
      return;
    }
    pools.push({ base: formatCidr(range.start, range.prefix), size });
  });
  return { pools, issues };
}

/**
 * Canonical form of an IPv4 CIDR (host bits cleared), or `undefined` when it is not one.
 * `172.17.0.0/12` becomes `172.16.0.0/12`.
 */
export function canonicalCidr(cidr: string): string | undefined {
  const parsed = parseCidr(cidr);
  return parsed && formatCidr(parsed.start, parsed.prefix);
}

/** Whether two IPv4 CIDRs share any address. Non-IPv4 input never overlaps. */
export function cidrsOverlap(a: string, b: string): boolean {
  const left = parseCidr(a);
  const right = parseCidr(b);
  return !!left && !!right && left.start < right.end && right.start < left.end;
}

/**
 * How many more networks the daemon can allocate from `pools`, given the subnets every existing
 * network (any network, not only Steward's) already holds.
 *
 * Mirrors the daemon's allocator: pools are used in order, each carved into aligned blocks of
 * `size`, and a block that overlaps anything already taken (an existing subnet, or a block an
 * earlier pool handed out) is skipped. Subnets that are not IPv4 CIDRs are ignored.
 */
export function capacity(pools: readonly AddressPool[], usedSubnets: readonly string[]): number {
  let taken = mergeRanges(
    usedSubnets.flatMap((subnet) => {
      const range = parseCidr(subnet);
      return range ? [range] : [];
    }),
  );
  let count = 0;
  for (const pool of pools) {
    const range = parseCidr(pool.base);
    if (!range || pool.size < range.prefix || pool.size > 32) continue;
    const block = 2 ** (32 - pool.size);
    const handedOut: Range[] = [];
    for (const gap of freeGaps(range, taken)) {
      const first = Math.ceil(gap.start / block) * block;
      const last = Math.floor(gap.end / block) * block;
      if (last > first) {
        count += (last - first) / block;
        handedOut.push({ start: first, end: last });
      }
    }
    taken = mergeRanges([...taken, ...handedOut]);
  }
  return count;
}

/** The parts of `range` not covered by `taken` (sorted, merged). */
function freeGaps(range: Range, taken: readonly Range[]): Range[] {
  const gaps: Range[] = [];
  let cursor = range.start;
  for (const used of taken) {
    if (used.end <= cursor) continue;
    if (used.start >= range.end) break;
    if (used.start > cursor) gaps.push({ start: cursor, end: used.start });
    cursor = Math.max(cursor, used.end);
  }
  if (cursor < range.end) gaps.push({ start: cursor, end: range.end });
  return gaps;
}

function mergeRanges(ranges: readonly Range[]): Range[] {
  const sorted = [...ranges].sort((a, b) => a.start - b.start);
  const merged: Range[] = [];
  for (const range of sorted) {
    const last = merged.at(-1);
    if (last && range.start <= last.end) last.end = Math.max(last.end, range.end);
    else merged.push({ ...range });
  }
  return merged;
}

function parseCidr(cidr: string): (Range & { prefix: number }) | undefined {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(cidr.trim());
  if (!match) return undefined;
  const octets = match.slice(1, 5).map(Number);
  const prefix = Number(match[5]);
  if (octets.some((octet) => octet > 255) || prefix > 32) return undefined;
  const address = octets.reduce((acc, octet) => acc * 256 + octet, 0);
  const span = 2 ** (32 - prefix);
  const start = Math.floor(address / span) * span;
  return { start, end: Math.min(start + span, IPV4_SPACE), prefix };
}

function formatCidr(start: number, prefix: number): string {
  const octets = [24, 16, 8, 0].map((shift) => Math.floor(start / 2 ** shift) % 256);
  return `${octets.join('.')}/${prefix}`;
}

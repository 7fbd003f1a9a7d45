/**
 * An account's connection ceiling split among the hosts that call it (SPEC §1: one owner for each
 * shared thing; the fleet learns one ceiling per account, and each host's controller may use its
 * share of it). Pure, deterministic (it runs in workflow code), no I/O.
 */

/** What one host wanted of an account in the last window. */
export interface HostDemand {
  /** The host's owner, as it names itself in reports (`<hostname>:<pid>`). */
  host: string;
  /** The most calls it had in flight or waiting for a slot at once in the window. */
  demand: number;
}

/**
 * Splits `capacity` among `hosts` by their demand: every host first gets one slot (so one that
 * wanted nothing yet can still start and show its demand), and the rest goes in proportion to
 * demand (evenly when nobody wanted anything), largest remainders first, ties by host name. The
 * shares sum to `capacity` exactly, so the hosts together never exceed what the account allows,
 * and all of it is in use: a host with headroom keeps it until the next tend sees its demand.
 * With fewer slots than hosts, the hosts that wanted most get one each.
 */
export function splitByDemand(
  capacity: number,
  hosts: readonly HostDemand[],
): Record<string, number> {
  const total = Math.max(0, Math.floor(capacity));
  const ordered = [...hosts].sort((a, b) => b.demand - a.demand || byName(a.host, b.host));
  const shares: Record<string, number> = {};
  if (ordered.length === 0) return shares;
  if (total <= ordered.length) {
    ordered.forEach((h, i) => (shares[h.host] = i < total ? 1 : 0));
    return shares;
  }
  const rest = total - ordered.length;
  const wanted = ordered.reduce((sum, h) => sum + Math.max(0, h.demand), 0);
  const weight = (h: HostDemand) =>
    wanted > 0 ? Math.max(0, h.demand) / wanted : 1 / ordered.length;
  const exact = ordered.map((h) => rest * weight(h));
  let given = 0;
  ordered.forEach((h, i) => {
    shares[h.host] = 1 + Math.floor(exact[i]);
    given += Math.floor(exact[i]);
  });
  // Largest remainder: the slots the floors left go to the largest fractions, in order.
  const byRemainder = ordered
    .map((h, i) => ({ host: h.host, remainder: exact[i] - Math.floor(exact[i]), i }))
    .sort((a, b) => b.remainder - a.remainder || a.i - b.i);
  for (let k = 0; k < rest - given; k++) shares[byRemainder[k].host] += 1;
  return shares;
}

/** A host as the tend last heard of it: what it wanted, and what it had in flight. */
export interface HostUse extends HostDemand {
  inFlight: number;
}

/**
 * How far (in slots) a new demand split may differ from the last before it replaces it: a tenth
 * of the capacity, at least one. Demands wobble from window to window; every move hands slots from
 * one host to another, and a hand-over costs a window (see {@link splitAccount}).
 */
export function splitTolerance(capacity: number): number {
  return Math.max(1, Math.ceil(capacity / 10));
}

/**
 * The shares the hosts may use now: the demand split ({@link splitByDemand}), kept as it was
 * while the hosts are the same and no host's share would move by more than
 * {@link splitTolerance}; and handed over without ever granting a slot twice. Until a host applies
 * this split (its owner reads it within a poll, a fifth of the window), it may still fill the
 * share `previous` gave it; and a host whose share shrinks keeps its calls in flight (a lower
 * limit never interrupts one). So what a host holds is the larger of the two, and the hosts whose
 * shares grow get only what the others do not hold: the sum over hosts of the larger of share
 * and holding stays within the capacity whenever the holdings allow it. The rest of their shares
 * comes at a later split, once the shrinking hosts have applied theirs and drained. A host
 * `previous` names and `hosts` does not holds its whole share the same way, for this split.
 */
export function splitAccount(
  capacity: number,
  hosts: readonly HostUse[],
  previous?: Readonly<Record<string, number>>,
): Record<string, number> {
  let target = splitByDemand(capacity, hosts);
  if (previous !== undefined && steady(target, previous, capacity)) target = { ...previous };
  const holds = (h: HostUse) => Math.max(h.inFlight, previous?.[h.host] ?? 0);
  // A host the last split named that is gone from `hosts` without a goodbye (the tend drops one
  // silent for two windows) may be alive and late, still filling that share: it is held too,
  // and freed at the next split, which no longer names it.
  const present = new Set(hosts.map((h) => h.host));
  const departed = Object.entries(previous ?? {})
    .filter(([host]) => !present.has(host))
    .reduce((n, [, share]) => n + share, 0);
  const excess = hosts.reduce((n, h) => n + Math.max(0, holds(h) - target[h.host]), departed);
  if (excess === 0) return target;
  // Growing hosts give up `excess` of their new room, the most room first, ties by host name.
  const growing = hosts
    .map((h) => ({ host: h.host, room: Math.max(0, target[h.host] - Math.max(holds(h), 1)) }))
    .filter((g) => g.room > 0)
    .sort((a, b) => b.room - a.room || byName(a.host, b.host));
  let owed = excess;
  while (owed > 0 && growing.some((g) => g.room > 0)) {
    for (const g of growing) {
      if (owed === 0) break;
      if (g.room === 0) continue;
      g.room -= 1;
      target[g.host] -= 1;
      owed -= 1;
    }
  }
  return target;
}

/** Ties between hosts go by name (code-unit order, the same in every replay). */
function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Whether `target` is the same hosts as `previous`, each within the tolerance of its share. */
function steady(
  target: Record<string, number>,
  previous: Readonly<Record<string, number>>,
  capacity: number,
): boolean {
  const hosts = Object.keys(target);
  const total = Object.values(previous).reduce((a, b) => a + b, 0);
  if (total !== capacity || hosts.length !== Object.keys(previous).length) return false;
  const tolerance = splitTolerance(capacity);
  return hosts.every(
    (h) => Object.hasOwn(previous, h) && Math.abs(target[h] - previous[h]) <= tolerance,
  );
}

/**
 * What a host uses when the last split does not name it (it joined since): the whole ceiling
 * when there is no split yet (one host, or the first window), else one slot, so it never takes
 * what the split gave others; its first report splits it in at once (`Tender`), within a poll.
 */
export function newcomerShare(ceiling: number, shares: Record<string, number>): number {
  return Object.keys(shares).length === 0 ? ceiling : 1;
}

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
  const ordered = [...hosts].sort(
    (a, b) => b.demand - a.demand || (a.host < b.host ? -1 : a.host > b.host ? 1 : 0),
  );
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

/**
 * What a host uses when the last split does not name it (it joined since): an equal share of
 * the ceiling among the hosts named and itself, until the next tend splits by demand. With no
 * split yet (one host, or the first window), the whole ceiling.
 */
export function newcomerShare(ceiling: number, shares: Record<string, number>): number {
  const named = Object.keys(shares).length;
  return named === 0 ? ceiling : Math.max(1, Math.floor(ceiling / (named + 1)));
}

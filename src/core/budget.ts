/**
 * Sandbox budget sharing: `max_sandboxes` bounds the fleet-wide sum of the setpoints of sandboxed
 * tasks (SPEC §2). Tasks without a sandbox use none of it and never appear here.
 *
 * Pure arithmetic, no policy about *when* to move: the ramp decides who wants what, this module
 * says how much of it fits.
 */

/** A running sandboxed task's claim on the budget: its setpoint. */
export interface BudgetClaim {
  name: string;
  setpoint: number;
}

/** A task that wants its setpoint raised from `from` to `to`. */
export interface ClimbRequest {
  name: string;
  from: number;
  to: number;
}

/** A budget cut: the task's setpoint comes down from `from` to the even share `to`. */
export interface BudgetCut {
  name: string;
  from: number;
  to: number;
}

/**
 * A task's even share of the budget: `floor(budget / tasks)`. With no task sharing it, the whole
 * budget.
 */
export function evenShare(budget: number, tasks: number): number {
  return tasks > 0 ? Math.floor(budget / tasks) : budget;
}

/** Sum of the setpoints claimed. */
export function budgetUsed(claims: readonly BudgetClaim[]): number {
  return claims.reduce((sum, claim) => sum + claim.setpoint, 0);
}

/**
 * When the fleet is over budget (a new task started, the budget was lowered), cuts every task
 * above an even share down to it; tasks at or below the share keep theirs. This is the one move
 * that may take a task below the ramp's `lo`. Afterwards the fleet is within budget, since every
 * task holds at most `floor(budget / n)`.
 *
 * @returns the cuts, in input order; empty when the fleet fits.
 */
export function overBudgetCuts(claims: readonly BudgetClaim[], budget: number): BudgetCut[] {
  if (budgetUsed(claims) <= budget) return [];
  const share = evenShare(budget, claims.length);
  return claims
    .filter((claim) => claim.setpoint > share)
    .map((claim) => ({ name: claim.name, from: claim.setpoint, to: share }));
}

/**
 * Grants raises out of `free` budget units, lowest setpoints first (water-filling): the free units
 * first lift the lowest tasks to the level of the next ones, then all of them together, so a
 * scarce budget goes to the tasks that have least, and no task is lifted past its request. A
 * request may be granted in part ("capped by the budget"). Units that cannot be split evenly go
 * to the earliest requests in input order, so the result is deterministic.
 *
 * @returns the granted setpoint of each request (in input order) and the units left over.
 */
export function fitClimb(
  requests: readonly ClimbRequest[],
  free: number,
): { granted: number[]; free: number } {
  const level = requests.map((request) => request.from);
  let left = Math.max(0, free);
  const open = (index: number): boolean => level[index] < requests[index].to;

  while (left > 0) {
    const rising = requests.map((_, index) => index).filter(open);
    if (rising.length === 0) break;
    const floor = Math.min(...rising.map((index) => level[index]));
    const group = rising.filter((index) => level[index] === floor);
    // The group rises together until it meets the next task up or the first of its targets.
    const nextLevels = rising.map((index) => level[index]).filter((value) => value > floor);
    const ceiling = Math.min(...nextLevels, ...group.map((index) => requests[index].to));
    const needed = (ceiling - floor) * group.length;
    if (needed <= left) {
      for (const index of group) level[index] = ceiling;
      left -= needed;
      continue;
    }
    const each = Math.floor(left / group.length);
    const extra = left % group.length;
    group.forEach((index, position) => {
      level[index] += each + (position < extra ? 1 : 0);
    });
    left = 0;
  }
  return { granted: level, free: left };
}

/**
 * Start setpoints for sandboxed tasks joining the fleet: each starts at
 * min(start, floor(budget / sandboxed tasks, newcomers included)), "a share of the budget". Running
 * tasks above that share are cut to it at once, so the fleet is never over budget waiting for a
 * tend. When the share is 0 (fewer budget units than tasks), the units left go one each to the
 * first newcomers, since a setpoint of 0 runs nothing.
 *
 * @param running the running sandboxed tasks.
 * @param starting how many sandboxed tasks start.
 * @returns each newcomer's setpoint, the cuts of running tasks, and the fleet's sum before them.
 */
export function startShares(
  budget: number,
  start: number,
  running: readonly BudgetClaim[],
  starting: number,
): { setpoints: number[]; cuts: BudgetCut[]; fleet: number } {
  const share = Math.min(start, evenShare(budget, running.length + starting));
  const newcomers = Array.from({ length: starting }, (_, index) => ({
    name: `#${index}`,
    setpoint: share,
  }));
  const claims = [...running, ...newcomers];
  const fleet = budgetUsed(claims);
  // Newcomers hold at most the share, so only running tasks are ever cut.
  const cuts = overBudgetCuts(claims, budget);
  if (share > 0) return { setpoints: newcomers.map(() => share), cuts, fleet };
  const used = fleet - cuts.reduce((sum, cut) => sum + cut.from - cut.to, 0);
  const fit = fitClimb(
    newcomers.map((claim) => ({ ...claim, from: 0, to: 1 })),
    budget - used,
  );
  return { setpoints: fit.granted, cuts, fleet };
}

/**
 * Noticing that the process a command was started under has died, whatever the signal: a
 * SIGKILL leaves no chance to tell the children, and Linux does not tell them either.
 *
 * A user's handle on `steward workers` is often not its parent: `npx steward workers &` gives
 * the shell the pid of npm, which runs `sh -c steward workers`, which runs node. Killing npm
 * leaves that `sh` waiting on node, so node's own parent lives on. What a command watches is its
 * lineage, every ancestor up to init: the moment any of them is gone, the command stops.
 */
import { readFileSync } from 'node:fs';
import { isAlive } from './processes';

/** How often the lineage is read; a stop is noticed within this. */
const CHECK_MS = 500;

/** The parent of `pid`, from /proc; `undefined` when it cannot be read (exited, or no /proc). */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: the fields after its last `)` do not.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * This process's ancestors, parent first, up to (not including) init. Without /proc (macOS) it
 * is the parent alone.
 */
export function lineage(): number[] {
  const chain: number[] = [];
  let pid = process.ppid;
  while (pid > 1 && chain.length < 64) {
    chain.push(pid);
    const parent = parentOf(pid);
    if (parent === undefined) break;
    pid = parent;
  }
  return chain;
}

/**
 * Calls `onOrphaned` once, when an ancestor this process had at the call has died (it no longer
 * exists, or this process has another parent). A process started by init, or already orphaned,
 * has nothing to watch, unless it says which parent it was started under.
 *
 * @param options.scope `parent` watches the parent alone: for a process whose parent is
 *   Steward's own and watches its lineage itself.
 * @param options.parent the pid this process was started under, as its parent told it. A parent
 *   that died before the watch began (a worker's start takes seconds) has already handed this
 *   process to init: without the pid, the process would take init for its parent and never stop.
 * @returns stops watching.
 */
export function watchLineage(
  onOrphaned: () => void,
  options: { scope?: 'lineage' | 'parent'; parent?: number } = {},
): () => void {
  const parent = options.parent ?? process.ppid;
  const ancestors = options.scope === 'parent' ? [parent] : lineage();
  // Gone is gone for good: a /proc entry that could not be read once (a busy machine) is not.
  const orphaned = (): boolean => process.ppid !== parent || !ancestors.every(isAlive);
  const timer = setInterval(() => {
    if (!orphaned()) return;
    clearInterval(timer);
    onOrphaned();
  }, CHECK_MS);
  // Watching must never be what keeps a finished process alive.
  timer.unref();
  return () => clearInterval(timer);
}

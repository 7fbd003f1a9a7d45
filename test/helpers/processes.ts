/** Finds the processes a test's `steward launch` runs, by pid, and waits on conditions. */
import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export interface ProcessInfo {
  pid: number;
  ppid: number;
  args: string;
}

/**
 * The live processes on the machine, from one `ps` call, so a tree is read from one snapshot.
 * Zombies are left out: a killed process whose parent has not reaped it yet runs no code.
 */
async function processTable(): Promise<ProcessInfo[]> {
  const { stdout } = await execFileAsync('ps', ['-e', '-o', 'pid=,ppid=,stat=,args='], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout.split('\n').flatMap((line) => {
    const match = /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(line);
    if (!match || match[3].startsWith('Z')) return [];
    return [{ pid: Number(match[1]), ppid: Number(match[2]), args: match[4] }];
  });
}

/** `root` (if it still runs) and every running descendant of it. */
export async function processTree(root: number): Promise<ProcessInfo[]> {
  const table = await processTable();
  const tree = table.filter((p) => p.pid === root);
  const members = new Set([root]);
  // Parents come before children in a breadth-first walk; the table's order is not relied on.
  for (let grew = true; grew;) {
    grew = false;
    for (const p of table) {
      if (members.has(p.ppid) && !members.has(p.pid)) {
        members.add(p.pid);
        tree.push(p);
        grew = true;
      }
    }
  }
  return tree;
}

/** The task-worker processes the launcher `launcher` runs (its fleet spawns them directly). */
export async function workerPids(launcher: number): Promise<number[]> {
  const table = await processTable();
  return table
    .filter((p) => p.ppid === launcher && p.args.includes('task-worker'))
    .map((p) => p.pid);
}

/** Which of `pids` still run. */
export async function runningOf(pids: number[]): Promise<number[]> {
  const live = new Set((await processTable()).map((p) => p.pid));
  return pids.filter((pid) => live.has(pid));
}

/**
 * Polls `probe` until it gives a value (anything but `undefined`), and returns it; throws naming
 * `what` after `timeoutMs`.
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  { timeoutMs = 120_000, intervalMs = 200 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() >= deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** `promise`, or a rejection naming `what` once `timeoutMs` passes first. */
export async function within<T>(what: string, promise: Promise<T>, timeoutMs: number): Promise<T> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      promise,
      sleep(timeoutMs, undefined, { signal: timer.signal }).then(() => {
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      }),
    ]);
  } finally {
    // No timer outlives the race, so jest sees no open handle.
    timer.abort();
  }
}

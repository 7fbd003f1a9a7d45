/** The fleet `steward launch --detach` leaves running, found and stopped by pid. */
import { readdirSync } from 'node:fs';
import { commandLine, processTree } from './process-tree';
import { runningOf, waitFor } from './processes';

/** The pid of the `steward workers <name> --until-done` a detached launch started, if it runs. */
export function detachedFleet(name: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const args = commandLine(Number(entry));
    if (!args) continue;
    const at = args.indexOf('workers');
    if (at > 0 && args[at + 1] === name && args.includes('--until-done')) return Number(entry);
  }
  return undefined;
}

/** SIGKILLs `root` and every descendant (a crash of the whole fleet); waits until all are gone. */
export async function killTree(root: number): Promise<void> {
  const pids = processTree([root]);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  await waitFor('the killed processes to go', async () =>
    (await runningOf(pids)).length === 0 ? true : undefined,
  );
}

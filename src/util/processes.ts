/** Whether a process lives, by its pid. */
import { readFileSync } from 'node:fs';

/** Whether `pid` is a live process (a zombie counts as dead). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A zombie still takes signals but is dead to us; one lingers where init does not reap
  // orphans (a container without an init), as our detached servers become once we exit.
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true; // no /proc (macOS), where init reaps anyway
  }
}

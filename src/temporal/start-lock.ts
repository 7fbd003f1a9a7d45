/**
 * The start lock: a file created exclusively, holding its owner's pid, so that of several
 * processes starting a dev server at once only one spawns it (two would both open the SQLite
 * file). A lock whose owner died is cleared.
 */
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { ExitCode, StewardError } from '../errors';
import { isAlive } from './processes';

const pollIntervalMs = 250;

/**
 * Runs `start` holding the lock file. The others wait, and return `false` as soon as `isUp`
 * says the winner's server answers.
 *
 * @throws StewardError (environment) if the lock is still held at `deadline`
 */
export async function withStartLock(
  lockFile: string,
  deadline: number,
  isUp: () => Promise<boolean>,
  start: () => Promise<boolean>,
): Promise<boolean> {
  for (;;) {
    if (await tryLock(lockFile)) {
      try {
        return await start();
      } finally {
        await rm(lockFile, { force: true });
      }
    }
    if (await isUp()) return false;
    if (Date.now() > deadline) {
      throw new StewardError(
        'Another steward process has been starting the Temporal dev server for too long. ' +
          `If none is running, delete ${lockFile}.`,
        ExitCode.environment,
      );
    }
    await sleep(pollIntervalMs);
  }
}

async function tryLock(lockFile: string): Promise<boolean> {
  try {
    await writeFile(lockFile, `${process.pid}\n`, { flag: 'wx' });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    // Its holder died mid-start: clear it, and take it on the next attempt.
    if (await isStaleLock(lockFile)) await rm(lockFile, { force: true });
    return false;
  }
}

async function isStaleLock(lockFile: string): Promise<boolean> {
  try {
    const [text, info] = await Promise.all([readFile(lockFile, 'utf8'), stat(lockFile)]);
    const pid = Number.parseInt(text, 10);
    if (pid > 0) return !isAlive(pid);
    // No pid yet: its holder is between creating the file and writing it, unless long dead.
    return Date.now() - info.mtimeMs > 10_000;
  } catch {
    return false; // released meanwhile
  }
}

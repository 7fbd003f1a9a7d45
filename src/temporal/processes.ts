/** Child processes, pid files and logs: the bookkeeping around a server we do not hold a handle to. */
import type { ChildProcess } from 'node:child_process';
import { open, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { ExitCode, StewardError } from '../errors';
import { isAlive } from '../util/processes';

export { isAlive };

/** Follows a child's end: why it ended (for messages) and its exit code (for `steward server`). */
export function watchExit(child: ChildProcess): {
  reason: () => string | undefined;
  code: Promise<number>;
} {
  let reason: string | undefined;
  const code = new Promise<number>((resolve, reject) => {
    child.once('error', (error) => {
      reason = error.message;
      reject(
        new StewardError(`Cannot run ${child.spawnfile}: ${error.message}`, ExitCode.environment),
      );
    });
    child.once('exit', (exitCode, signal) => {
      reason = exitCode === null ? `killed by ${signal}` : `exit code ${exitCode}`;
      resolve(exitCode ?? 128 + (signal === null ? 0 : os.constants.signals[signal]));
    });
  });
  // Callers that only poll `reason` must not see an unhandled rejection.
  code.catch(() => undefined);
  return { reason: () => reason, code };
}

/** Whether `pid` runs `temporal server start-dev`, where the OS lets us tell (Linux). */
export async function isDevServerProcess(pid: number): Promise<boolean> {
  try {
    const commandLine = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    return commandLine.includes('start-dev');
  } catch {
    return true; // no /proc (macOS): trust the pid file
  }
}

/** Waits for `pid` to end; `false` if it outlives the timeout. */
export async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

/** The pid a pid file holds, if it exists and holds one. */
export async function readPid(pidFile: string): Promise<number | undefined> {
  try {
    const pid = Number.parseInt(await readFile(pidFile, 'utf8'), 10);
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Removes the pid file if it still names `pid` (a newer server may have replaced it). */
export async function removePidFile(pidFile: string, pid: number | undefined): Promise<void> {
  if (pid !== undefined && (await readPid(pidFile)) === pid) await rm(pidFile, { force: true });
}

/** A file's size, 0 if it does not exist yet. */
export async function sizeOf(file: string): Promise<number> {
  try {
    return (await stat(file)).size;
  } catch {
    return 0;
  }
}

/** The last lines the server wrote since `from`, so an old run's output does not mislead. */
export async function logTail(file: string, from: number, lines: number): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    const length = Math.min(size - from, 64 * 1024);
    const buffer = Buffer.alloc(Math.max(length, 0));
    await handle.read(buffer, 0, buffer.length, size - buffer.length);
    const text = buffer.toString('utf8').trimEnd();
    return text === '' ? '(empty)' : text.split('\n').slice(-lines).join('\n');
  } finally {
    await handle.close();
  }
}

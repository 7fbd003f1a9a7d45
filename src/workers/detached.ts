/**
 * The fleet `steward launch --detach` leaves running: its log and pid files in the steward dir,
 * `workers-<name>.log` and `workers-<name>.pid`. The fleet writes its pid file as it starts and
 * removes it as it stops, so a launch that re-attached can say which workers outlive it.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { isAlive } from '../util/processes';

export function detachedLogFile(stewardDir: string, evalSet: string): string {
  return path.join(stewardDir, `workers-${evalSet}.log`);
}

function pidFile(stewardDir: string, evalSet: string): string {
  return path.join(stewardDir, `workers-${evalSet}.pid`);
}

/** Records this process as the eval set's detached fleet; the returned function forgets it. */
export function recordDetachedFleet(stewardDir: string, evalSet: string): () => void {
  const file = pidFile(stewardDir, evalSet);
  writeFileSync(file, `${process.pid}\n`);
  return () => {
    // Another detached fleet may have taken the file over since: only ours is removed.
    if (readPid(file) === process.pid) rmSync(file, { force: true });
  };
}

/** The pid of the eval set's detached fleet if one runs, from its pid file. */
export function runningDetachedFleet(stewardDir: string, evalSet: string): number | undefined {
  const pid = readPid(pidFile(stewardDir, evalSet));
  if (pid === undefined) return undefined;
  // A SIGKILLed fleet leaves a stale file.
  return isAlive(pid) ? pid : undefined;
}

function readPid(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

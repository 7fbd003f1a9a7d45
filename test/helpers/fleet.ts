/** A `steward workers` fleet of a test's own: another host's fleet, or the only one. */
import { spawn } from 'node:child_process';
import { STEWARD_BIN } from './cli';

export interface TestFleet {
  /** Stops the fleet (SIGTERM, as a service manager would) and resolves with its exit code. */
  stop(): Promise<number | null>;
}

/**
 * Spawns `steward workers`, serving every running eval set, or only `name`'s. A fleet of another
 * host wants its own `cwd` and `STEWARD_HOME` (its own account owner and lease socket).
 */
export function spawnFleet(
  options: { name?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {},
): TestFleet {
  const args = [STEWARD_BIN, 'workers', ...(options.name === undefined ? [] : [options.name])];
  const child = spawn(process.execPath, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: 'ignore',
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

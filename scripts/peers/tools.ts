/** What the side-by-side benches share about running the two tools. */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../ramp/launch';

const run = promisify(execFile);
const SETUP_INSPECT = path.join(ROOT, 'scripts', 'peers', 'setup-inspect.sh');

/** Makes (or reuses) the Inspect AI venv; returns its python. */
export async function setupInspect(): Promise<string> {
  const { stdout } = await run(SETUP_INSPECT, [], { maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim().split('\n').pop()!;
}

/**
 * Both tools run as set up by the bench alone: the caller's `STEWARD_*`, `TEMPORAL_*` and
 * `INSPECT_*` settings do not apply, nor do the caller's own provider endpoints.
 */
export function withoutToolSettings(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(env).filter(([k]) => !/^(STEWARD_|TEMPORAL_|INSPECT_|SIM_)/.test(k)),
  );
}

export function positive(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0)
    throw new Error(`${flag} must be a positive integer (${value})`);
  return n;
}

/**
 * A sample's own sandbox contents, put in place before its solvers run, as Inspect does: the
 * sample's `files` are written, then its `setup` script is run in the default service.
 */

import { randomUUID } from 'node:crypto';
import type { Sample } from '../definition/types';
import type { Sandbox } from '../sandbox/types';

/** How long a setup script may run (Inspect's default too). */
export const SETUP_TIMEOUT_MS = 300_000;

/** Characters of a failed setup's output kept in the sample's error. */
const SETUP_OUTPUT_CHARS = 2_000;

/**
 * Writes `sample.files` into `sandbox` (a `service:path` key writes into that service), then
 * runs `sample.setup`. A script without a `#!` line runs with bash, as in Inspect.
 *
 * @throws Error when a file names a service the sandbox lacks, or the setup script fails or
 *   times out: the sample cannot be run as its dataset means it to be.
 */
export async function prepareSandbox(
  sample: Pick<Sample, 'files' | 'setup'>,
  sandbox: Sandbox,
  options: { timeoutMs?: number; heartbeat?: () => void } = {},
): Promise<void> {
  for (const [key, content] of Object.entries(sample.files ?? {})) {
    const { service, file } = splitTarget(key, sandbox);
    await sandbox.service(service).writeFile(file, Buffer.from(content, 'base64'));
  }
  options.heartbeat?.();
  if (sample.setup === undefined) return;

  const timeoutMs = options.timeoutMs ?? SETUP_TIMEOUT_MS;
  const script = sample.setup.trimStart().startsWith('#!')
    ? sample.setup
    : `#!/usr/bin/env bash\n\n${sample.setup}`;
  const file = `/tmp/steward-setup-${randomUUID()}`;
  await sandbox.writeFile(file, script);
  const result = await sandbox.exec(
    ['sh', '-c', 'chmod +x "$1" && "$1"; s=$?; rm -f "$1"; exit $s', 'setup', file],
    {
      timeoutMs,
    },
  );
  options.heartbeat?.();
  if (result.timedOut) {
    throw new Error(`the sample's setup script timed out after ${timeoutMs / 1000} s`);
  }
  if (result.exitCode !== 0) {
    const output = [result.stderr, result.stdout].join('').trim().slice(-SETUP_OUTPUT_CHARS);
    throw new Error(
      `the sample's setup script failed (exit code ${result.exitCode ?? 'unknown'})` +
        (output ? `: ${output}` : ''),
    );
  }
}

/**
 * `service:path` writes into that service, which must exist (Inspect's rule: a colon cannot be
 * part of a file name here); a key without a colon is a path in the default service.
 */
function splitTarget(key: string, sandbox: Sandbox): { service: string; file: string } {
  const colon = key.indexOf(':');
  if (colon > 0) {
    const service = key.slice(0, colon);
    if (!sandbox.services.includes(service)) {
      throw new Error(
        `the sample's file "${key}" names service ${service}, which the sandbox lacks ` +
          `(it has ${sandbox.services.join(', ')})`,
      );
    }
    return { service, file: key.slice(colon + 1) };
  }
  return { service: sandbox.name, file: key };
}

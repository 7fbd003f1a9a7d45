/**
 * A connection closed while the client waits to retry a failed call: the retry ends the call,
 * cancelled, instead of throwing "Channel has been shut down" from a timer and killing the
 * process (which, in a test run, failed whichever suite was running when it fired).
 */
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { freePort } from './setup/global-setup';

const FIXTURE = path.join(__dirname, 'connection', 'close-mid-retry.ts');

async function closeMidRetry(
  mode: 'guarded' | 'default',
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const address = `127.0.0.1:${await freePort()}`; // nothing listens there
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', FIXTURE, address, mode], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stdout, stderr };
}

test("Steward's connection: the pending retry ends the call as cancelled; the process lives", async () => {
  const { code, stdout, stderr } = await closeMidRetry('guarded');
  expect(stderr).toBe('');
  expect(stdout.trim().split('\n')).toEqual([
    'rejected 1: Channel has been shut down',
    // A call made after the close ends the same way, at once.
    'rejected 1: Channel has been shut down',
  ]);
  expect(code).toBe(0);
});

test("the client's default connection: the same close kills the process (what the guard is for)", async () => {
  const { code, stdout, stderr } = await closeMidRetry('default');
  expect(stdout).toBe('');
  expect(stderr).toContain('Error: Channel has been shut down');
  expect(code).not.toBe(0);
});

/**
 * A supervisor whose control worker ends without being asked (a fatal worker error, the SDK
 * runtime shutting its workers down) ends too, after stopping its fleet, saying so: its reconcile
 * loop ran on until the supervisor's own stop, so it never settled, and a launch then sat silent
 * with nothing serving its eval set (its status queries failing) until it was killed.
 */
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { startOwnDevServer, type OwnDevServer } from './helpers/server';
import { tempDir } from './helpers/cli';

const FIXTURE = path.join(__dirname, 'supervisor', 'control-stops.ts');

let server: OwnDevServer;

beforeAll(async () => {
  server = await startOwnDevServer(await tempDir('steward-supervisor-control-'));
});

afterAll(async () => {
  await server?.close();
});

test('the control worker ending unasked ends the supervisor, with the reason', async () => {
  const child = spawn(
    process.execPath,
    ['--require', 'tsx/cjs', FIXTURE, server.address, server.namespace, await tempDir()],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  // (The rest is the SDK's words for the worker's end.)
  expect(stdout.trim()).toMatch(/^rejected: the control worker ended, unasked: \S/);
  expect(code).toBe(0);
});

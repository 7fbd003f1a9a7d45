/**
 * The typed client (`steward/client`) as a script uses it: examples/client.ts starts an eval set,
 * holds and narrows its ramp, and waits for the result, against a fleet started apart with
 * `steward workers`.
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { REPO_ROOT, runCli, tempDir, uniqueName, writeEvalSet } from './helpers/cli';
import { readSampleRecords } from './helpers/results';
import type { RampHistoryEntry } from '../src/workflows/types';

test('examples/client.ts starts, holds, narrows and waits for an eval set', async () => {
  const dir = await tempDir();
  const name = uniqueName('client');
  const tasks = [{ name: 'sums', samples: 60, latencyMs: 200 }];
  const logDir = path.join(dir, 'logs', name);
  const file = await writeEvalSet(dir, name, tasks, { tend_interval: 1, log_dir: logDir });
  const script = spawn(
    process.execPath,
    [
      path.join(REPO_ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'),
      'examples/client.ts',
      file,
      name,
    ],
    { cwd: REPO_ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  script.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  script.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => script.on('close', resolve));

  // The fleet, as a user starts it beside the script, once the eval set exists.
  while (!stdout.includes('started eval set')) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    if (script.exitCode !== null) throw new Error(`script exited early: ${stderr}`);
  }
  const workers = runCli(['workers', name, '--until-done']);

  expect(await exited).toBe(0);
  expect(stderr).toBe('');
  const lines = stdout.split('\n');
  expect(lines).toEqual(
    expect.arrayContaining([
      `started eval set ${name} (workflow steward-${name})`,
      'checking the provider dashboard',
      'samples_ramp set to [40, 100]',
      'resumed',
      'sums: 60/60, accuracy 1',
    ]),
  );
  expect(lines.some((line) => /^success; log dir /.test(line))).toBe(true);
  expect((await workers).code).toBe(0);

  expect(await readSampleRecords(logDir, 'sums')).toHaveLength(60);
  const history = (await fs.readFile(path.join(logDir, 'ramp-history.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as RampHistoryEntry);
  expect(history.filter((e) => ['hold', 'range', 'resume'].includes(e.kind))).toMatchObject([
    { kind: 'hold', reason: 'checking the provider dashboard', by: expect.stringContaining('@') },
    { kind: 'range', reason: 'samples_ramp set to [40, 100]' },
    { kind: 'resume', reason: 'resumed' },
  ]);
});

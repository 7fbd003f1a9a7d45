/**
 * Regression guard on orchestration speed: a short run of the orchestration bench (Steward alone,
 * about 30 s) must keep at least half the committed share of the in-process baseline measured
 * in the same run. A ratio, not a time: a slower machine slows both. The bench runs as its own
 * process (`--check`), as it did when the figure was committed: the baseline measured inside
 * Jest runs several times slower, which would let Steward fall that much further unseen.
 * Recommit the figure with `npm run bench:orchestration -- --guard` when a change moves it on
 * purpose.
 */
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { GUARD_FLOOR, GUARD_SAMPLES } from '../scripts/orchestration/guard';
import { REPO_ROOT } from './helpers/cli';

jest.setTimeout(10 * 60_000);

test(`${GUARD_SAMPLES} one-call samples keep at least ${GUARD_FLOOR} of the committed share of the baseline`, async () => {
  const child = spawn(
    path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx'),
    ['scripts/bench-orchestration.ts', '--check'],
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  console.log(output);
  expect(output).toMatch(/guard (ok|FAILED): /);
  expect(code).toBe(0);
});

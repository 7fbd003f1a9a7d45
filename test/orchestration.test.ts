/**
 * Regression guard on orchestration speed: a short run of the orchestration bench (Steward alone,
 * about 30 s) must keep at least half the committed share of the in-process baseline measured
 * in the same run. A ratio, not a time: a slower machine slows both. Recommit the figure with
 * `npm run bench:orchestration -- --guard` when a change moves it on purpose.
 */
import { promises as fs } from 'node:fs';
import { GUARD_FILE, GUARD_FLOOR, GUARD_SAMPLES } from '../scripts/orchestration/guard';
import {
  orchestrationTable,
  runOrchestration,
  stewardShare,
} from '../scripts/orchestration/measure';
import { tempDir } from './helpers/cli';

jest.setTimeout(10 * 60_000);

test(`${GUARD_SAMPLES} one-call samples keep at least ${GUARD_FLOOR} of the committed share of the baseline`, async () => {
  const committed = JSON.parse(await fs.readFile(GUARD_FILE, 'utf8')) as {
    samples: number;
    stewardShare: number;
  };
  expect(committed.samples).toBe(GUARD_SAMPLES);
  const run = await runOrchestration({
    samples: GUARD_SAMPLES,
    tools: ['steward'],
    dir: await tempDir('steward-orchestration-'),
    deadlineMs: 5 * 60_000,
  });
  console.log(orchestrationTable(run));
  expect(run.runs[0].problem).toBeUndefined();
  expect(stewardShare(run)).toBeGreaterThanOrEqual(GUARD_FLOOR * committed.stewardShare);
});

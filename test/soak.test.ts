/**
 * The fault soak's short version (`npm run soak` runs 20 rounds): two rounds of an eval set under
 * a seeded random schedule of SIGKILLs of task workers, the launch alone, the whole launch and the
 * dev server (scripts/soak/round.ts). Each round ends with every sample recorded exactly once, no
 * more samples calling the provider again than were in flight at the kills, and every history
 * replaying (the round's dev server replays them as it closes).
 */
import { soakRound, type RoundResult } from '../scripts/soak/round';

/** The committed seed: the same schedule of kinds and moments each run. */
const SEED = 28;

test.each([1, 2])('soak round %i keeps every promise', async (round) => {
  const result: RoundResult = await soakRound({
    round,
    seed: SEED,
    tasks: 2,
    samples: 30,
    kills: 3,
    maxSamples: 10,
    log: (line) => console.log(line),
  });
  console.log(JSON.stringify(result));
  // No worker outlives its launch, however early the launch was killed.
  expect(result).toMatchObject({ duplicates: 0, missing: 0, orphans: 0 });
  expect(result.recorded).toBe(result.samples);
  expect(result.recalled).toBeLessThanOrEqual(result.inFlightAtKills);
  expect(result.replayedRuns).toBeGreaterThan(2);
  // The run outlasted its first kill, so the round tested something.
  expect(Object.values(result.kills).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
});

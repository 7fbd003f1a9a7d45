/**
 * `npm run soak [-- --rounds N --seed S --tasks N --samples N --kills N]`: the fault soak (issue
 * 28). Each round runs an eval set under a seeded random schedule of SIGKILLs (scripts/soak/
 * round.ts) and checks it: every sample recorded exactly once, re-calls within the samples in
 * flight at the kills, every history replaying. Prints a row a round and writes
 * bench/soak-table.txt. The same seed gives the same schedule of kinds and moments.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { soakRound, soakTable, type RoundResult } from './soak/round';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '20' },
      seed: { type: 'string', default: '28' },
      tasks: { type: 'string', default: '3' },
      samples: { type: 'string', default: '120' },
      kills: { type: 'string', default: '5' },
      'max-samples': { type: 'string', default: '10' },
    },
  });
  const seed = Number(values.seed);
  const results: RoundResult[] = [];
  for (let round = 1; round <= Number(values.rounds); round++) {
    const result = await soakRound({
      round,
      seed,
      tasks: Number(values.tasks),
      samples: Number(values.samples),
      kills: Number(values.kills),
      maxSamples: Number(values['max-samples']),
      log: (line) => console.error(line),
    });
    results.push(result);
    console.log(soakTable([result], seed).split('\n')[2]);
  }
  const table = soakTable(results, seed);
  console.log(`\n${table}`);
  await fs.writeFile(path.join(__dirname, '..', 'bench', 'soak-table.txt'), table);
  const bad = results.filter(
    (r) => r.duplicates > 0 || r.missing > 0 || r.recalled > r.inFlightAtKills || r.orphans > 0,
  );
  if (bad.length > 0) {
    console.error(`rounds that broke a promise: ${bad.map((r) => r.round).join(', ')}`);
    process.exit(1);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

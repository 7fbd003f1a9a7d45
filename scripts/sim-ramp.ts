/**
 * The ramp across providers, in virtual time (see `ramp/simulate.ts`): for each provider, the
 * same eval set as the bench run three ways, and each one's time against the ideal. Providers are
 * `--capacities` (requests at once, as the bench's) and `--rpms` (requests per minute).
 *
 *   (a) the ramp
 *   (a0) the ramp without the tend's connection walls (workers do not report where the provider
 *        pushed back; each account's controller still holds below it for 2 minutes): the
 *        baseline for the tend's wall rule
 *   (c) max_samples 200
 *
 *   npm run sim:ramp
 *   npm run sim:ramp -- --capacities 40,120,400 --rpms 3000 --tend 60 --samples 30000
 */
import { parseArgs } from 'node:util';
import { alignColumns } from '../src/cli/table';
import type { SamplesMode } from '../src/core/ramp';
import { PROVIDER, STEPS_PER_SAMPLE } from './ramp/provider';
import { simulateRamp, type SimulationOptions } from './ramp/simulate';

const RAMP: SamplesMode = { type: 'ramp', lo: 50, hi: 200, step: 20, start: 50 };

const RUNS: Array<{ label: string; over: Partial<SimulationOptions> }> = [
  { label: '(a) ramp', over: {} },
  { label: '(a0) ramp, no tend walls', over: { walls: false } },
  { label: '(c) max_samples 200', over: { samplesMode: { type: 'pinned', value: 200 } } },
];

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      capacities: { type: 'string', default: '60,90,120,150,180' },
      rpms: { type: 'string', default: '2400,4800,7200' },
      samples: { type: 'string', default: '3000' },
      tend: { type: 'string', default: '5' },
      seed: { type: 'string', default: '7' },
    },
  });
  const base: SimulationOptions = {
    samples: Number(values.samples),
    calls: STEPS_PER_SAMPLE,
    limits: {},
    latencyMs: PROVIDER.latencyMs,
    jitterMs: PROVIDER.jitterMs,
    tendMs: Number(values.tend) * 1000,
    samplesMode: RAMP,
    walls: true,
    seed: Number(values.seed),
  };
  console.log(
    `${base.samples} samples × ${base.calls} calls, latency ${base.latencyMs}+U[0,${base.jitterMs}) ms, ` +
      `tend every ${values.tend} s; the provider answers 429 over its limit (virtual time)\n`,
  );
  const header = [
    'provider',
    'run',
    'wall',
    'ideal',
    'wall/ideal',
    '429 share',
    'in flight',
    'samples errored',
  ];
  const rows = [header, header.map((h) => '-'.repeat(h.length))];
  const providers = [
    ...numbers(values.capacities).map((n) => ({
      name: `${n} at once`,
      limits: { concurrency: n },
    })),
    ...numbers(values.rpms).map((n) => ({ name: `${n} rpm`, limits: { rpm: n } })),
  ];
  for (const provider of providers) {
    for (const run of RUNS) {
      const r = await simulateRamp({ ...base, limits: provider.limits, ...run.over });
      rows.push([
        provider.name,
        run.label,
        `${r.wallS.toFixed(1)} s`,
        `${r.idealS.toFixed(1)} s`,
        `${(r.wallS / r.idealS).toFixed(2)}x`,
        `${(r.rateLimitedShare * 100).toFixed(2)}%`,
        r.meanInFlight.toFixed(1),
        String(r.errored),
      ]);
    }
  }
  console.log(alignColumns(rows, [true, false, true, true, true, true, true, true]).join('\n'));
}

function numbers(list: string): number[] {
  return list === '' ? [] : list.split(',').map(Number);
}

void main();

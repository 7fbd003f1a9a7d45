/**
 * The launch's warning that a run looks set to outgrow its host (src/core/slots.ts
 * `memoryWarning`, src/cli/commands/launch.ts `fleetMemoryWarning`): the fleet at its most, every
 * slot and the most samples the settings let run at once, against the headroom above the memory
 * gate's floor.
 */
import { fleetMemoryWarning } from '../../src/cli/commands/launch';
import { withDefaults } from '../../src/config/settings';
import {
  fleetPeakBytes,
  IDLE_PROCESS_BYTES,
  memoryWarning,
  SAMPLE_BYTES,
  spareBytes,
  type HostCapacity,
} from '../../src/core/slots';
import type { EvalSetDefinition } from '../../src/definition/types';

const GiB = 1024 ** 3;
const host = (cpus: number, totalGiB: number, headroomGiB: number): HostCapacity => ({
  cpus,
  totalBytes: totalGiB * GiB,
  headroomBytes: headroomGiB * GiB,
});

/** A definition with tasks of these sample counts (all the warning reads of it). */
function definition(samples: number[]): EvalSetDefinition {
  return {
    name: 'sweep',
    tasks: samples.map((n, i) => ({ name: `t${i}`, dataset: new Array(n).fill({}), epochs: 1 })),
  } as unknown as EvalSetDefinition;
}

test('the fleet at its most: idle processes plus samples in flight', () => {
  expect(fleetPeakBytes(4, 2_000)).toBe(4 * IDLE_PROCESS_BYTES + 2_000 * SAMPLE_BYTES);
  expect(spareBytes(host(2, 24, 20))).toBeCloseTo(17.6 * GiB, -3);
});

test('a run that fits says nothing', () => {
  expect(memoryWarning({ slots: 4, samplesAtOnce: 4_000, host: host(2, 24, 22) })).toBeUndefined();
});

test('a run that does not fit says by how much, and what to lower', () => {
  const warning = memoryWarning({ slots: 40, samplesAtOnce: 8_000, host: host(2, 16, 10) });
  expect(warning).toBe(
    "this run looks set to outgrow the host's memory: 40 worker process(es) (7.0 GiB idle) and " +
      'up to 8000 samples at once (8.6 GiB) want about 15.6 GiB, and the host has 8.4 GiB free ' +
      'above the 10% of RAM the memory gate keeps. The gate holds the ramp there; lower ' +
      "max_workers, max_tasks or max_samples (or samples_ramp's hi) to stay clear of it.",
  );
});

describe('fleetMemoryWarning: from the definition and the settings', () => {
  // 100 tasks × 20 samples at the defaults: 4 slots on 2 cores, 2,000 samples at once.
  const sweep = definition(new Array(100).fill(20));

  test('a 100-task sweep at the defaults fits this kind of machine', () => {
    expect(fleetMemoryWarning(sweep, withDefaults({}), host(2, 24, 22))).toBeUndefined();
  });

  test('the same sweep on a 4 GiB host warns', () => {
    expect(fleetMemoryWarning(sweep, withDefaults({}), host(2, 4, 3))).toMatch(
      /^this run looks set to outgrow the host's memory: 4 worker process\(es\) .* up to 2000 samples at once/,
    );
  });

  test('an explicit max_workers past the memory warns where the host-sized default does not', () => {
    const few = definition(new Array(100).fill(1));
    const small = host(64, 8, 7);
    expect(fleetMemoryWarning(few, withDefaults({}), small)).toBeUndefined();
    expect(fleetMemoryWarning(few, withDefaults({ max_workers: 100 }), small)).toMatch(
      /100 worker process\(es\)/,
    );
  });

  test('max_tasks and max_samples bound the samples at once', () => {
    const big = definition([5_000, 5_000, 5_000, 5_000]);
    const tight = host(2, 8, 7);
    // The ramp's hi (200) per task, 4 tasks: 800 samples at once.
    expect(fleetMemoryWarning(big, withDefaults({}), tight)).toBeUndefined();
    expect(fleetMemoryWarning(big, withDefaults({ max_samples: 2_000 }), tight)).toMatch(
      /up to 8000 samples at once/,
    );
    expect(
      fleetMemoryWarning(big, withDefaults({ max_samples: 2_000, max_tasks: 1 }), tight),
    ).toBeUndefined();
  });
});

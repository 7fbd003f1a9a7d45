/**
 * Steward's reducers and metrics against Inspect AI's own: a table of cases scored by
 * src/eval/metrics.ts and by the installed `inspect_ai` package (test/helpers/inspect_scores.py,
 * one Python process for the table) must agree to 1e-9, reducer by reducer, sample by sample.
 *
 * Needs the Inspect venv (scripts/peers/setup-inspect.sh, which .ci/run calls); without it the
 * test fails and says how to install it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import type { MetricName } from '../src/core/metrics';
import type { ReducerName } from '../src/core/reducers';
import type { ScoreValue } from '../src/definition/types';
import { reduceSamples, taskMetrics, type ScoredEpoch } from '../src/eval/metrics';

const PYTHON =
  process.env.STEWARD_INSPECT_PYTHON ??
  path.join(__dirname, '..', '.tools', 'inspect-venv', 'bin', 'python');
const SCORER = path.join(__dirname, 'helpers', 'inspect_scores.py');

const ALL_METRICS: MetricName[] = ['accuracy', 'stderr', 'mean', 'std'];

interface Case {
  name: string;
  epochs: number;
  reducers: ReducerName[];
  metrics: MetricName[];
  /** Each sample's epoch scores in epoch order; a shorter list: its later epochs failed. */
  samples: Array<{ id: string | number; epochs: ScoreValue[] }>;
}

/** What the helper prints per case; null stands for NaN. */
interface InspectScores {
  scores: Array<{
    reducer: string;
    scored_samples: number;
    unscored_samples: number;
    metrics: Record<string, number | null>;
  }>;
  reductions: Array<{
    reducer: string;
    samples: Array<{ sample_id: string | number; value: ScoreValue | null }>;
  }>;
}

/** A deterministic mix of C, I and fractions, for a case too large to write out. */
function generated(samples: number, epochs: number): Case['samples'] {
  let seed = 12345;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  return Array.from({ length: samples }, (_, i) => ({
    id: i % 3 === 0 ? `s${i}` : i,
    epochs: Array.from({ length: epochs }, () => {
      const r = next();
      if (r < 0.4) return 'C';
      if (r < 0.7) return 'I';
      return Math.round(next() * 1000) / 1000;
    }),
  }));
}

const EVERY_REDUCER: ReducerName[] = [
  'mean',
  'median',
  'mode',
  'max',
  'pass_at_1',
  'pass_at_2',
  'pass_at_3',
  'at_least_1',
  'at_least_2',
  'at_least_3',
];

const CASES: Case[] = [
  {
    name: 'C and I over three epochs, every reducer',
    epochs: 3,
    reducers: EVERY_REDUCER,
    metrics: ALL_METRICS,
    samples: [
      { id: 1, epochs: ['C', 'I', 'C'] },
      { id: 2, epochs: ['I', 'I', 'I'] },
      { id: 3, epochs: ['C', 'C', 'C'] },
      { id: 'four', epochs: ['I', 'C', 'I'] },
    ],
  },
  {
    name: 'numeric values (pass_at and at_least count a value of at least 1 only)',
    epochs: 3,
    reducers: EVERY_REDUCER,
    metrics: ALL_METRICS,
    samples: [
      { id: 'a', epochs: [0.25, 0.5, 1] },
      { id: 'b', epochs: [0, 0.75, 0.75] },
      { id: 'c', epochs: [1, 1, 0.5] },
      { id: 'd', epochs: [0.9, 0.1, 0.3] },
      { id: 'e', epochs: [2, 0, 1.5] },
    ],
  },
  {
    name: 'one sample: stderr and std are 0',
    epochs: 2,
    reducers: ['mean', 'median', 'pass_at_2'],
    metrics: ALL_METRICS,
    samples: [{ id: 1, epochs: ['C', 'I'] }],
  },
  {
    name: 'one epoch',
    epochs: 1,
    reducers: ['mean', 'mode', 'max', 'pass_at_1', 'at_least_1'],
    metrics: ALL_METRICS,
    samples: [
      { id: 1, epochs: ['C'] },
      { id: 2, epochs: ['I'] },
      { id: 3, epochs: [0.5] },
    ],
  },
  {
    name: 'ties for mode and max go to the first epoch',
    epochs: 4,
    reducers: ['mode', 'max', 'median'],
    metrics: ALL_METRICS,
    samples: [
      { id: 1, epochs: ['C', 'I', 'I', 'C'] },
      { id: 2, epochs: ['I', 'C', 'C', 'I'] },
      { id: 3, epochs: [1, 0.5, 0.5, 1] },
      { id: 4, epochs: [1, 'C', 'C', 1] },
      { id: 5, epochs: ['C', 1, 0, 0] },
      { id: 6, epochs: [0.25, 0.75, 0.5, 0] },
    ],
  },
  {
    name: 'k greater than the epochs recorded: pass_at scores nothing, at_least scores 0',
    epochs: 2,
    reducers: ['pass_at_3', 'at_least_3', 'mean'],
    metrics: ALL_METRICS,
    samples: [
      { id: 1, epochs: ['C', 'C'] },
      { id: 2, epochs: ['C', 'I'] },
    ],
  },
  {
    name: 'failed epochs: a sample with fewer than k recorded is unscored by pass_at',
    epochs: 3,
    reducers: ['pass_at_2', 'at_least_2', 'mean', 'mode'],
    metrics: ALL_METRICS,
    samples: [
      { id: 1, epochs: ['C', 'I', 'C'] },
      { id: 2, epochs: ['C'] },
      { id: 3, epochs: ['I', 'C'] },
      { id: 4, epochs: [0.5, 0.5, 1] },
    ],
  },
  {
    name: 'metrics in another order, a subset',
    epochs: 2,
    reducers: ['max', 'mean'],
    metrics: ['std', 'accuracy'],
    samples: [
      { id: 'x', epochs: [0.1, 0.2] },
      { id: 'y', epochs: [0.3, 'C'] },
      { id: 'z', epochs: ['I', 0.05] },
    ],
  },
  {
    name: '60 samples over 5 epochs, mixed values',
    epochs: 5,
    reducers: [
      'mean',
      'median',
      'mode',
      'max',
      'pass_at_1',
      'pass_at_3',
      'pass_at_5',
      'at_least_2',
      'at_least_5',
    ],
    metrics: ALL_METRICS,
    samples: generated(60, 5),
  },
];

function inspectScores(cases: Case[]): InspectScores[] {
  if (!existsSync(PYTHON)) {
    throw new Error(`Inspect AI's venv is missing (${PYTHON}): run scripts/peers/setup-inspect.sh`);
  }
  const run = spawnSync(PYTHON, [SCORER], {
    input: JSON.stringify(cases),
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (run.status !== 0) throw new Error(`${SCORER} failed (${run.status}): ${run.stderr}`);
  return JSON.parse(run.stdout) as InspectScores[];
}

function epochsOf(c: Case): ScoredEpoch[] {
  return c.samples.flatMap((s) =>
    s.epochs.map((value, i) => ({ sampleId: s.id, epoch: i + 1, value })),
  );
}

/** Equal to 1e-9 for numbers, exactly otherwise; null and NaN both mean "unscored". */
function expectSame(steward: unknown, inspect: unknown, where: string): void {
  const nan = (v: unknown) => v === null || (typeof v === 'number' && Number.isNaN(v));
  if (nan(steward) || nan(inspect)) {
    expect({ where, value: nan(steward) }).toEqual({ where, value: nan(inspect) });
  } else if (typeof steward === 'number' && typeof inspect === 'number') {
    if (Math.abs(steward - inspect) > 1e-9) {
      throw new Error(`${where}: Steward ${steward}, Inspect ${inspect}`);
    }
  } else {
    expect({ where, value: steward }).toEqual({ where, value: inspect });
  }
}

describe('reducers and metrics match inspect_ai', () => {
  let inspect: InspectScores[];
  beforeAll(() => {
    inspect = inspectScores(CASES);
  });

  test.each(CASES.map((c, i) => [c.name, i] as const))('%s', (_name, i) => {
    const c = CASES[i];
    const theirs = inspect[i];
    const scores = epochsOf(c);
    const ours = taskMetrics(scores, { reducers: c.reducers, metrics: c.metrics });

    expect(ours.scores.map((s) => s.reducer)).toEqual(theirs.scores.map((s) => s.reducer));
    ours.scores.forEach((score, r) => {
      const expected = theirs.scores[r];
      expect({
        reducer: score.reducer,
        scored: score.samples_scored,
        unscored: score.samples_unscored,
      }).toEqual({
        reducer: expected.reducer,
        scored: expected.scored_samples,
        unscored: expected.unscored_samples,
      });
      expect(Object.keys(score.metrics)).toEqual(Object.keys(expected.metrics));
      for (const [metric, value] of Object.entries(score.metrics)) {
        expectSame(value, expected.metrics[metric], `${score.reducer} ${metric}`);
      }
    });
    // The headline is the first reducer's.
    expect(ours.reducer).toBe(c.reducers[0]);

    expect(theirs.reductions.map((r) => r.reducer)).toEqual(c.reducers);
    theirs.reductions.forEach((reduction, r) => {
      const samples = reduceSamples(scores, c.reducers[r]);
      expect(samples.map((s) => s.sampleId)).toEqual(reduction.samples.map((s) => s.sample_id));
      samples.forEach((sample, s) => {
        expectSame(
          sample.value,
          reduction.samples[s].value,
          `${c.reducers[r]} sample ${sample.sampleId}`,
        );
      });
    });
  });
});

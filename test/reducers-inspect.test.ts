/**
 * Steward's reducers and metrics against Inspect AI's own: a table of cases scored by
 * src/eval/metrics.ts and by the installed `inspect_ai` package (test/helpers/inspect_scores.py,
 * one Python process for the table) must agree to 1e-9, reducer by reducer, sample by sample.
 * Then a `.eval` Steward writes for one of them must read, with Inspect's `read_eval_log`, as the
 * numbers Inspect computed.
 *
 * Needs the Inspect venv (scripts/peers/setup-inspect.sh, which .ci/run calls); without it the
 * test fails and says how to install it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { MetricName } from '../src/core/metrics';
import type { ReducerName } from '../src/core/reducers';
import type { ScoreValue } from '../src/definition/types';
import { reduceSamples, taskMetrics, type ScoredEpoch } from '../src/eval/metrics';
import { writeTaskInspectLog } from '../src/logs/inspect/write';
import { openLogStore, type SampleRecord } from '../src/logs/store';

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

function python<T>(args: string[], input = ''): T {
  if (!existsSync(PYTHON)) {
    throw new Error(`Inspect AI's venv is missing (${PYTHON}): run scripts/peers/setup-inspect.sh`);
  }
  const run = spawnSync(PYTHON, [SCORER, ...args], { input, encoding: 'utf8', timeout: 120_000 });
  if (run.status !== 0) throw new Error(`${SCORER} failed (${run.status}): ${run.stderr}`);
  return JSON.parse(run.stdout) as T;
}

function inspectScores(cases: Case[]): InspectScores[] {
  return python<InspectScores[]>([], JSON.stringify(cases));
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
    expectScores(ours.scores, theirs);
    // The headline is the first reducer's.
    expect(ours.reducer).toBe(c.reducers[0]);
    expectReductions(
      c.reducers.map((reducer) => ({ reducer, samples: reduceSamples(scores, reducer) })),
      theirs,
    );
  });

  // One with a sample pass_at cannot score (NaN in reductions), one where it scores none (NaN
  // metrics): Inspect writes and reads NaN as a bare constant.
  test.each(['failed epochs', 'k greater than'])(
    "a .eval Steward writes reads, with Inspect's read_eval_log, as Inspect's own numbers: %s",
    async (name) => {
      const i = CASES.findIndex((c) => c.name.startsWith(name));
      const c = CASES[i];
      const scoring = { reducers: c.reducers, metrics: c.metrics };
      const dir = await fs.mkdtemp(path.join(tmpdir(), 'steward-reducers-'));
      try {
        const store = openLogStore(dir);
        await store.writeTaskIdentity({
          version: 1,
          eval_set: 'set',
          task: 't',
          identity: {
            model: 'mockllm/model',
            model_args: {},
            solver: ['generate'],
            scorer: { match: {} },
            dataset: { samples: c.samples.length, sha256: 'abc' },
            epochs: c.epochs,
            config: {},
            sandbox: null,
          },
          recorded_at: '2026-12-01T10:00:00.000Z',
        });
        const scores = epochsOf(c);
        for (const s of scores) await store.writeSample(record(s));
        const total = c.samples.length * c.epochs;
        await store.writeTaskSummary({
          version: 1,
          eval_set: 'set',
          name: 't',
          samples: total,
          completed: scores.length,
          errored: total - scores.length,
          resumed: 0,
          metrics: taskMetrics(scores, scoring),
          scorer: 'match',
          model: 'mockllm/model',
          completed_at: '2026-12-01T10:05:00.000Z',
        });
        const written = await writeTaskInspectLog(store, 't', { ended: true, scoring });
        const read = python<InspectScores & { config: string[] }>(['--log', written!.file]);
        expect(read.config).toEqual(c.reducers);
        expectScores(
          read.scores.map((s) => ({
            reducer: s.reducer as ReducerName,
            samples_scored: s.scored_samples,
            samples_unscored: s.unscored_samples,
            metrics: s.metrics,
          })),
          inspect[i],
        );
        expectReductions(
          read.reductions.map((r) => ({
            reducer: r.reducer,
            samples: r.samples.map((s) => ({ sampleId: s.sample_id, value: s.value ?? NaN })),
          })),
          inspect[i],
        );
      } finally {
        await fs.rm(dir, { recursive: true, force: true });
      }
    },
  );
});

function expectScores(
  ours: Array<{
    reducer: string;
    samples_scored: number;
    samples_unscored: number;
    metrics: Record<string, number | null | undefined>;
  }>,
  theirs: InspectScores,
): void {
  expect(ours.map((s) => s.reducer)).toEqual(theirs.scores.map((s) => s.reducer));
  ours.forEach((score, r) => {
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
}

function expectReductions(
  ours: Array<{
    reducer: string;
    samples: Array<{ sampleId: string | number; value: unknown }>;
  }>,
  theirs: InspectScores,
): void {
  expect(ours.map((r) => r.reducer)).toEqual(theirs.reductions.map((r) => r.reducer));
  ours.forEach((reduction, r) => {
    const expected = theirs.reductions[r].samples;
    expect(reduction.samples.map((s) => s.sampleId)).toEqual(expected.map((s) => s.sample_id));
    reduction.samples.forEach((sample, s) => {
      expectSame(sample.value, expected[s].value, `${reduction.reducer} sample ${sample.sampleId}`);
    });
  });
}

function record(score: ScoredEpoch): SampleRecord {
  return {
    version: 1,
    eval_set: 'set',
    task: 't',
    sample_id: score.sampleId,
    epoch: score.epoch,
    input: 'q',
    target: 't',
    messages: [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: 'a' },
    ],
    output: 'a',
    score: { value: score.value, answer: 'a' },
    scorer: 'match',
    usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 },
    model: 'mockllm/model',
    started_at: '2026-12-01T10:01:00.000Z',
    completed_at: '2026-12-01T10:01:01.000Z',
    worker: { pid: 1, host: 'h' },
    attempt: 1,
  };
}

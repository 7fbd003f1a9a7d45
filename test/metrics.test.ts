import type { ScoreValue } from '../src/definition/types';
import { computeMetrics, std, valueToFloat, type ScalarValue } from '../src/core/metrics';
import { isReducerName, parseReducer, reduceEpochs, type ReducerName } from '../src/core/reducers';
import { accuracy, stderr, taskMetrics, type ScoredEpoch } from '../src/eval/metrics';

describe('valueToFloat', () => {
  // Inspect's value_to_float(): its constants, then yes/no words and numeric strings, else 0.
  it.each<[ScalarValue, number]>([
    ['C', 1],
    ['I', 0],
    ['P', 0.5],
    ['N', 0],
    [0.25, 0.25],
    [0, 0],
    ['Yes', 1],
    ['false', 0],
    ['0.3', 0.3],
    [' -1e1 ', -10],
    ['0x10', 0],
    ['inf', 0],
    ['', 0],
    ['junk', 0],
  ])('%j -> %d', (value, float) => {
    expect(valueToFloat(value)).toBe(float);
  });
});

describe('accuracy and stderr', () => {
  // stderr by hand: mean m, variance sum((x - m)^2) / (n - 1), stderr sqrt(variance) / sqrt(n).
  it.each<[number[], number, number]>([
    [[], 0, 0],
    [[1], 1, 0],
    [[1, 1, 1], 1, 0],
    // m 0.5, variance (0.25 + 0.25) / 1 = 0.5, stderr sqrt(0.5) / sqrt(2) = 0.5
    [[0, 1], 0.5, 0.5],
    // m 0.75, variance (3 * 0.0625 + 0.5625) / 3 = 0.25, stderr 0.5 / 2 = 0.25
    [[1, 0, 1, 1], 0.75, 0.25],
    // m 0.5, variance (0.25 + 0.0625 + 0 + 0.0625 + 0.25) / 4 = 0.15625, stderr 0.395285 / 2.236068
    [[0, 0.25, 0.5, 0.75, 1], 0.5, 0.1767767],
  ])('%j: accuracy %d, stderr %d', (values, mean, error) => {
    expect(accuracy(values)).toBeCloseTo(mean, 7);
    expect(stderr(values)).toBeCloseTo(error, 7);
  });
});

describe('taskMetrics', () => {
  it('averages epochs per sample before computing accuracy and stderr', () => {
    const scores: ScoredEpoch[] = [
      { sampleId: 'a', epoch: 1, value: 'C' },
      { sampleId: 'a', epoch: 2, value: 'I' },
      { sampleId: 'a', epoch: 3, value: 'C' },
      { sampleId: 'b', epoch: 1, value: 'C' },
      { sampleId: 'b', epoch: 2, value: 'C' },
      { sampleId: 'b', epoch: 3, value: 'C' },
      { sampleId: 1, epoch: 1, value: 'I' },
      { sampleId: '1', epoch: 1, value: 'C' },
    ];
    // Per sample: a 2/3, b 1, 1 (number) 0, "1" (string) 1. Mean (2/3 + 1 + 0 + 1) / 4 = 2/3.
    // Deviations squared: 0, 1/9, 4/9, 1/9 -> variance (6/9) / 3 = 2/9; stderr sqrt(2/9) / 2.
    const metrics = taskMetrics(scores);
    expect(metrics.samples_scored).toBe(4);
    expect(metrics.accuracy).toBeCloseTo(2 / 3, 10);
    expect(metrics.stderr).toBeCloseTo(Math.sqrt(2 / 9) / 2, 10);
  });

  it('does not weight a sample by its epoch count', () => {
    // Flattened, this would be 3/4; per sample it is (1 + 0) / 2.
    const metrics = taskMetrics([
      { sampleId: 'a', epoch: 1, value: 'C' },
      { sampleId: 'a', epoch: 2, value: 'C' },
      { sampleId: 'a', epoch: 3, value: 'C' },
      { sampleId: 'b', epoch: 1, value: 'I' },
    ]);
    expect(metrics.accuracy).toBe(0.5);
    expect(metrics.stderr).toBeCloseTo(0.5, 10);
    expect(metrics.samples_scored).toBe(2);
  });

  it('counts a sample epoch recorded twice once, the last record winning', () => {
    const metrics = taskMetrics([
      { sampleId: 'a', epoch: 1, value: 'I' },
      { sampleId: 'a', epoch: 1, value: 'C' },
      { sampleId: 'a', epoch: 2, value: 'C' },
    ]);
    expect(metrics).toMatchObject({ accuracy: 1, stderr: 0, samples_scored: 1 });
  });

  it('takes numeric scores as they are', () => {
    const metrics = taskMetrics([
      { sampleId: 'a', epoch: 1, value: 0.5 },
      { sampleId: 'a', epoch: 2, value: 1 },
      { sampleId: 'b', epoch: 1, value: 0.25 },
    ]);
    // Per sample: 0.75 and 0.25; mean 0.5, variance (0.0625 * 2) / 1, stderr 0.353553 / 1.414214.
    expect(metrics.accuracy).toBeCloseTo(0.5, 10);
    expect(metrics.stderr).toBeCloseTo(0.25, 10);
  });

  it('has no values with nothing scored (Inspect: NaN)', () => {
    expect(taskMetrics([])).toMatchObject({ accuracy: null, stderr: null, samples_scored: 0 });
  });

  it("names the reducer, and carries each reducer's scores with the first as its headline", () => {
    const scores: ScoredEpoch[] = [
      { sampleId: 'a', epoch: 1, value: 'I' },
      { sampleId: 'a', epoch: 2, value: 'C' },
      { sampleId: 'b', epoch: 1, value: 'I' },
      { sampleId: 'b', epoch: 2, value: 'I' },
    ];
    expect(taskMetrics(scores)).toEqual({
      accuracy: 0.25,
      stderr: 0.25,
      reducer: 'mean',
      samples_scored: 2,
      samples_unscored: 0,
      scores: [
        {
          reducer: 'mean',
          samples_scored: 2,
          samples_unscored: 0,
          metrics: { accuracy: 0.25, stderr: 0.25 },
        },
      ],
    });
    const metrics = taskMetrics(scores, { reducers: ['max', 'mean'], metrics: ['mean'] });
    expect(metrics).toMatchObject({ mean: 0.5, reducer: 'max' });
    expect(metrics.scores.map((s) => [s.reducer, s.metrics])).toEqual([
      ['max', { mean: 0.5 }],
      ['mean', { mean: 0.25 }],
    ]);
  });
});

describe('reduceEpochs', () => {
  // Inspect's semantics, by hand; test/reducers-inspect.test.ts checks them against Inspect.
  it.each<[ReducerName, ScoreValue[], ScoreValue]>([
    ['mean', ['C', 'I', 'C', 'C'], 0.75],
    ['median', [0.1, 0.9, 0.5, 0.6], 0.55],
    ['median', ['I', 'C', 'C'], 1],
    ['mode', ['I', 'C', 'C'], 'C'],
    ['mode', ['I', 'C'], 'I'],
    ['max', [0.5, 'C', 1], 'C'],
    ['at_least_2', ['C', 'I', 'C'], 1],
    ['at_least_3', ['C', 'I', 'C'], 0],
    // 1 - (1 - 2/2)(1 - 2/3): one wrong of three, two drawn.
    ['pass_at_2', ['C', 'I', 'C'], 1],
    ['pass_at_1', ['C', 'I', 'I', 'I'], 0.25],
    ['pass_at_2', ['C', 'I', 'I', 'I'], 0.5],
    ['pass_at_3', ['C', 'C'], NaN],
  ])('%s of %j is %j', (reducer, values, expected) => {
    const reduced = reduceEpochs(reducer, values);
    if (Number.isNaN(expected)) expect(reduced).toBeNaN();
    else if (typeof expected === 'number') expect(reduced).toBeCloseTo(expected, 12);
    else expect(reduced).toBe(expected);
  });

  it('reads reducer names as Inspect does', () => {
    expect(parseReducer('pass_at_12')).toEqual({ type: 'pass_at', k: 12 });
    expect(parseReducer('median')).toEqual({ type: 'median' });
    expect(['mean', 'pass_at_2', 'at_least_1'].every(isReducerName)).toBe(true);
    expect(
      ['pass_at_0', 'pass_at', 'at_least_x', 'majority', 'mean_2', 3].some(isReducerName),
    ).toBe(false);
  });
});

describe('metrics', () => {
  it('std divides by n - 1, stderr is std over root n, both 0 below two values', () => {
    expect(std([0, 1])).toBeCloseTo(Math.SQRT1_2, 12);
    expect(stderr([0, 1])).toBeCloseTo(0.5, 12);
    expect(std([0.3])).toBe(0);
  });

  it('each is NaN over no value, as Inspect reports a metric with nothing scored', () => {
    expect(computeMetrics(['accuracy', 'std'], [])).toEqual([
      ['accuracy', NaN],
      ['std', NaN],
    ]);
  });
});

/**
 * A task's scores as Inspect AI computes them: each sample's epochs reduced to one score by each
 * of the task's reducers (`core/reducers.ts`), then the task's metrics (`core/metrics.ts`) over
 * the samples each reducer scored. Pure.
 */

import { computeMetrics, valueToFloat, type MetricName } from '../core/metrics';
import {
  DEFAULT_SCORING,
  reduceEpochs,
  type ReducedValue,
  type ReducerName,
  type Scoring,
} from '../core/reducers';
import type { ScoreValue } from '../definition/types';

export { accuracy, stderr } from '../core/metrics';

export { DEFAULT_SCORING, type Scoring } from '../core/reducers';

/** One scored sample epoch. */
export interface ScoredEpoch {
  sampleId: string | number;
  epoch: number;
  value: ScoreValue;
}

/** Metric values by name, in the task's order; null where Inspect has NaN (nothing scored). */
export type MetricValues = { [M in MetricName]?: number | null };

/** What one reducer made of a task. */
export interface ReducerScores {
  reducer: ReducerName;
  /** Samples the reducer gave a score. */
  samples_scored: number;
  /** Samples it could not (`pass_at_k` with fewer than k epochs recorded). */
  samples_unscored: number;
  metrics: MetricValues;
}

/**
 * A task's scores: every reducer's, in the task's order, and the first one's flattened as the
 * headline (`accuracy`, `stderr`, ... at the top, as `steward status` and scripts read them).
 */
export interface TaskMetrics extends MetricValues {
  reducer: ReducerName;
  samples_scored: number;
  samples_unscored: number;
  scores: ReducerScores[];
}

/** A sample's score after its epochs were reduced; NaN: unscored. */
export interface SampleReduction {
  sampleId: string | number;
  value: ReducedValue;
}

/**
 * Each sample's epochs reduced to one score, samples in the order first seen, each sample's
 * epochs in epoch order (the order a tie of `mode` or `max` goes by). A sample epoch listed twice
 * counts once (the last listed wins), so a result recorded again after a retry cannot skew it.
 * Sample 1 and sample "1" are different samples.
 */
export function reduceSamples(scores: ScoredEpoch[], reducer: ReducerName): SampleReduction[] {
  const bySample = new Map<
    string,
    { sampleId: string | number; epochs: Map<number, ScoreValue> }
  >();
  for (const score of scores) {
    const key = `${typeof score.sampleId}:${score.sampleId}`;
    const sample = bySample.get(key) ?? { sampleId: score.sampleId, epochs: new Map() };
    sample.epochs.set(score.epoch, score.value);
    bySample.set(key, sample);
  }
  return [...bySample.values()].map(({ sampleId, epochs }) => {
    const values = [...epochs.entries()].sort(([a], [b]) => a - b).map(([, value]) => value);
    return { sampleId, value: reduceEpochs(reducer, values) };
  });
}

/** One reducer's scores of a task. */
export function reducerScores(
  scores: ScoredEpoch[],
  reducer: ReducerName,
  metrics: readonly MetricName[],
): ReducerScores {
  const values = reduceSamples(scores, reducer)
    .map((sample) => valueToFloat(sample.value))
    .filter((value) => !Number.isNaN(value));
  const samples = new Set(scores.map((s) => `${typeof s.sampleId}:${s.sampleId}`)).size;
  return {
    reducer,
    samples_scored: values.length,
    samples_unscored: samples - values.length,
    metrics: Object.fromEntries(
      computeMetrics(metrics, values).map(([name, value]) => [
        name,
        Number.isNaN(value) ? null : value,
      ]),
    ),
  };
}

/** A task's scores under its scoring (by default Inspect's: the mean of epochs, accuracy, stderr). */
export function taskMetrics(
  scores: ScoredEpoch[],
  scoring: Scoring = DEFAULT_SCORING,
): TaskMetrics {
  const all = scoring.reducers.map((reducer) => reducerScores(scores, reducer, scoring.metrics));
  const [headline] = all;
  return {
    ...headline.metrics,
    reducer: headline.reducer,
    samples_scored: headline.samples_scored,
    samples_unscored: headline.samples_unscored,
    scores: all,
  };
}

/**
 * A summary's scores by reducer. One written before reducers were configurable has only the
 * mean's accuracy and stderr.
 */
export function summaryScores(metrics: TaskMetrics): ReducerScores[] {
  if (Array.isArray(metrics.scores)) return metrics.scores;
  return [
    {
      reducer: 'mean',
      samples_scored: metrics.samples_scored,
      samples_unscored: 0,
      metrics: { accuracy: metrics.accuracy, stderr: metrics.stderr },
    },
  ];
}

/** The scoring a task's scores were computed under, read back from them. */
export function scoringOf(metrics: Pick<TaskMetrics, 'scores'>): Scoring | undefined {
  const [first] = metrics.scores;
  if (!first) return undefined;
  return {
    reducers: metrics.scores.map((s) => s.reducer),
    metrics: Object.keys(first.metrics) as MetricName[],
  };
}

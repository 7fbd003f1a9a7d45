/**
 * Task metrics as Inspect AI computes them for `match`-style scorers: epochs reduced per sample
 * by their mean, then accuracy and its standard error over samples.
 */

import type { ScoreValue } from '../definition/types';

/** One scored sample epoch. */
export interface ScoredEpoch {
  sampleId: string | number;
  epoch: number;
  value: ScoreValue;
}

export interface TaskMetrics {
  /** Mean score over samples; 0 when none was scored (see `samples_scored`). */
  accuracy: number;
  /** Standard error of that mean; 0 for fewer than two samples. */
  stderr: number;
  samples_scored: number;
}

/** `C` is 1, `I` is 0, a number is itself. */
export function scoreToFloat(value: ScoreValue): number {
  if (value === 'C') return 1;
  if (value === 'I') return 0;
  return value;
}

/** The mean; 0 for no values. */
export function accuracy(values: number[]): number {
  if (values.length === 0) return 0;
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** Sample standard deviation (n - 1 denominator) over the square root of n; 0 for n < 2. */
export function stderr(values: number[]): number {
  const n = values.length;
  if (n < 2) return 0;
  const mean = accuracy(values);
  const variance = values.reduce((sum, value) => sum + (value - mean) ** 2, 0) / (n - 1);
  return Math.sqrt(variance) / Math.sqrt(n);
}

/**
 * Accuracy and stderr of a task. Epochs of a sample are averaged first, so a sample run three
 * times counts once, as Inspect's default `mean` reducer does. A sample epoch listed twice counts
 * once (the last listed wins), so a result recorded again after a retry cannot skew the mean.
 */
export function taskMetrics(scores: ScoredEpoch[]): TaskMetrics {
  const bySample = new Map<string, Map<number, number>>();
  for (const score of scores) {
    // Keyed with the type: sample 1 and sample "1" are different samples.
    const key = `${typeof score.sampleId}:${score.sampleId}`;
    const epochs = bySample.get(key) ?? new Map<number, number>();
    epochs.set(score.epoch, scoreToFloat(score.value));
    bySample.set(key, epochs);
  }
  const perSample = [...bySample.values()].map((epochs) => accuracy([...epochs.values()]));
  return {
    accuracy: accuracy(perSample),
    stderr: stderr(perSample),
    samples_scored: perSample.length,
  };
}

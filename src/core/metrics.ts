/**
 * Task metrics with Inspect AI's names and formulas (`inspect_ai/scorer/_metrics/accuracy.py`,
 * `mean.py`, `std.py`, as of 0.3.285), computed over one value per sample (its epochs already
 * reduced, see `reducers.ts`). Pure.
 */
import { z } from 'zod';

/** The one declaration of the metrics a task may name; everything else derives from it. */
export const metricNameSchema = z.enum(['accuracy', 'stderr', 'mean', 'std']);

export type MetricName = z.infer<typeof metricNameSchema>;

/** Inspect's default for a `match`-style scorer. */
export const DEFAULT_METRICS: readonly MetricName[] = ['accuracy', 'stderr'];

/** A score value before it is a number: `C`, `I`, a number, or another of Inspect's strings. */
export type ScalarValue = string | number;

/** Python's float() syntax, as Inspect's `is_finite_number` reads a numeric string. */
const DECIMAL = /^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?\s*$/i;

/**
 * Inspect's `value_to_float()`: `C` 1, `P` 0.5, `I` and `N` 0; numbers as they are (NaN stays
 * NaN: the unscored sentinel); yes/true 1, no/false 0, a numeric string its number; anything
 * else 0.
 */
export function valueToFloat(value: ScalarValue): number {
  if (typeof value === 'number') return value;
  if (value === 'C') return 1;
  if (value === 'P') return 0.5;
  if (value === 'I' || value === 'N') return 0;
  const lower = value.toLowerCase();
  if (lower === 'yes' || lower === 'true') return 1;
  if (lower === 'no' || lower === 'false') return 0;
  // Not JavaScript's Number(): it reads `0x10` and the empty string.
  if (!DECIMAL.test(value)) return 0;
  const number = Number(value);
  return Number.isFinite(number) ? number : 0;
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

/** The mean; 0 for no values (Inspect's `accuracy` and `mean` guard an empty list so). */
export function accuracy(values: number[]): number {
  return values.length === 0 ? 0 : sum(values) / values.length;
}

/** Sample standard deviation, n - 1 denominator (numpy's `ddof=1`); 0 for fewer than two values. */
export function std(values: number[]): number {
  const n = values.length;
  if (n < 2) return 0;
  const mean = accuracy(values);
  return Math.sqrt(sum(values.map((value) => (value - mean) ** 2)) / (n - 1));
}

/**
 * Standard error of the mean by the central limit theorem: `std / sqrt(n)`; 0 for fewer than two
 * values. Inspect's unclustered form: Steward has no `cluster` option.
 */
export function stderr(values: number[]): number {
  return values.length < 2 ? 0 : std(values) / Math.sqrt(values.length);
}

const FORMULAS: Record<MetricName, (values: number[]) => number> = {
  accuracy,
  stderr,
  mean: accuracy,
  std,
};

/**
 * Each named metric over the scored samples' values, in the order named. With no value at all
 * every metric is NaN, as Inspect reports a metric over zero scored samples.
 */
export function computeMetrics(
  names: readonly MetricName[],
  values: number[],
): Array<[MetricName, number]> {
  return names.map((name) => [name, values.length === 0 ? NaN : FORMULAS[name](values)]);
}

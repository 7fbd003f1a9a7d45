/**
 * Epoch reducers with Inspect AI's names and semantics (`inspect_ai/scorer/_reducer/reducer.py`,
 * as of 0.3.285): a sample run for several epochs has one score per epoch, and a reducer makes
 * them the sample's one score, which the task's metrics then take. Pure.
 *
 * As in Inspect, an unscored epoch (NaN) is left out, a sample with nothing left to reduce is
 * unscored (NaN), and the counting reducers (`mode`, `max`) return one of the values as it was
 * (`"C"`, not 1), in epoch order when several tie.
 */
import { z } from 'zod';
import { DEFAULT_METRICS, valueToFloat, type MetricName, type ScalarValue } from './metrics';

const PLAIN = ['mean', 'median', 'mode', 'max'] as const;
/** Reducers that take a `k`, spelt `<name>_<k>` (`pass_at_2`), as Inspect's `create_reducers` reads them. */
const WITH_K = ['pass_at', 'at_least'] as const;

type PlainReducer = (typeof PLAIN)[number];
type KReducer = (typeof WITH_K)[number];
export type ReducerName = PlainReducer | `${KReducer}_${number}`;
export type Reducer = { type: PlainReducer } | { type: KReducer; k: number };

const K_NAME = new RegExp(`^(${WITH_K.join('|')})_([1-9][0-9]*)$`);

export function isReducerName(value: unknown): value is ReducerName {
  return (
    typeof value === 'string' &&
    ((PLAIN as readonly string[]).includes(value) || K_NAME.test(value))
  );
}

const unknownReducer = (issue: { input?: unknown }): string =>
  issue.input === undefined
    ? 'required'
    : `unknown reducer; expected ${PLAIN.join(', ')}, ${WITH_K.map((name) => `${name}_<k>`).join(' or ')}`;

/** The one declaration of the reducer names; everything else derives from it. */
export const reducerNameSchema = z.custom<ReducerName>(isReducerName, { error: unknownReducer });

/** A reducer or a list of them, as Inspect's `Epochs(reducer=...)` takes them. */
export const reducerSpecSchema = z.union([reducerNameSchema, z.array(reducerNameSchema).min(1)], {
  error: unknownReducer,
});

/** How a task's scores are summarised: its epochs reducers and its metrics, each in order. */
export interface Scoring {
  /** @default ['mean'] */
  reducers: readonly ReducerName[];
  /** @default ['accuracy', 'stderr'] */
  metrics: readonly MetricName[];
}

/** Inspect's default: the mean of the epochs, then accuracy and stderr. */
export const DEFAULT_SCORING: Scoring = { reducers: ['mean'], metrics: DEFAULT_METRICS };

export function parseReducer(name: ReducerName): Reducer {
  const match = K_NAME.exec(name);
  if (match) return { type: match[1] as KReducer, k: Number(match[2]) };
  return { type: name as PlainReducer };
}

/**
 * The epochs a reducer needs, as Inspect's `validate_reducer` refuses a `k` above the task's
 * epochs; undefined for the reducers without one.
 */
export function reducerEpochsNeeded(name: ReducerName): number | undefined {
  const reducer = parseReducer(name);
  return 'k' in reducer ? reducer.k : undefined;
}

/** What a reducer makes of a sample's epochs: one of the values, a number, or NaN (unscored). */
export type ReducedValue = ScalarValue;

/** A sample's epoch scores, in epoch order, reduced to one. */
export function reduceEpochs(name: ReducerName, values: ScalarValue[]): ReducedValue {
  const reducer = parseReducer(name);
  // `_is_reducible`: only NaN, the unscored sentinel, is left out (a string is never NaN).
  const kept = values.filter((value) => !(typeof value === 'number' && Number.isNaN(value)));
  if (kept.length === 0) return NaN;
  const floats = kept.map(valueToFloat);
  switch (reducer.type) {
    case 'mean':
      return floats.reduce((total, value) => total + value, 0) / floats.length;
    case 'median':
      return median(floats);
    case 'mode':
      return mode(kept);
    case 'max':
      return maxValue(kept);
    case 'at_least':
      return floats.filter((value) => value >= 1).length >= reducer.k ? 1 : 0;
    case 'pass_at':
      return passAt(floats, reducer.k);
  }
}

/** `statistics.median`: the middle value, or the mean of the two middle ones. */
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** `Counter.most_common(1)`: the most frequent value; of a tie, the one seen first. */
function mode(values: ScalarValue[]): ScalarValue {
  const counts = new Map<ScalarValue, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  let best: ScalarValue = values[0];
  for (const [value, count] of counts) {
    if (count > (counts.get(best) ?? 0)) best = value;
  }
  return best;
}

/** `max(scores, key=value_to_float)`: the value that counts most; of a tie, the one seen first. */
function maxValue(values: ScalarValue[]): ScalarValue {
  let best = values[0];
  for (const value of values) {
    if (valueToFloat(value) > valueToFloat(best)) best = value;
  }
  return best;
}

/**
 * The chance that at least one of k epochs drawn from these passes (value >= 1), by the unbiased
 * estimator of Chen et al. 2021: `1 - prod(1 - k / (n - c + 1 .. n))`. Fewer than k epochs: NaN.
 */
function passAt(values: number[], k: number): number {
  const total = values.length;
  const correct = values.filter((value) => value >= 1).length;
  if (total < k) return NaN;
  if (total - correct < k) return 1;
  let product = 1;
  for (let i = total - correct + 1; i <= total; i++) product *= 1 - k / i;
  return 1 - product;
}

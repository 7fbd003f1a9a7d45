/**
 * The `f1` scorer: SQuAD's token F1 with Inspect AI's normalisation
 * (`inspect_ai/scorer/_classification.py`), so a sample scores the same number here as there.
 */

import type { Scorer } from '../definition/types';

export interface F1Options {
  /** Words dropped from both sides before counting (normalised as the text is). @default none */
  stop_words?: string[];
}

/**
 * Inspect's `f1()`: the best F1, over the targets, between the completion's words and a
 * target's, rounded to 2 places. A target with no words once normalised is skipped.
 */
export function f1(options: F1Options = {}): Scorer {
  const stopWords = options.stop_words?.map(normalizeToken);
  return async (state, targets) => {
    const answer = state.output?.completion ?? '';
    const value = maxF1(answer, targets, stopWords);
    return answer.trim() === '' ? { value, answer, reason: 'no_response' } : { value, answer };
  };
}

/** The best F1 of `answer` against `targets`, rounded to 2 places as Python's `round` does. */
export function maxF1(answer: string, targets: string[], stopWords?: string[]): number {
  let best = 0;
  const answerWords = wordCounts(answer, stopWords);
  for (const target of targets) {
    const targetWords = wordCounts(target, stopWords);
    if (targetWords.size > 0) best = Math.max(best, f1Of(answerWords, targetWords));
  }
  return roundHalfEven(best, 2);
}

function f1Of(answer: Map<string, number>, target: Map<string, number>): number {
  let common = 0;
  for (const [word, count] of answer) common += Math.min(count, target.get(word) ?? 0);
  const total = (counts: Map<string, number>) => [...counts.values()].reduce((a, b) => a + b, 0);
  const precision = answer.size === 0 ? 1 : common / total(answer);
  const recall = target.size === 0 ? 1 : common / total(target);
  return precision === 0 && recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
}

function wordCounts(text: string, stopWords?: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const word of normalizeText(text, stopWords).split(/\s+/)) {
    if (word) counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return counts;
}

/**
 * Inspect's `_normalize`: split on spaces and hyphens; each token case-folded, stripped of
 * punctuation (a number keeps its point), a number written as Python writes a float (`3` as
 * `3.0`), articles dropped; stop words left out.
 */
export function normalizeText(text: string, stopWords: string[] = []): string {
  return text
    .split(/ |-/)
    .map(normalizeToken)
    .filter((token) => !stopWords.includes(token) && token.trim() !== '')
    .join(' ')
    .trim();
}

function normalizeToken(token: string): string {
  let text = removePunctuation(casefold(token));
  if (isFiniteNumber(text)) text = pythonFloat(Number(pyFloatText(text)));
  text = text.replace(/(?<![\p{L}\p{N}_])(a|an|the)(?![\p{L}\p{N}_])/gu, ' ');
  return text
    .split(PY_WHITESPACE_RUN)
    .filter((part) => part)
    .join(' ');
}

/** Python's `string.punctuation`. */
const PUNCTUATION = /[!-/:-@[-`{-~]/g;
const PY_WHITESPACE_RUN = /\s+/u;

function removePunctuation(text: string): string {
  if (isFiniteNumber(text)) return text;
  // Punctuation around a number ("(3.14)", "3.14.") hides it from the check above.
  const stripped = text.replace(/^[\s!-/:-@[-`{-~]+|[\s!-/:-@[-`{-~]+$/g, '');
  if (isFiniteNumber(stripped)) return stripped;
  return text.replace(PUNCTUATION, '');
}

/** Python's `float(text)` syntax: surrounding whitespace, `_` between digits. */
const PY_FLOAT = /^[+-]?(\d(_?\d)*(\.(\d(_?\d)*)?)?|\.\d(_?\d)*)(e[+-]?\d(_?\d)*)?$/i;

function pyFloatText(text: string): string {
  return text.trim().replaceAll('_', '');
}

/** Inspect's `is_finite_number`: Python's `float()` reads it, and not as inf or nan. */
function isFiniteNumber(text: string): boolean {
  const trimmed = text.trim();
  return PY_FLOAT.test(trimmed) && Number.isFinite(Number(pyFloatText(trimmed)));
}

/** Python's `str(float)`: the shortest round-trip digits, exponent outside 1e-4 to 1e16. */
export function pythonFloat(value: number): string {
  if (Object.is(value, -0)) return '-0.0';
  if (value === 0) return '0.0';
  const [mantissa, exponentText] = value.toExponential().split('e');
  const exponent = Number(exponentText);
  if (exponent < -4 || exponent >= 16) {
    const sign = exponent < 0 ? '-' : '+';
    return `${mantissa}e${sign}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  const digits = mantissa.replace('-', '').replace('.', '');
  const sign = value < 0 ? '-' : '';
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0');
  const fraction = digits.slice(exponent + 1) || '0';
  return `${sign}${whole}.${fraction}`;
}

/** Python's `round(value, places)`: an exact tie goes to the even digit. */
function roundHalfEven(value: number, places: number): number {
  const scale = 10 ** places;
  const exact = value.toFixed(places + 18);
  const tail = exact.slice(exact.indexOf('.') + 1 + places);
  if (/^50*$/.test(tail)) {
    const down = Math.floor(value * scale);
    return (down % 2 === 0 ? down : down + 1) / scale;
  }
  return Number(value.toFixed(places));
}

/** Python's `str.casefold`, near enough: upper-casing first folds `ß` to `ss` as casefold does. */
function casefold(text: string): string {
  return text.toUpperCase().toLowerCase();
}

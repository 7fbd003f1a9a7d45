/**
 * The built-in scorers (`match`, `includes`, `exact`) with Inspect AI's semantics, so a task
 * scores the same here as under `inspect eval`. Each compares the final completion with every
 * target; any target that matches makes the sample correct.
 */

import { compilePattern } from '../core/vocabulary';
import type { Score, Scorer, TaskState } from '../definition/types';

export interface MatchOptions {
  /** Where the target must appear in the completion. @default 'end' */
  location?: 'begin' | 'end' | 'any' | 'exact';
  /** @default true */
  ignore_case?: boolean;
  /**
   * Compare numbers by value: currency signs, thousands separators and markdown emphasis are
   * dropped and both sides normalised to 5 significant digits, so `1,000` matches `1000` and
   * `42.0` matches `42`. Only applies to targets that are numbers. @default false
   */
  numeric?: boolean;
}

/** Inspect's `match()`: the target at the start, end, anywhere in, or exactly as the completion. */
export function match(options: MatchOptions = {}): Scorer {
  const { location = 'end', ignore_case = true, numeric = false } = options;
  return stringMatchScorer((value, target) =>
    matchString(value, target, location, ignore_case, numeric),
  );
}

/** Inspect's `includes()`: the target appears anywhere in the completion. */
export function includes(options: { ignore_case?: boolean } = {}): Scorer {
  const { ignore_case = true } = options;
  return stringMatchScorer((value, target) => {
    const fold = ignore_case ? casefold : (text: string) => text;
    return [value, fold(value).includes(fold(target))];
  });
}

/** The completion equals a target once case and runs of whitespace are disregarded. */
export function exact(): Scorer {
  const normalise = (text: string) => casefold(text).trim().split(/\s+/).join(' ');
  return stringMatchScorer((value, target) => [value, normalise(value) === normalise(target)]);
}

export interface PatternOptions {
  /**
   * A regular expression (JavaScript's syntax; a leading `(?i)`, `(?s)` or `(?m)`, as Python
   * writes flags, is read as the flag). Its capture groups are the answers; with none, the whole
   * match is.
   */
  pattern: string;
  /** Compare the answer with the targets (and match the pattern) ignoring case. @default true */
  ignore_case?: boolean;
  /** With several groups, every group that matched must equal a target. @default false */
  match_all?: boolean;
}

/**
 * Inspect's `pattern()`: the first match of `pattern` in the completion; correct when its group
 * (any one, or with `match_all` every one that matched) equals a target. With a single group
 * that equals no target, that group is still the answer, to show what was read.
 */
export function pattern(options: PatternOptions): Scorer {
  const { ignore_case = true, match_all = false } = options;
  const regex = compilePattern(options.pattern, ignore_case);
  return async (state, targets) => {
    const completion = state.output?.completion ?? '';
    const found = regex.exec(completion);
    // An empty reply is no response even when a pattern like `(.*)` matches it.
    const empty = completion.trim() === '';
    if (!found) {
      return {
        value: 'I',
        explanation: `The pattern did not match the output: ${completion}`,
        reason: empty ? 'no_response' : 'invalid_response_format',
      };
    }
    const groups = found.length > 1 ? found.slice(1) : [found[0]];
    const fold = (text: string) => (ignore_case ? pyLower(text) : text);
    const folded = targets.map(fold);
    const equalsTarget = (group: string) => folded.includes(fold(group));
    let answer: string | undefined;
    if (match_all) {
      const matched = groups.filter((group): group is string => group !== undefined);
      answer = matched.length > 0 && matched.every(equalsTarget) ? targets.join('') : undefined;
    } else {
      answer = groups.find((group): group is string => group !== undefined && equalsTarget(group));
      // Python's truthiness: an empty group that equals an empty target is still no match.
    }
    const correct = answer !== undefined && answer !== '';
    if (!match_all && answer === undefined && groups.length === 1) answer = groups[0];
    return {
      value: correct ? 'C' : 'I',
      ...(answer !== undefined ? { answer } : {}),
      explanation: completion,
      ...(empty ? { reason: 'no_response' } : {}),
    };
  };
}

/**
 * Inspect's answer patterns (`inspect_ai/_util/pattern.py`, in Python's syntax, which
 * `compilePattern` reads), each reading the last `ANSWER:` of the output: one letter, one
 * word (a trailing full stop or comma left off), or the rest of the last line.
 */
export const ANSWER_PATTERNS = {
  letter: String.raw`(?is)ANSWER\s*:\s*([A-Za-z])(?:[^\w]|\n|$)(?!.*ANSWER\s*:)`,
  word: String.raw`(?is)ANSWER\s*:\s*(\S+?)(?=[.,;:!?]?\s*(?:\n|$))(?!.*ANSWER\s*:)`,
  line: String.raw`(?i)ANSWER\s*:\s*([^\n]+)\s*\Z`,
} as const;

export type AnswerKind = keyof typeof ANSWER_PATTERNS;

/** Inspect's `answer()`: `pattern` with the answer pattern of `kind`. */
export function answer(kind: AnswerKind): Scorer {
  return pattern({ pattern: ANSWER_PATTERNS[kind] });
}

/** Python's `str.lower`, near enough for comparing answers. */
function pyLower(text: string): string {
  return text.toLowerCase();
}

/** Returns the answer the check extracted from the completion, and whether it matched. */
type Check = (value: string, target: string) => [answer: string, matched: boolean];

function stringMatchScorer(check: Check): Scorer {
  return async (state: TaskState, targets: string[]): Promise<Score> => {
    const completion = state.output?.completion ?? '';
    let answer: string | undefined;
    for (const target of targets) {
      const [extracted, matched] = check(completion, target);
      answer = extracted;
      if (matched) return { value: 'C', answer, explanation: completion };
    }
    return { value: 'I', answer, explanation: completion };
  };
}

function matchString(
  value: string,
  target: string,
  location: NonNullable<MatchOptions['location']>,
  ignoreCase: boolean,
  numeric: boolean,
): [string, boolean] {
  let v = value.trim();
  let t = target.trim();
  const answer = v;
  if (ignoreCase) {
    v = casefold(v);
    t = casefold(t);
  }
  if (numeric) t = stripNumericPunctuation(t);
  if (numeric && parseNumber(t) !== undefined) {
    // Numbers are compared as numbers, never as text: "25" ends with "5" but 25 is not 5.
    t = normalizeNumber(t);
    const words = stripNumericPunctuation(v).split(/\s+/);
    if (location === 'any') {
      const found = words.filter(isNumberToken).map((word) => normalizeNumber(numberToken(word)));
      return found.includes(t) ? [t, true] : [answer, false];
    }
    const extracted =
      location === 'exact'
        ? normalizeNumber(stripNumericPunctuation(v))
        : firstNumber(location === 'end' ? words.reverse() : words);
    return [extracted, extracted === t];
  }
  v = stripPunctuation(v);
  t = stripPunctuation(t);
  switch (location) {
    case 'begin':
      return [answer, v.startsWith(t)];
    case 'end':
      return [answer, v.endsWith(t)];
    case 'exact':
      return [answer, v === t];
    case 'any':
      return [answer, v.includes(t)];
  }
}

/** Python's `str.casefold`, near enough: upper-casing first folds `ß` to `ss` as casefold does. */
function casefold(text: string): string {
  return text.toUpperCase().toLowerCase();
}

/** Python's `string.whitespace + string.punctuation`, stripped from both ends. */
function stripPunctuation(text: string): string {
  return text.replace(/^[\s!-/:-@[-`{-~]+|[\s!-/:-@[-`{-~]+$/g, '');
}

/**
 * Drops currency signs, thousands separators and markdown emphasis (`*`, `_`), and any `.` not
 * followed by a digit (a full stop, not a decimal point).
 */
function stripNumericPunctuation(text: string): string {
  return text.replace(/[$£€,*_]/g, '').replace(/\.(?!\d)/g, '');
}

/** Python's `float()` syntax, finite values only. */
const NUMBER_PATTERN = /^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i;

function parseNumber(text: string): number | undefined {
  if (!NUMBER_PATTERN.test(text)) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}

/** Punctuation that sticks to a number in prose (`42!`, `(42)`); `%` is not: 60% is not 60. */
const TOKEN_EDGE = /^[!?:;()[\]{}'"`~<=>@#^&|]+|[!?:;()[\]{}'"`~<=>@#^&|]+$/g;

function numberToken(word: string): string {
  const stripped = word.replace(TOKEN_EDGE, '');
  return stripped !== word && parseNumber(stripped) !== undefined ? stripped : word;
}

function isNumberToken(word: string): boolean {
  return parseNumber(word) !== undefined || parseNumber(word.replace(TOKEN_EDGE, '')) !== undefined;
}

function firstNumber(words: string[]): string {
  const word = words.find(isNumberToken);
  return word === undefined ? '' : normalizeNumber(numberToken(word));
}

/** Python's `format(float(text), '.5g')`; text that is not a number is returned unchanged. */
function normalizeNumber(text: string): string {
  const value = parseNumber(text);
  return value === undefined ? text : formatSignificant(value, 5);
}

/** Python's `'g'` format: fixed notation unless the exponent is < -4 or >= precision. */
export function formatSignificant(value: number, precision: number): string {
  const [mantissa, exponentText] = value.toExponential(precision - 1).split('e');
  const exponent = Number(exponentText);
  if (exponent < -4 || exponent >= precision) {
    const sign = exponent < 0 ? '-' : '+';
    return `${trimZeros(mantissa)}e${sign}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  return trimZeros(value.toFixed(precision - 1 - exponent));
}

function trimZeros(text: string): string {
  return text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
}

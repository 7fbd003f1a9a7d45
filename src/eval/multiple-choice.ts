/**
 * The `multiple_choice` solver and the `choice` scorer that reads what it recorded, with Inspect
 * AI's semantics (`inspect_ai/solver/_multiple_choice.py`, `scorer/_choice.py`). The templates
 * are Steward's own words; the `ANSWER: X` convention carries over.
 */

import { createHash } from 'node:crypto';
import { MAX_CHOICES, validChoiceTemplate } from '../core/vocabulary';
import type { Choice, Score, Scorer, Solver, TaskState } from '../definition/types';
import { formatTemplate, generate, userPrompt, withUserPrompt } from './solvers';

const SINGLE_ANSWER = `Choose the one correct answer to the multiple choice question below. Reply with nothing but a line of the form 'ANSWER: $LETTER' (leave out the quotes), where LETTER is one of {letters}.

{question}

{choices}`;

const SINGLE_ANSWER_COT = `Choose the one correct answer to the multiple choice question below. Reason it through step by step first; then end your reply with a last line of the form 'ANSWER: $LETTER' (leave out the quotes), where LETTER is one of {letters}.

{question}

{choices}`;

const MULTIPLE_ANSWER = `Choose every correct answer to the multiple choice question below: more than one may be. Reply with nothing but a line of the form 'ANSWER: $LETTERS' (leave out the quotes), where LETTERS is one or more of {letters}.

{question}

{choices}`;

const MULTIPLE_ANSWER_COT = `Choose every correct answer to the multiple choice question below: more than one may be. Reason it through step by step first; then end your reply with a last line of the form 'ANSWER: $LETTERS' (leave out the quotes), where LETTERS is one or more of {letters}.

{question}

{choices}`;

export interface MultipleChoiceOptions {
  /**
   * The prompt, with `{question}` and `{choices}` (and optionally `{letters}`: `A,B,C`).
   * @default one of Steward's four, by `cot` and `multiple_correct`
   */
  template?: string;
  /** Ask for reasoning before the answer (only when `template` is unset). @default false */
  cot?: boolean;
  /** The answer may name several letters. @default false */
  multiple_correct?: boolean;
  /**
   * Present the choices in a shuffled order. `true` shuffles with seed 0; a number is the seed.
   * The order depends on the seed and the sample's id only, so every epoch and every relaunch
   * sees the same one. @default false
   */
  shuffle?: boolean | number;
  max_tokens?: number;
}

/** `A` for 0, `B` for 1, ... `Z` for 25; past Z there are no letters. */
export function answerCharacter(index: number): string {
  if (index < 0 || index >= MAX_CHOICES) {
    throw new Error(`choice ${index + 1} has no letter: at most ${MAX_CHOICES} choices (A to Z)`);
  }
  return String.fromCharCode(65 + index);
}

/** `A) first\nB) second...`, in the order given. */
export function answerOptions(choices: Choice[]): string {
  return choices.map((choice, i) => `${answerCharacter(i)}) ${choice.value}`).join('\n');
}

function choicePrompt(question: string, choices: Choice[], template: string): string {
  return formatTemplate(template, {
    choices: answerOptions(choices),
    letters: choices.map((_, i) => answerCharacter(i)).join(','),
    question,
  });
}

/**
 * The order a shuffle shows `n` choices in: position i shows original choice `order[i]`. A
 * Fisher-Yates shuffle driven by a generator seeded from `seed` and the sample's id.
 */
export function shuffleOrder(n: number, seed: number, sampleId: string | number): number[] {
  const digest = createHash('sha256')
    .update(`${seed}:${typeof sampleId}:${sampleId}`)
    .digest();
  const next = mulberry32(digest.readUInt32LE(0));
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/**
 * Inspect's `multiple_choice()`: writes the question and its lettered choices into the user
 * prompt, calls the model, and marks the choices its `ANSWER:` line picked. A shuffled sample
 * is then shown as if unshuffled (the prompt in the dataset's order, the reply as `ANSWER: `
 * with the original letters), as Inspect does; `state.choices` keeps the shuffled order and the
 * `choice` scorer explains it.
 */
export function multipleChoice(options: MultipleChoiceOptions = {}): Solver {
  const { cot = false, multiple_correct = false, shuffle = false } = options;
  if (options.template !== undefined && !validChoiceTemplate(options.template)) {
    throw new Error('a multiple_choice template needs {question} and {choices} placeholders');
  }
  const template = options.template ?? defaultTemplate(cot, multiple_correct);
  const seed = shuffle === false ? undefined : shuffle === true ? 0 : shuffle;
  const call = generate(options.max_tokens === undefined ? {} : { max_tokens: options.max_tokens });
  return async (state, ctx) => {
    if (!state.choices || state.choices.length === 0) {
      throw new Error('the multiple_choice solver needs samples with choices');
    }
    if (state.choices.length > MAX_CHOICES) {
      throw new Error(
        `the sample has ${state.choices.length} choices: multiple_choice letters them A to Z, at most ${MAX_CHOICES}`,
      );
    }
    let choices = state.choices;
    if (seed !== undefined) {
      choices = shuffleOrder(choices.length, seed, state.sample.id).map((i) => choices[i]);
    }
    const question = userPrompt(state);
    const asked = withUserPrompt({ ...state, choices }, () =>
      choicePrompt(question, choices, template),
    );
    const answered = await call(asked, ctx);
    const letters = parseAnswers(
      answered.output?.completion ?? '',
      choices.length,
      multiple_correct,
    );
    if (letters.size === 0) return answered;
    const picked = new Set([...letters].map((letter) => letter.charCodeAt(0) - 65));
    const marked = choices.map((choice, i) => ({ ...choice, correct: picked.has(i) }));
    const result = { ...answered, choices: marked };
    return seed === undefined ? result : pretendUnshuffled(result, question, template);
  };
}

/** The template `multiple_choice` uses when none is given. */
export function defaultTemplate(cot: boolean, multipleCorrect: boolean): string {
  if (multipleCorrect) return cot ? MULTIPLE_ANSWER_COT : MULTIPLE_ANSWER;
  return cot ? SINGLE_ANSWER_COT : SINGLE_ANSWER;
}

/** Inspect's `pretend_we_didnt_shuffle`: the conversation as if the choices were never moved. */
function pretendUnshuffled(state: TaskState, question: string, template: string): TaskState {
  const choices = state.choices ?? [];
  const original = [...choices].sort((a, b) => a.original_position - b.original_position);
  const prompted = withUserPrompt(state, () => choicePrompt(question, original, template));
  const answer = `ANSWER: ${choices
    .filter((choice) => choice.correct === true)
    .map((choice) => answerCharacter(choice.original_position))
    .sort()
    .join(', ')}`;
  const messages = [...prompted.messages];
  const last = messages[messages.length - 1];
  messages[messages.length - 1] = { ...last, content: answer } as typeof last;
  const output = state.output && {
    ...state.output,
    completion: answer,
    message: { ...state.output.message, content: answer },
  };
  return { ...prompted, messages, ...(output ? { output } : {}) };
}

/**
 * Inspect's `parse_answers`: the letters of the reply's last `ANSWER:` line, leniently read
 * (`$B$`, `**B**`, `(B)`, `b.`, `A, C`, `A and C`, `AC`). Letters outside the choices, or more
 * than one without `multipleCorrect`, read as no answer.
 */
export function parseAnswers(
  completion: string,
  choiceCount: number,
  multipleCorrect: boolean,
): Set<string> {
  const text = completion
    .replace(/\$\s*([A-Za-z\d][A-Za-z\d ,]*?)\s*\$/g, '$1')
    .replace(/\*\*\s*([A-Za-z\d][A-Za-z\d ,]*?)\s*\*\*/g, '$1')
    .replace(/(^|[:,])(\s*)\(([A-Za-z\d])\)(?=\s*(?:,|\.|\n|$))/gi, '$1$2$3');
  let matches = [...text.matchAll(/^ANSWER\s*:\s*([A-Za-z\d ,]+)\s*(?:$|\n|\.)/gim)];
  if (matches.length === 0) {
    matches = [...text.matchAll(/ANSWER\s*:\s*([A-Za-z\d ,]+)(?:[^\w]|\n|$|\.)/gi)];
  }
  if (matches.length === 0) return new Set();
  let matched = matches[matches.length - 1][1].trim().replace(/\.+$/, '').toUpperCase();
  const allowed = new Set(Array.from({ length: choiceCount }, (_, i) => letterOf(i)));
  const within = (letters: Set<string>) => [...letters].every((letter) => allowed.has(letter));
  if (multipleCorrect) {
    matched = matched.replaceAll(' AND ', ',').replaceAll(' ', '');
    const byComma = new Set(matched.split(',').filter((token) => token));
    if (within(byComma)) return byComma;
    const byLetter = new Set(matched);
    if (within(byLetter)) return byLetter;
    return new Set();
  }
  const tokens = matched.split(',').filter((token) => token);
  return tokens.length === 1 && allowed.has(tokens[0]) ? new Set(tokens) : new Set();
}

/** Inspect's `answer_character` without the refusal: past Z it numbers (`1` for the 27th). */
function letterOf(index: number): string {
  return index < MAX_CHOICES ? String.fromCharCode(65 + index) : String(index - 25);
}

/** Inspect's `answer_index`: `A` (or `a`) 0, ...; a number n names the (25 + n)th. */
function answerIndex(token: string): number {
  if (/^\p{L}$/u.test(token)) return token.toUpperCase().charCodeAt(0) - 65;
  if (/^\d+$/.test(token)) {
    if (Number(token) === 0) {
      throw new Error(`unexpected multiple choice answer: ${token} (numeric choices start at 1)`);
    }
    return 25 + Number(token);
  }
  throw new Error(`unexpected multiple choice answer: ${token} (must be a letter or number)`);
}

/**
 * Inspect's `choice()`: correct when the choices `multiple_choice` marked are exactly the
 * target's letters (`A`, `AC`, `A, C` or a list). A shuffled sample is scored in the dataset's
 * order, its explanation showing what the model was shown and answered. No choice marked and an
 * empty reply is `N` (no answer).
 */
export function choice(): Scorer {
  return async (state: TaskState, targets: string[]): Promise<Score> => {
    if (!state.choices || state.choices.length === 0) {
      throw new Error('the choice scorer needs samples with choices');
    }
    let choices = state.choices;
    let explanation = state.output?.completion ?? '';
    if (choices.some((c, i) => c.original_position !== i)) {
      const picked = choices.flatMap((c, i) => (c.correct === true ? [letterOf(i)] : []));
      explanation = `The choices were shuffled before the model saw them. It was shown:\n\n${answerOptions(choices)}\nand answered, in that order:\nANSWER: ${picked.join(', ')}`;
      choices = [...choices].sort((a, b) => a.original_position - b.original_position);
    }
    const targetAnswers = targets.flatMap((target) =>
      target
        .replaceAll(',', ' ')
        .split(/\s+/)
        .filter((token) => token)
        .flatMap((token) => (/^\d+$/.test(token) ? [token] : [...token])),
    );
    const positions = targetAnswers.map(answerIndex);
    const beyond = targetAnswers.filter((_, i) => positions[i] >= choices.length);
    if (beyond.length > 0) {
      throw new Error(
        `the choice scorer's target names answers beyond the sample's ${choices.length} choices: ${beyond.join(', ')}`,
      );
    }
    const selected = choices.flatMap((c, i) => (c.correct === true ? [i] : []));
    const answer = selected.map(letterOf).join(', ');
    const wanted = [...positions].sort((a, b) => a - b);
    if (selected.length === wanted.length && selected.every((p, i) => p === wanted[i])) {
      return { value: 'C', answer, explanation };
    }
    if (selected.length === 0) {
      const empty = (state.output?.completion ?? '').trim() === '';
      return empty
        ? { value: 'N', answer: '', explanation, reason: 'no_response' }
        : { value: 'I', answer: '', explanation, reason: 'invalid_response_format' };
    }
    return { value: 'I', answer, explanation };
  };
}

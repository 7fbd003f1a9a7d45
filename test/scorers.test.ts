import type { Sample, Scorer, TaskState } from '../src/definition/types';
import { exact, formatSignificant, includes, match, type MatchOptions } from '../src/eval/scorers';
import { initialState } from '../src/eval/solvers';

const sample: Sample = { id: 1, input: 'question', target: 'unused' };

function stateWith(completion: string): TaskState {
  return {
    ...initialState(sample, 1),
    output: {
      completion,
      message: { role: 'assistant', content: completion },
      usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
      stop_reason: 'stop',
    },
  };
}

const signal = new AbortController().signal;
const ctx = {
  model: { name: 'mockllm/model', generate: () => Promise.reject(new Error('not called')) },
  heartbeat: () => undefined,
  signal,
};

async function score(scorer: Scorer, completion: string, targets: string[]) {
  return scorer(stateWith(completion), targets, ctx);
}

describe('match', () => {
  it.each<[string, MatchOptions, string, string[], 'C' | 'I', string]>([
    // [why, options, completion, targets, value, answer]
    [
      'at the end, trailing punctuation ignored',
      {},
      'The answer is 42.',
      ['42'],
      'C',
      'The answer is 42.',
    ],
    ['not at the end', {}, '42 is the answer', ['42'], 'I', '42 is the answer'],
    ['case ignored by default', {}, 'It is PARIS', ['paris'], 'C', 'It is PARIS'],
    ['case kept on request', { ignore_case: false }, 'It is PARIS', ['paris'], 'I', 'It is PARIS'],
    [
      'at the beginning',
      { location: 'begin' },
      '42 is the answer',
      ['42'],
      'C',
      '42 is the answer',
    ],
    ['anywhere', { location: 'any' }, 'I think 42 is it', ['42'], 'C', 'I think 42 is it'],
    [
      'exact, modulo whitespace and edge punctuation',
      { location: 'exact' },
      '  Paris. ',
      ['paris'],
      'C',
      'Paris.',
    ],
    [
      'exact refuses extra words',
      { location: 'exact' },
      'Paris, France',
      ['paris'],
      'I',
      'Paris, France',
    ],
    ['any target counts', {}, 'forty-two', ['42', 'Forty-Two'], 'C', 'forty-two'],
    ['text "25" ends with "5"', {}, '25', ['5'], 'C', '25'],
  ])('%s', async (_why, options, completion, targets, value, answer) => {
    expect(await score(match(options), completion, targets)).toEqual({
      value,
      answer,
      explanation: completion,
    });
  });

  it.each<[string, MatchOptions, string, string, 'C' | 'I', string]>([
    // [why, options, completion, target, value, answer]
    ['thousands separator and full stop', {}, 'The total is 1,000.', '1000', 'C', '1000'],
    ['separator in the target', {}, 'The total is 1000', '1,000', 'C', '1000'],
    ['trailing zeros', {}, 'x = 42.0', '42', 'C', '42'],
    ['currency and decimals', {}, 'Answer: $1,234.50', '1234.5', 'C', '1234.5'],
    ['parenthesised', {}, 'so (42)', '42', 'C', '42'],
    ['markdown emphasis', {}, 'Final: **42**', '42', 'C', '42'],
    ['numbers compare as numbers', {}, '25', '5', 'I', '25'],
    ['the last number, at the end', {}, 'I got 3 apples and 7 pears', '3', 'I', '7'],
    [
      'the first number, at the beginning',
      { location: 'begin' },
      'I got 3 apples and 7 pears',
      '3',
      'C',
      '3',
    ],
    ['any number, anywhere', { location: 'any' }, 'I got 3 apples and 7 pears', '3', 'C', '3'],
    ['exact number', { location: 'exact' }, '42.00', '42', 'C', '42'],
    ['exact refuses words', { location: 'exact' }, '42 apples', '42', 'I', '42 apples'],
    ['a percentage is not the number', {}, 'It rose 60%', '60', 'I', ''],
    ['five significant digits, as Inspect', {}, '123456', '123457', 'C', '1.2346e+05'],
    [
      'a non-numeric target is matched as text',
      {},
      'The colour is red.',
      'red',
      'C',
      'The colour is red.',
    ],
  ])('numeric: %s', async (_why, options, completion, target, value, answer) => {
    expect(await score(match({ ...options, numeric: true }), completion, [target])).toEqual({
      value,
      answer,
      explanation: completion,
    });
  });

  it('scores a state without output as incorrect', async () => {
    const result = await match()(initialState(sample, 1), ['42'], ctx);
    expect(result).toEqual({ value: 'I', answer: '', explanation: '' });
  });

  it('is incorrect with no targets', async () => {
    expect(await score(match(), '42', [])).toEqual({
      value: 'I',
      answer: undefined,
      explanation: '42',
    });
  });
});

describe('includes', () => {
  it.each<[{ ignore_case?: boolean }, string, string[], 'C' | 'I']>([
    [{}, 'The capital is Paris', ['paris'], 'C'],
    [{ ignore_case: false }, 'The capital is Paris', ['paris'], 'I'],
    [{}, 'The capital is Paris', ['London', 'Paris'], 'C'],
    [{}, 'The capital is Paris', ['Lyon'], 'I'],
    [{}, 'STRASSE', ['straße'], 'C'],
  ])('%j: %s ~ %j', async (options, completion, targets, value) => {
    expect(await score(includes(options), completion, targets)).toEqual({
      value,
      answer: completion,
      explanation: completion,
    });
  });
});

describe('exact', () => {
  it.each<[string, string[], 'C' | 'I']>([
    ['  Hello   World\n', ['hello world'], 'C'],
    ['Hello, World', ['hello world'], 'I'],
    ['Hello World', ['goodbye', 'HELLO WORLD'], 'C'],
    ['Hello World!', ['Hello World'], 'I'],
  ])('%j = %j', async (completion, targets, value) => {
    expect(await score(exact(), completion, targets)).toEqual({
      value,
      answer: completion,
      explanation: completion,
    });
  });
});

describe("formatSignificant (Python's '.5g')", () => {
  it.each([
    [42, '42'],
    [1000, '1000'],
    [12345, '12345'],
    [123456, '1.2346e+05'],
    [99999.5, '1e+05'],
    [0.5, '0.5'],
    [0.0001, '0.0001'],
    [0.00001, '1e-05'],
    [-3.14159265, '-3.1416'],
    [1e21, '1e+21'],
    [0, '0'],
  ])('%d -> %s', (value, text) => {
    expect(formatSignificant(value, 5)).toBe(text);
  });
});

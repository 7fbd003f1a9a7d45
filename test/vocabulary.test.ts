/**
 * The solvers and scorers of the definition vocabulary as tables: no Temporal, no Python. That
 * they agree with Inspect AI case by case is test/vocabulary-inspect.test.ts's question; here,
 * what Steward adds or refuses (the seeded shuffle, letters past Z, the checks at load time, the
 * identity and the log) and the pieces each is built from.
 */
import { multipleChoiceProblems } from '../src/config/steps';
import { validateDefinition } from '../src/config/validate';
import { compilePattern } from '../src/core/vocabulary';
import type { Choice, Model, Sample, SampleContext, TaskState } from '../src/definition/types';
import { f1, normalizeText, pythonFloat } from '../src/eval/f1';
import {
  answerCharacter,
  choice,
  multipleChoice,
  parseAnswers,
  shuffleOrder,
} from '../src/eval/multiple-choice';
import { answer, pattern } from '../src/eval/scorers';
import {
  assistantMessage,
  chainOfThought,
  formatTemplate,
  initialState,
  promptTemplate,
  userMessage,
} from '../src/eval/solvers';
import * as api from '../src/definition/index';
import { namedStep } from '../src/logs/inspect/build';
import { completedSample } from '../src/logs/inspect/samples';
import type { SampleRecord } from '../src/logs/store';

const signal = new AbortController().signal;

/** A model that answers `reply` and remembers what it was asked. */
function replying(reply: string): { model: Model; asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    model: {
      name: 'mockllm/model',
      generate: async (messages) => {
        asked.push(messages[messages.length - 1].content);
        return {
          completion: reply,
          message: { role: 'assistant', content: reply },
          usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 },
          stop_reason: 'stop',
        };
      },
    },
  };
}

function ctxOf(model: Model): SampleContext {
  return { model, heartbeat: () => undefined, signal };
}

function withOutput(state: TaskState, completion: string): TaskState {
  return {
    ...state,
    output: {
      completion,
      message: { role: 'assistant', content: completion },
      usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
      stop_reason: 'stop',
    },
  };
}

const quiz: Sample = {
  id: 'q1',
  input: 'Which is a fruit?',
  target: 'B',
  choices: ['Carrot', 'Apple', 'Leek', 'Kale'],
};

describe('templates', () => {
  it.each<[string, string, Record<string, unknown>, string]>([
    ['a field', 'Hi {name}.', { name: 'Ada' }, 'Hi Ada.'],
    ['an unknown field stays', 'Hi {who}.', {}, 'Hi {who}.'],
    ['a null field stays, as None does', 'Hi {who}.', { who: null }, 'Hi {who}.'],
    ['booleans as Python writes them', '{a}/{b}', { a: true, b: false }, 'True/False'],
    ['numbers', '{n} items', { n: 3 }, '3 items'],
    ['objects as JSON', '{o}', { o: { k: [1] } }, '{"k":[1]}'],
    ['doubled braces are literal', '{{name}} {name}', { name: 'x' }, '{name} x'],
  ])('%s', (_why, template, params, expected) => {
    expect(formatTemplate(template, params)).toBe(expected);
  });
});

describe('prompt solvers', () => {
  const sample: Sample = {
    id: 1,
    input: [
      { role: 'system', content: 'S' },
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'reply' },
      { role: 'user', content: 'second' },
    ],
    target: 'x',
    metadata: { topic: 'maths', prompt: 'hidden' },
  };
  const ctx = ctxOf(replying('unused').model);
  it.each<[string, ReturnType<typeof userMessage>, Array<[string, string]>]>([
    [
      'prompt_template rewrites the last user message; metadata prompt does not hide it',
      promptTemplate('[{topic}] {prompt}'),
      [
        ['system', 'S'],
        ['user', 'first'],
        ['assistant', 'reply'],
        ['user', '[maths] second'],
      ],
    ],
    [
      'user_message appends, with metadata',
      userMessage('About {topic}?'),
      [
        ['system', 'S'],
        ['user', 'first'],
        ['assistant', 'reply'],
        ['user', 'second'],
        ['user', 'About maths?'],
      ],
    ],
    [
      'assistant_message appends, with metadata',
      assistantMessage('On {topic}.'),
      [
        ['system', 'S'],
        ['user', 'first'],
        ['assistant', 'reply'],
        ['user', 'second'],
        ['assistant', 'On maths.'],
      ],
    ],
    [
      'chain_of_thought fills {prompt} only',
      chainOfThought('{topic}: {prompt}, step by step'),
      [
        ['system', 'S'],
        ['user', 'first'],
        ['assistant', 'reply'],
        ['user', '{topic}: second, step by step'],
      ],
    ],
  ])('%s', async (_why, solver, expected) => {
    const state = await solver(initialState(sample, 1), ctx);
    expect(state.messages.map((m) => [m.role, m.content])).toEqual(expected);
    // The sample's own input is not edited: every epoch starts from it.
    expect((sample.input as Array<{ content: string }>)[3].content).toBe('second');
  });

  it('the default chain_of_thought asks for ANSWER: last', async () => {
    const state = await chainOfThought()(initialState({ id: 1, input: 'Q', target: '' }, 1), ctx);
    expect(state.messages[0].content).toMatch(/^\nQ\n\n.*"ANSWER: \$ANSWER"/s);
  });

  it('a prompt solver on a conversation without a user message says so', async () => {
    const state = { ...initialState({ id: 1, input: 'Q', target: '' }, 1), messages: [] };
    await expect(promptTemplate('{prompt}')(state, ctx)).rejects.toThrow(/no user message/);
  });
});

describe('parseAnswers', () => {
  it.each<[string, string, number, boolean, string[]]>([
    ['one letter', 'ANSWER: B', 4, false, ['B']],
    ['lower case, full stop', 'answer: b.', 4, false, ['B']],
    ['markdown bold', 'ANSWER: **B**', 4, false, ['B']],
    ['the last line wins', 'ANSWER: A\nANSWER: D', 4, false, ['D']],
    ['beyond the choices', 'ANSWER: E', 4, false, []],
    ['two without multiple_correct', 'ANSWER: A, B', 4, false, []],
    ['two with multiple_correct', 'ANSWER: A, B', 4, true, ['A', 'B']],
    ['"and" with multiple_correct', 'ANSWER: A and D', 4, true, ['A', 'D']],
    ['run together', 'ANSWER: BD', 4, true, ['B', 'D']],
    ['no ANSWER at all', 'B', 4, false, []],
    ['empty', '', 4, false, []],
  ])('%s', (_why, completion, count, multiple, expected) => {
    expect([...parseAnswers(completion, count, multiple)].sort()).toEqual(expected);
  });
});

describe('multiple_choice', () => {
  it('letters run A to Z and no further', () => {
    expect(answerCharacter(0)).toBe('A');
    expect(answerCharacter(25)).toBe('Z');
    expect(() => answerCharacter(26)).toThrow(
      'choice 27 has no letter: at most 26 choices (A to Z)',
    );
  });

  it('refuses a sample with more than 26 choices when it runs', async () => {
    const wide = { ...quiz, choices: Array.from({ length: 27 }, (_, i) => `c${i}`) };
    await expect(
      multipleChoice()(initialState(wide, 1), ctxOf(replying('ANSWER: A').model)),
    ).rejects.toThrow('the sample has 27 choices: multiple_choice letters them A to Z, at most 26');
  });

  it('refuses a template without {question} and {choices}', () => {
    expect(() => multipleChoice({ template: 'Pick: {choices}' })).toThrow(/\{question\}/);
  });

  it('a shuffle is a permutation fixed by seed and sample, not by epoch', async () => {
    const order = shuffleOrder(4, 1, 'q1');
    expect([...order].sort()).toEqual([0, 1, 2, 3]);
    expect(shuffleOrder(4, 1, 'q1')).toEqual(order);
    // Across 20 ids and seeds, the orders vary (a shuffle that never moves anything is no shuffle).
    const orders = new Set(
      Array.from({ length: 20 }, (_, i) => shuffleOrder(4, i % 2, `s${i}`).join('')),
    );
    expect(orders.size).toBeGreaterThan(5);
    // The same sample asks the same question in every epoch.
    const asked: string[] = [];
    for (const epoch of [1, 2, 3]) {
      const { model, asked: prompts } = replying('ANSWER: A');
      await multipleChoice({ shuffle: 1 })(initialState(quiz, epoch), ctxOf(model));
      asked.push(prompts[0]);
    }
    expect(new Set(asked).size).toBe(1);
  });

  it('a shuffled sample records which original choice the model picked', async () => {
    const order = shuffleOrder(4, 5, quiz.id);
    const appleAt = String.fromCharCode(65 + order.indexOf(1));
    const { model, asked } = replying(`ANSWER: ${appleAt}`);
    const state = await multipleChoice({ shuffle: 5 })(initialState(quiz, 1), ctxOf(model));
    expect(asked[0]).toContain(`${appleAt}) Apple`);
    expect(state.choices?.map((c) => c.original_position)).toEqual(order);
    expect(state.choices?.find((c) => c.correct)?.value).toBe('Apple');
    // Shown as if unshuffled, as Inspect does: the original letter in the reply.
    expect(state.output?.completion).toBe('ANSWER: B');
    const score = await choice()(state, ['B'], ctxOf(model));
    expect(score).toMatchObject({ value: 'C', answer: 'B' });
    expect(score.explanation).toContain(`ANSWER: ${appleAt}`);
  });
});

describe('choice', () => {
  const marked = (picks: number[], order = [0, 1, 2, 3]): Choice[] =>
    order.map((original, i) => ({
      value: `c${original}`,
      original_position: original,
      correct: picks.includes(i),
    }));
  const stateOf = (choices: Choice[] | undefined, completion = 'ANSWER: x') =>
    withOutput({ ...initialState(quiz, 1), choices }, completion);
  const ctx = ctxOf(replying('').model);

  it.each<[string, Choice[], string[], string, 'C' | 'I' | 'N', string]>([
    ['right', marked([1]), ['B'], 'ANSWER: B', 'C', 'B'],
    ['wrong', marked([2]), ['B'], 'ANSWER: C', 'I', 'C'],
    ['several, target as a string', marked([0, 2]), ['AC'], 'ANSWER: A, C', 'C', 'A, C'],
    ['several, target as a list', marked([0, 2]), ['A', 'C'], 'ANSWER: A, C', 'C', 'A, C'],
    ['several, one missing', marked([0]), ['A', 'C'], 'ANSWER: A', 'I', 'A'],
    ['nothing picked, a reply', marked([]), ['B'], 'I think B', 'I', ''],
    ['nothing picked, no reply', marked([]), ['B'], ' ', 'N', ''],
    ['shuffled, mapped back', marked([0], [1, 0, 2, 3]), ['B'], 'ANSWER: B', 'C', 'B'],
  ])('%s', async (_why, choices, targets, completion, value, answerText) => {
    expect(await choice()(stateOf(choices, completion), targets, ctx)).toMatchObject({
      value,
      answer: answerText,
    });
  });

  it('refuses a sample without choices, and a target past them', async () => {
    await expect(choice()(stateOf(undefined), ['A'], ctx)).rejects.toThrow(
      /needs samples with choices/,
    );
    await expect(choice()(stateOf(marked([0])), ['E'], ctx)).rejects.toThrow(
      "the choice scorer's target names answers beyond the sample's 4 choices: E",
    );
  });
});

describe('pattern and answer', () => {
  const ctx = ctxOf(replying('').model);
  const run = (scorer: ReturnType<typeof pattern>, completion: string, targets: string[]) =>
    scorer(withOutput(initialState(quiz, 1), completion), targets, ctx);

  it.each<[string, ReturnType<typeof pattern>, string, string[], string, string | undefined]>([
    ['a group equal to a target', pattern({ pattern: '(\\d+)' }), 'x 42', ['42'], 'C', '42'],
    ['the group shown when wrong', pattern({ pattern: '(\\d+)' }), 'x 41', ['42'], 'I', '41'],
    ['no match, no answer', pattern({ pattern: '(\\d+)' }), 'none', ['42'], 'I', undefined],
    [
      'case kept',
      pattern({ pattern: '(\\w+)$', ignore_case: false }),
      'is Paris',
      ['paris'],
      'I',
      'Paris',
    ],
    [
      'a Python (?i) prefix makes the match ignore case, not the comparison',
      pattern({ pattern: '(?i)is (paris)', ignore_case: false }),
      'IS PARIS',
      // The flag finds it; the comparison still keeps case, as Inspect's does.
      ['paris'],
      'I',
      'PARIS',
    ],
    [
      'match_all: every group',
      pattern({ pattern: '(\\w+)-(\\w+)', match_all: true }),
      'a-a',
      ['a'],
      'C',
      'a',
    ],
    [
      'match_all: one group off',
      pattern({ pattern: '(\\w+)-(\\w+)', match_all: true }),
      'a-b',
      ['a'],
      'I',
      undefined,
    ],
    ['answer letter', answer('letter'), 'So.\nANSWER: c', ['C'], 'C', 'c'],
    ['answer word', answer('word'), 'ANSWER: Yes.', ['yes'], 'C', 'Yes'],
    ['answer line', answer('line'), 'ANSWER: New York', ['New York'], 'C', 'New York'],
  ])('%s', async (_why, scorer, completion, targets, value, answerText) => {
    const score = await run(scorer, completion, targets);
    expect(score.value).toBe(value);
    expect(score.answer).toBe(answerText);
  });

  it('says when the pattern did not match', async () => {
    expect((await run(answer('letter'), 'B', ['B'])).explanation).toBe(
      'The pattern did not match the output: B',
    );
  });
});

describe('compilePattern reads Python’s syntax', () => {
  it.each<[string, string, string, string | null]>([
    ['$ before a final newline', String.raw`(\d+)$`, '42\n', '42'],
    ['$ not before an inner newline', String.raw`(\d+)$`, '42\nx', null],
    ['\\Z only at the very end', String.raw`(\d+)\Z`, '42\n', null],
    ['\\A only at the very start', String.raw`\A(\w+)`, 'ab cd', 'ab'],
    ['(?m) lets $ end a line', String.raw`(?m)(\d+)$`, '4\nx', '4'],
    ['(?s) lets . cross lines', String.raw`(?s)a(.+)z`, 'a\nz', '\n'],
    ['named groups', String.raw`(?P<d>\d)(?P=d)`, 'x 55', '5'],
    ['a $ and a ] first in a class are members', String.raw`([]$]+)`, 'x]$', ']$'],
    ['an escaped Z stays inside a class', String.raw`([\Z]+)`, 'aZZ', 'ZZ'],
  ])('%s', (_why, source, text, group) => {
    expect(compilePattern(source, false).exec(text)?.[1] ?? null).toBe(group);
  });
});

describe('f1', () => {
  it.each<[string, string, string]>([
    ['articles and punctuation go', 'The cat, sat!', 'cat sat'],
    ['numbers as Python floats', 'It is 3 or 1e3', 'it is 3.0 or 1000.0'],
    ['a bracketed number keeps its point', '(3.14)', '3.14'],
    ['hyphens split', 'well-known', 'well known'],
  ])('normalises: %s', (_why, text, expected) => {
    expect(normalizeText(text)).toBe(expected);
  });

  it.each<[number, string]>([
    [3, '3.0'],
    [0.1, '0.1'],
    [1e16, '1e+16'],
    [1.5e-5, '1.5e-05'],
    [123456.789, '123456.789'],
    [-2.5, '-2.5'],
  ])('writes %d as Python does: %s', (value, expected) => {
    expect(pythonFloat(value)).toBe(expected);
  });

  it.each<[string, string, string[], number]>([
    ['exact', 'blue sky', ['the blue sky'], 1],
    ['half the words', 'blue', ['blue sky'], 0.67],
    ['best target', 'an apple', ['red apple', 'apple'], 1],
    ['no overlap', 'grey', ['blue'], 0],
    ['empty reply', '', ['blue'], 0],
  ])('%s', async (_why, completion, targets, value) => {
    const score = await f1()(
      withOutput(initialState(quiz, 1), completion),
      targets,
      ctxOf(replying('').model),
    );
    const reason = completion === '' ? { reason: 'no_response' } : {};
    expect(score).toEqual({ value, answer: completion, ...reason });
  });
});

describe('at load time', () => {
  const file = 'evalset.yaml';
  const errorsOf = (task: Record<string, unknown>) =>
    validateDefinition(
      {
        name: 'v',
        model: 'mockllm/model',
        tasks: [{ name: 'quiz', dataset: [{ input: 'Q', choices: ['a', 'b'] }], ...task }],
      },
      { file },
    ).errors.map((issue) => `${issue.path}: ${issue.message}`);

  it.each<[string, Record<string, unknown>, string[]]>([
    ['multiple_choice with choice is fine', { solver: 'multiple_choice', scorer: 'choice' }, []],
    [
      'every option of multiple_choice',
      {
        solver: [
          { multiple_choice: { cot: true, multiple_correct: true, shuffle: 3, max_tokens: 9 } },
        ],
        scorer: 'choice',
      },
      [],
    ],
    [
      'choice without multiple_choice',
      { scorer: 'choice' },
      [
        'tasks.0.scorer: task quiz: the choice scorer reads the choices multiple_choice marks: add the multiple_choice solver',
      ],
    ],
    [
      'a pattern that is no regex',
      { scorer: { pattern: '([a-z' } },
      [
        'tasks.0.scorer.pattern: task quiz: not a valid regular expression (Invalid regular expression: /([a-z/i: Unterminated character class)',
      ],
    ],
    [
      'a pattern with options that is no regex',
      { scorer: { pattern: { pattern: '*', ignore_case: false } } },
      [
        'tasks.0.scorer.pattern.pattern: task quiz: not a valid regular expression (Invalid regular expression: /*/: Nothing to repeat)',
      ],
    ],
    [
      'a template without placeholders',
      { solver: [{ multiple_choice: { template: 'Pick one' } }], scorer: 'choice' },
      [
        'tasks.0.solver.0.multiple_choice.template: task quiz: a multiple_choice template needs {question} and {choices} placeholders',
      ],
    ],
    [
      'an unknown answer kind',
      { scorer: { answer: 'number' } },
      ['tasks.0.scorer.answer: expected one of "letter", "word", "line"'],
    ],
    ['f1 with stop words', { scorer: { f1: { stop_words: ['of'] } } }, []],
    [
      'every prompt solver',
      {
        solver: [
          { prompt_template: '{prompt}' },
          { user_message: 'u' },
          { assistant_message: 'a' },
          'chain_of_thought',
          { chain_of_thought: '{prompt}!' },
          'generate',
        ],
        scorer: 'f1',
      },
      [],
    ],
  ])('%s', (_why, task, expected) => {
    expect(errorsOf(task)).toEqual(expected);
  });

  it('a module is checked as YAML is: its built-ins carry their names', () => {
    const moduleTask = (task: Record<string, unknown>) =>
      validateDefinition(
        {
          name: 'v',
          model: 'mockllm/model',
          tasks: [{ name: 'quiz', dataset: [{ input: 'Q' }], ...task }],
        },
        { file: 'evalset.ts' },
      );
    expect(moduleTask({ scorer: api.choice() }).errors.map((issue) => issue.path)).toEqual([
      'tasks.0.scorer',
    ]);
    const result = moduleTask({ solver: [api.multipleChoice()], scorer: api.choice() });
    expect(result.errors).toEqual([]);
    expect(multipleChoiceProblems(result.definition!.tasks[0], [{ id: 1 }])).toEqual([
      'task quiz: the multiple_choice solver needs samples with choices; 1 of 1 have none (sample 1 first)',
    ]);
  });

  it('f1 reports mean and stderr by default, as Inspect declares', () => {
    const result = validateDefinition(
      {
        name: 'v',
        model: 'mockllm/model',
        tasks: [{ name: 't', dataset: [{ input: 'Q' }], scorer: 'f1' }],
      },
      { file },
    );
    expect(result.definition?.tasks[0].scoring.metrics).toEqual(['mean', 'stderr']);
  });

  it.each<[string, Array<{ id: string | number; choices?: string[] }>, string[]]>([
    ['all with choices', [{ id: 1, choices: ['a', 'b'] }], []],
    [
      'some without',
      [{ id: 1, choices: ['a'] }, { id: 2 }, { id: 3, choices: [] }],
      [
        'task quiz: the multiple_choice solver needs samples with choices; 2 of 3 have none (sample 2 first)',
      ],
    ],
    [
      'too many',
      [{ id: 'w', choices: Array.from({ length: 30 }, String) }],
      ['task quiz: multiple_choice letters choices A to Z, at most 26; sample w has 30'],
    ],
  ])('samples: %s', (_why, samples, expected) => {
    const task = { name: 'quiz', solver: [{ type: 'multiple_choice' as const, options: {} }] };
    expect(multipleChoiceProblems(task, samples)).toEqual(expected);
  });
});

describe('in the .eval log', () => {
  it('a step written { name: value } carries Inspect’s argument name', () => {
    expect(namedStep({ user_message: 'Hi' })).toEqual({
      name: 'user_message',
      params: { template: 'Hi' },
    });
    expect(namedStep({ answer: 'letter' })).toEqual({
      name: 'answer',
      params: { pattern: 'letter' },
    });
    expect(namedStep({ multiple_choice: { shuffle: 2 } })).toEqual({
      name: 'multiple_choice',
      params: { shuffle: 2 },
    });
  });

  it('a sample shows its choices in the dataset’s order, whatever order the model saw', () => {
    const record: SampleRecord = {
      version: 1,
      eval_set: 'demo',
      task: 'quiz',
      sample_id: 'q1',
      epoch: 1,
      input: 'Which is a fruit?',
      target: 'B',
      messages: [
        { role: 'user', content: 'Which is a fruit?' },
        { role: 'assistant', content: 'ANSWER: B' },
      ],
      output: 'ANSWER: B',
      choices: [
        { value: 'Apple', original_position: 1, correct: true },
        { value: 'Carrot', original_position: 0, correct: false },
      ],
      score: { value: 'C', answer: 'B', explanation: 'shuffled' },
      scorer: 'choice',
      usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 },
      model: 'mockllm/model',
      started_at: '2026-12-01T10:00:00.000Z',
      completed_at: '2026-12-01T10:00:01.000Z',
      worker: { pid: 1, host: 'h' },
      attempt: 1,
    };
    const sample = completedSample(record, 'eval');
    expect(sample.choices).toEqual(['Carrot', 'Apple']);
    expect(sample.scores).toEqual({
      choice: { value: 'C', answer: 'B', explanation: 'shuffled', history: [] },
    });
  });
});

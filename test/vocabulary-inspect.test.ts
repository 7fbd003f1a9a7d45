/**
 * Steward's prompt solvers, `multiple_choice` and the `choice`, `pattern`, `answer` and `f1`
 * scorers against Inspect AI's own: each case runs once through a Steward definition (YAML,
 * loaded as a user's is, run by `runSample`) and once through Inspect's solver and scorer
 * functions on a TaskState (test/helpers/inspect_vocabulary.py, one Python process for the
 * table), both with the same scripted model outputs: right, wrong, malformed, none. The
 * conversation after the solvers, every message list the model was given, the choices as left
 * marked, and the score (value, answer, explanation, reason) must be equal.
 *
 * Steward's prompts are its own words, so where a case uses a default template, Inspect is given
 * Steward's. Explanations Steward words differently are compared after swapping Inspect's
 * sentence for Steward's (`STEWARD_WORDING`): the facts in them must still agree.
 *
 * Needs the Inspect venv (scripts/peers/setup-inspect.sh).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { ChatMessage, Model, ModelOutput } from '../src/definition/types';
import { runSample } from '../src/eval/run-sample';
import { defaultTemplate, shuffleOrder } from '../src/eval/multiple-choice';
import { CHAIN_OF_THOUGHT_TEMPLATE } from '../src/eval/solvers';
import { loadDefinition } from '../src/loader/definition';

const PYTHON =
  process.env.STEWARD_INSPECT_PYTHON ??
  path.join(__dirname, '..', '.tools', 'inspect-venv', 'bin', 'python');
const HELPER = path.join(__dirname, 'helpers', 'inspect_vocabulary.py');

type Args = Record<string, unknown>;

interface Case {
  name: string;
  sample: {
    id: string | number;
    input: string | ChatMessage[];
    target: string | string[];
    choices?: string[];
    metadata?: Record<string, unknown>;
  };
  /** Inspect's names and keyword arguments; `generate` calls the model. */
  solvers: Array<[string, Args]>;
  scorer: [string, Args];
  /** The model's replies, one a call. */
  outputs: string[];
}

interface Outcome {
  error?: string;
  messages?: Array<{ role: string; content: string }>;
  calls?: Array<Array<{ role: string; content: string }>>;
  completion?: string;
  choices?: Array<{ value: string; correct: boolean | null; original_position: number }> | null;
  score?: {
    value: string | number;
    answer: string | null;
    explanation: string | null;
    reason: string | null;
  };
}

/** Inspect's sentences in explanations, and Steward's words for the same facts. */
const STEWARD_WORDING: Array<[string, string]> = [
  ['Scoring pattern not matched in output: ', 'The pattern did not match the output: '],
  [
    'Choices were shuffled before generating a response, the following was sent to the model:\n\n',
    'The choices were shuffled before the model saw them. It was shown:\n\n',
  ],
  ['\nShuffled answer:\nANSWER: ', '\nand answered, in that order:\nANSWER: '],
];

const GEN: [string, Args] = ['generate', {}];
const FOUR = ['Mercury', 'Venus', 'Earth', 'Mars'];
const MC_SAMPLE = {
  id: 'planet-3',
  input: 'Which planet is third from the Sun?',
  target: 'C',
  choices: FOUR,
};
const MULTI_SAMPLE = {
  id: 7,
  input: 'Which of these are prime?',
  target: ['A', 'C'],
  choices: ['2', '4', '5', '9'],
};

function mc(
  name: string,
  outputs: string[],
  args: Args = {},
  sample: Case['sample'] = MC_SAMPLE,
): Case {
  return { name, sample, solvers: [['multiple_choice', args]], scorer: ['choice', {}], outputs };
}

function scored(
  name: string,
  scorer: [string, Args],
  target: string | string[],
  output: string,
): Case {
  return {
    name,
    sample: { id: 1, input: 'Q?', target },
    solvers: [GEN],
    scorer,
    outputs: [output],
  };
}

const CASES: Case[] = [
  // ---- prompt solvers ----
  {
    name: 'system_message and user_message fill metadata, leave unknown and None fields',
    sample: { id: 1, input: 'Name a colour.', target: 'red', metadata: { tone: 'terse', x: null } },
    solvers: [
      ['system_message', { template: 'Be {tone}. {unknown} {x} {{literal}}' }],
      ['user_message', { template: 'Again, {tone}: one word.' }],
      GEN,
    ],
    scorer: ['f1', {}],
    outputs: ['red'],
  },
  {
    name: 'assistant_message, then user_message, then generate',
    sample: { id: 2, input: 'Pick a number.', target: '7', metadata: { n: 7 } },
    solvers: [
      ['assistant_message', { template: 'I pick {n}.' }],
      ['user_message', { template: 'Say it as ANSWER: N.' }],
      GEN,
    ],
    scorer: ['answer', { pattern: 'word' }],
    outputs: ['ANSWER: 7'],
  },
  {
    name: 'prompt_template: {prompt} and metadata, a metadata field named prompt hidden',
    sample: {
      id: 3,
      input: 'What is 6 x 7?',
      target: '42',
      metadata: { subject: 'arithmetic', prompt: 'not this', flag: true },
    },
    solvers: [['prompt_template', { template: '[{subject} / {flag}] {prompt}\nANSWER: <n>' }], GEN],
    scorer: ['pattern', { pattern: String.raw`ANSWER:\s*(\d+)` }],
    outputs: ['ANSWER: 42'],
  },
  {
    name: 'prompt_template rewrites the last user message of a chat input',
    sample: {
      id: 4,
      input: [
        { role: 'system', content: 'You are careful.' },
        { role: 'user', content: 'First question.' },
        { role: 'assistant', content: 'First answer.' },
        { role: 'user', content: 'Second question.' },
      ],
      target: 'yes',
    },
    solvers: [['prompt_template', { template: 'Now: {prompt}' }], GEN],
    scorer: ['answer', { pattern: 'word' }],
    outputs: ['ANSWER: yes'],
  },
  {
    name: 'chain_of_thought with the default template',
    sample: { id: 5, input: 'What is 12 + 30?', target: '42' },
    solvers: [['chain_of_thought', { template: CHAIN_OF_THOUGHT_TEMPLATE }], GEN],
    scorer: ['answer', { pattern: 'line' }],
    outputs: ['12 + 30 is 42.\nANSWER: 42'],
  },
  {
    name: 'chain_of_thought with its own template, metadata not filled',
    sample: { id: 6, input: 'Capital of France?', target: 'Paris', metadata: { k: 'v' } },
    solvers: [['chain_of_thought', { template: 'Think ({k}). {prompt}' }], GEN],
    scorer: ['answer', { pattern: 'line' }],
    outputs: ['Hmm.\nANSWER: Lyon'],
  },

  // ---- multiple_choice + choice ----
  mc('single: right', ['ANSWER: C']),
  mc('single: wrong', ['ANSWER: A']),
  mc('single: malformed', ['I would say Earth.']),
  mc('single: none', ['']),
  mc('single: whitespace only', ['  \n']),
  mc('single: lower case and full stop', ['answer: c.']),
  mc('single: bold letter', ['ANSWER: **C**']),
  mc('single: parenthesised letter', ['ANSWER: (C)']),
  mc('single: dollar-wrapped letter', ['ANSWER: $C$']),
  mc('single: the last ANSWER line wins', ['ANSWER: A\nNo wait.\nANSWER: C']),
  mc('single: two letters are no answer', ['ANSWER: A, C']),
  mc('single: a stray comma is tolerated', ['ANSWER: C,']),
  mc('single: a letter past the choices', ['ANSWER: E']),
  mc('single: inline, not on its own line', ['I think the ANSWER: C is right']),
  mc('cot: right after reasoning', ['Earth is third.\nANSWER: C'], { cot: true }),
  mc('cot: wrong after reasoning', ['Mars is third.\nANSWER: D'], { cot: true }),
  mc(
    'multiple: right, comma separated',
    ['ANSWER: A, C'],
    { multiple_correct: true },
    MULTI_SAMPLE,
  ),
  mc('multiple: right, with and', ['ANSWER: A and C'], { multiple_correct: true }, MULTI_SAMPLE),
  mc('multiple: right, run together', ['ANSWER: CA'], { multiple_correct: true }, MULTI_SAMPLE),
  mc('multiple: one of two', ['ANSWER: A'], { multiple_correct: true }, MULTI_SAMPLE),
  mc('multiple: one too many', ['ANSWER: A, B, C'], { multiple_correct: true }, MULTI_SAMPLE),
  mc('multiple: malformed', ['2 and 5'], { multiple_correct: true }, MULTI_SAMPLE),
  mc(
    'multiple: cot',
    ['2 and 5 are prime.\nANSWER: A,C'],
    {
      multiple_correct: true,
      cot: true,
    },
    MULTI_SAMPLE,
  ),
  mc(
    'multiple: target written AC',
    ['ANSWER: A, C'],
    { multiple_correct: true },
    {
      ...MULTI_SAMPLE,
      target: 'AC',
    },
  ),
  mc(
    'multiple: target written "A, C"',
    ['ANSWER: C, A'],
    { multiple_correct: true },
    {
      ...MULTI_SAMPLE,
      target: 'A, C',
    },
  ),
  mc('custom template with {letters}', ['ANSWER: C'], {
    template: 'Q: {question}\nOptions ({letters}):\n{choices}\nReply ANSWER: X.',
  }),
  mc('shuffled: right', ['ANSWER: X'], { shuffle: 7 }),
  mc('shuffled: wrong', ['ANSWER: Y'], { shuffle: 7 }),
  mc('shuffled: malformed', ['Earth, surely.'], { shuffle: 7 }),
  mc('shuffled: none', [''], { shuffle: 7 }),
  mc('shuffled, multiple', ['ANSWER: X, Y'], { shuffle: 3, multiple_correct: true }, MULTI_SAMPLE),
  {
    ...mc('a target beyond the choices is an error', ['ANSWER: A']),
    sample: { ...MC_SAMPLE, target: 'F' },
  },

  // ---- pattern ----
  scored(
    'pattern: one group, right',
    ['pattern', { pattern: String.raw`(\d+)` }],
    '42',
    'It is 42.',
  ),
  scored(
    'pattern: one group, wrong',
    ['pattern', { pattern: String.raw`(\d+)` }],
    '42',
    'It is 41.',
  ),
  scored('pattern: not matched', ['pattern', { pattern: String.raw`(\d+)` }], '42', 'forty-two'),
  scored('pattern: none', ['pattern', { pattern: String.raw`(\d+)` }], '42', ''),
  scored('pattern: case ignored', ['pattern', { pattern: 'is (\\w+)' }], 'paris', 'It is PARIS'),
  scored(
    'pattern: case kept',
    ['pattern', { pattern: 'is (\\w+)', ignore_case: false }],
    'paris',
    'It is PARIS',
  ),
  scored(
    'pattern: no group, the whole match',
    ['pattern', { pattern: String.raw`\d+` }],
    '42',
    'x 42',
  ),
  scored(
    'pattern: two groups, any one',
    ['pattern', { pattern: String.raw`(\w+) or (\w+)` }],
    'tea',
    'coffee or tea',
  ),
  scored(
    'pattern: two groups, neither',
    ['pattern', { pattern: String.raw`(\w+) or (\w+)` }],
    'milk',
    'coffee or tea',
  ),
  scored(
    'pattern: match_all, all equal a target',
    ['pattern', { pattern: String.raw`(\w+) and (\w+)`, match_all: true }],
    ['salt', 'pepper'],
    'salt and pepper',
  ),
  scored(
    'pattern: match_all, one does not',
    ['pattern', { pattern: String.raw`(\w+) and (\w+)`, match_all: true }],
    ['salt', 'pepper'],
    'salt and sugar',
  ),
  scored(
    'pattern: match_all, no group matched',
    ['pattern', { pattern: '(x)?(y)?', match_all: true }],
    'x',
    'abc',
  ),
  scored('pattern: a nullable group on an empty reply', ['pattern', { pattern: '(.*)' }], '', ''),
  scored(
    'pattern: a leading (?i) overrides ignore_case false',
    ['pattern', { pattern: String.raw`(?i)answer is (\w+)`, ignore_case: false }],
    'Yes',
    'ANSWER IS Yes',
  ),

  scored(
    "pattern: Python's $ matches before a final newline",
    ['pattern', { pattern: String.raw`(\d+)$` }],
    '42',
    'It is 42\n',
  ),
  scored(
    "pattern: Python's \\Z does not",
    ['pattern', { pattern: String.raw`(\d+)\Z` }],
    '42',
    'It is 42\n',
  ),
  scored(
    'pattern: (?m) lets $ end any line',
    ['pattern', { pattern: String.raw`(?m)^(\d+)$` }],
    '7',
    'first\n7\nlast',
  ),
  scored(
    "pattern: Python's named groups",
    ['pattern', { pattern: String.raw`(?P<d>\d)(?P=d)` }],
    '7',
    'x 77 y',
  ),
  scored(
    'pattern: a $ in a class is a dollar',
    ['pattern', { pattern: String.raw`([$]\d+)` }],
    '$5',
    'cost $5',
  ),
  scored(
    'pattern: \\A anchors the start of the text',
    ['pattern', { pattern: String.raw`\A(\w+)` }],
    'yes',
    'yes, it is',
  ),

  // ---- answer ----
  scored('answer letter: right', ['answer', { pattern: 'letter' }], 'B', 'ANSWER: B'),
  scored('answer letter: lower case', ['answer', { pattern: 'letter' }], 'B', 'answer: b.'),
  scored('answer letter: wrong', ['answer', { pattern: 'letter' }], 'B', 'ANSWER: D'),
  scored('answer letter: last one', ['answer', { pattern: 'letter' }], 'C', 'ANSWER: A\nANSWER: C'),
  scored(
    'answer letter: a word is not a letter',
    ['answer', { pattern: 'letter' }],
    'B',
    'ANSWER: Bee',
  ),
  scored('answer letter: malformed', ['answer', { pattern: 'letter' }], 'B', 'It is B'),
  scored('answer letter: none', ['answer', { pattern: 'letter' }], 'B', ''),
  scored(
    'answer word: right, full stop dropped',
    ['answer', { pattern: 'word' }],
    'yes',
    'ANSWER: Yes.',
  ),
  scored('answer word: wrong', ['answer', { pattern: 'word' }], 'yes', 'ANSWER: no'),
  scored('answer word: two words', ['answer', { pattern: 'word' }], 'new', 'ANSWER: New York'),
  scored(
    'answer line: right',
    ['answer', { pattern: 'line' }],
    'Paris, France',
    'So.\nANSWER: Paris, France',
  ),
  scored(
    'answer line: trailing newline',
    ['answer', { pattern: 'line' }],
    'Paris',
    'ANSWER: Paris\n',
  ),
  scored(
    'answer line: not the last line',
    ['answer', { pattern: 'line' }],
    'Paris',
    'ANSWER: Paris\nDone.',
  ),
  scored('answer line: none', ['answer', { pattern: 'line' }], 'Paris', ''),

  // ---- f1 ----
  scored('f1: exact', ['f1', {}], 'the Eiffel Tower', 'The Eiffel Tower.'),
  scored('f1: partial', ['f1', {}], 'Eiffel Tower in Paris', 'the tower'),
  scored('f1: wrong', ['f1', {}], 'Louvre', 'the tower'),
  scored('f1: numbers as floats', ['f1', {}], '3', 'It is 3.0'),
  scored('f1: a number in brackets', ['f1', {}], '3.14', 'pi is (3.14)'),
  scored('f1: hyphens split words', ['f1', {}], 'well known', 'well-known fact'),
  scored('f1: repeated words count', ['f1', {}], 'cat', 'cat cat cat'),
  scored('f1: best of several targets', ['f1', {}], ['red apple', 'apple'], 'an apple'),
  scored('f1: an article-only target is skipped', ['f1', {}], ['the', 'blue'], 'blue sky'),
  scored('f1: none', ['f1', {}], 'blue', ''),
  scored(
    'f1: stop words',
    ['f1', { stop_words: ['Is', 'very'] }],
    'sky is blue',
    'the sky is very blue',
  ),
  scored('f1: casefold folds ß', ['f1', {}], 'STRASSE', 'die Straße'),
  scored('f1: articles only as whole words', ['f1', {}], 'theory', 'a theory'),
  scored('f1: thousands separators', ['f1', {}], '1000 apples', '1,000 apples'),
  scored('f1: underscores in a number', ['f1', {}], '1000', '1_000'),
  scored('f1: infinity is not a number', ['f1', {}], '1e400', '1e400'),
  scored('f1: case folded, punctuation dropped', ['f1', {}], "don't STOP", 'Dont stop!'),
  scored(
    'f1: one word in fifteen (0.125)',
    ['f1', {}],
    'cat',
    'cat one two three four five six seven eight nine ten eleven twelve thirteen fourteen',
  ),
];

/** The case as a task of a Steward definition, in YAML's (here JSON's) words. */
function stewardTask(c: Case, i: number): Record<string, unknown> {
  return {
    name: `case${i}`,
    dataset: [c.sample],
    solver: c.solvers.map(([name, args]) => {
      switch (name) {
        case 'generate':
          return 'generate';
        case 'multiple_choice':
          return { multiple_choice: args };
        default:
          return { [name]: args.template };
      }
    }),
    scorer: (() => {
      const [name, args] = c.scorer;
      if (name === 'choice') return 'choice';
      if (name === 'answer') return { answer: args.pattern };
      return { [name]: args };
    })(),
  };
}

/** The case as Inspect is given it: Steward's default templates made explicit, its shuffle order. */
function inspectCase(c: Case) {
  const solvers = c.solvers.map(([name, args]): [string, Args] => {
    if (name !== 'multiple_choice' || args.template !== undefined) return [name, args];
    const template = defaultTemplate(args.cot === true, args.multiple_correct === true);
    return [name, { ...args, template }];
  });
  const shuffle = c.solvers.find(([name]) => name === 'multiple_choice')?.[1].shuffle;
  const order =
    typeof shuffle === 'number'
      ? shuffleOrder(c.sample.choices?.length ?? 0, shuffle, c.sample.id)
      : undefined;
  return { ...c, solvers, ...(order ? { order } : {}) };
}

/** A scripted model letter-free of the shuffle: `X`/`Y` in a reply stand for the letters at which
 * the shuffle put the first and second correct choices, so a scripted reply means the same
 * answer whatever the order. */
function resolveOutputs(c: Case): string[] {
  const shuffle = c.solvers.find(([name]) => name === 'multiple_choice')?.[1].shuffle;
  if (typeof shuffle !== 'number' || !c.sample.choices) return c.outputs;
  const order = shuffleOrder(c.sample.choices.length, shuffle, c.sample.id);
  const targets = (Array.isArray(c.sample.target) ? c.sample.target : [c.sample.target]).map(
    (t) => t.charCodeAt(0) - 65,
  );
  const letterOf = (original: number) => String.fromCharCode(65 + order.indexOf(original));
  return c.outputs.map((output) =>
    output.replace(/\bX\b/, letterOf(targets[0])).replace(/\bY\b/, letterOf(targets[1] ?? 3)),
  );
}

function scriptedModel(outputs: string[], calls: Outcome['calls'] & object): Model {
  const replies = [...outputs];
  return {
    name: 'mockllm/model',
    generate: async (messages): Promise<ModelOutput> => {
      calls.push(messages.map((m) => ({ role: m.role, content: m.content })));
      const content = replies.shift() ?? '';
      return {
        completion: content,
        message: { role: 'assistant', content },
        usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
        stop_reason: 'stop',
      };
    },
  };
}

async function stewardOutcomes(cases: Case[]): Promise<Outcome[]> {
  const dir = await fs.mkdtemp(path.join(tmpdir(), 'steward-vocabulary-'));
  const file = path.join(dir, 'evalset.yaml');
  const definition = {
    name: 'vocabulary',
    model: 'mockllm/model',
    tasks: cases.map(stewardTask),
  };
  await fs.writeFile(file, JSON.stringify(definition, null, 2));
  const loaded = await loadDefinition(file);
  await fs.rm(dir, { recursive: true, force: true });
  return Promise.all(
    loaded.tasks.map(async (task, i): Promise<Outcome> => {
      const calls: NonNullable<Outcome['calls']> = [];
      const ctx = {
        model: scriptedModel(resolveOutputs(cases[i]), calls),
        heartbeat: () => undefined,
        signal: new AbortController().signal,
      };
      try {
        const { state, score } = await runSample(task, task.dataset[0], 1, ctx);
        return {
          messages: state.messages.map((m) => ({ role: m.role, content: m.content })),
          calls,
          completion: state.output?.completion ?? '',
          choices:
            state.choices?.map((c) => ({
              value: c.value,
              correct: c.correct ?? null,
              original_position: c.original_position,
            })) ?? null,
          score: {
            value: score.value,
            answer: score.answer ?? null,
            explanation: score.explanation ?? null,
            reason: score.reason ?? null,
          },
        };
      } catch (error) {
        return { error: (error as Error).message };
      }
    }),
  );
}

function inspectOutcomes(cases: Case[]): Outcome[] {
  if (!existsSync(PYTHON)) {
    throw new Error(`Inspect AI's venv is missing (${PYTHON}): run scripts/peers/setup-inspect.sh`);
  }
  const input = JSON.stringify(
    cases.map((c) => ({ ...inspectCase(c), outputs: resolveOutputs(c) })),
  );
  const run = spawnSync(PYTHON, [HELPER], { input, encoding: 'utf8', timeout: 120_000 });
  if (run.status !== 0) throw new Error(`inspect_vocabulary.py failed:\n${run.stderr}`);
  return JSON.parse(run.stdout) as Outcome[];
}

/** Inspect's outcome with Steward's wording for the explanations' sentences; errors as a flag. */
function comparable(outcome: Outcome): Outcome {
  if (outcome.error !== undefined) return { error: 'raised' };
  const explanation = outcome.score?.explanation;
  if (typeof explanation !== 'string') return outcome;
  const reworded = STEWARD_WORDING.reduce(
    (text, [theirs, ours]) => text.replace(theirs, ours),
    explanation,
  );
  return { ...outcome, score: { ...outcome.score!, explanation: reworded } };
}

describe('the vocabulary against Inspect AI 0.3.285', () => {
  let steward: Outcome[];
  let inspect: Outcome[];

  beforeAll(async () => {
    steward = await stewardOutcomes(CASES);
    inspect = inspectOutcomes(CASES);
  }, 180_000);

  it('covers right, wrong, malformed and empty replies for each scorer', () => {
    for (const scorer of ['choice', 'pattern', 'answer', 'f1']) {
      const outputs = CASES.filter((c) => c.scorer[0] === scorer).flatMap((c) => c.outputs);
      expect(outputs).toContain('');
    }
    expect(CASES.length).toBeGreaterThan(60);
  });

  it.each(CASES.map((c, i) => [c.name, i] as const))('%s', (_name, i) => {
    expect(comparable(steward[i])).toEqual(comparable(inspect[i]));
  });
});

import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { validateDefinition } from '../src/config/validate';
import { loadDefinition } from '../src/loader/definition';
import { ConfigError, formatIssue } from '../src/errors';

const FIXTURES = path.join(__dirname, 'fixtures', 'config');
const FILE = { file: 'evalset.yaml' };

/** A valid definition for the tables below to break one field at a time. */
const base = {
  name: 'hello',
  model: 'mockllm/model',
  tasks: [{ name: 'arithmetic', dataset: 'data/arith.jsonl', scorer: 'match' }],
};
const withTask = (task: Record<string, unknown>) => ({
  ...base,
  tasks: [{ ...base.tasks[0], ...task }],
});

describe('validateDefinition', () => {
  test('normalises a definition, filling defaults', () => {
    expect(validateDefinition({ ...base, max_tasks: 2, samples_ramp: false }, FILE)).toEqual({
      definition: {
        name: 'hello',
        log_dir: undefined,
        settings: { max_tasks: 2, samples_ramp: false },
        tasks: [
          {
            name: 'arithmetic',
            dataset: { type: 'file', path: 'data/arith.jsonl', format: 'jsonl' },
            solver: [{ type: 'generate', config: {} }],
            scorer: { type: 'match', options: {} },
            scorerName: 'match',
            epochs: 1,
            scoring: { reducers: ['mean'], metrics: ['accuracy', 'stderr'] },
            model: 'mockllm/model',
            modelArgs: {},
            config: {},
            limits: {},
          },
        ],
      },
      warnings: [],
      errors: [],
    });
  });

  test("reads a task's limits, and the eval set's as its settings", () => {
    const limits = { time_limit: 90, working_limit: 30.5, message_limit: 12, token_limit: 5000 };
    const result = validateDefinition(
      { ...base, time_limit: 600, tasks: [{ ...base.tasks[0], ...limits }] },
      FILE,
    );
    expect(result.errors).toEqual([]);
    expect(result.definition?.tasks[0].limits).toEqual(limits);
    expect(result.definition?.settings).toEqual({ time_limit: 600 });
    const bad = validateDefinition(
      { ...base, tasks: [{ ...base.tasks[0], message_limit: 0, time_limit: -1 }] },
      FILE,
    );
    expect(bad.errors.map((e) => e.path)).toEqual(['tasks.0.time_limit', 'tasks.0.message_limit']);
  });

  test.each([
    ['generate alone', 'generate', [{ type: 'generate', config: {} }]],
    [
      'a system message then generate',
      [{ system_message: 'Answer with a number.' }, 'generate'],
      [
        { type: 'system_message', text: 'Answer with a number.' },
        { type: 'generate', config: {} },
      ],
    ],
    [
      'generate with a config',
      { generate: { max_tokens: 100, temperature: 0 } },
      [{ type: 'generate', config: { max_tokens: 100, temperature: 0 } }],
    ],
    ['generate with an empty YAML value', [{ generate: null }], [{ type: 'generate', config: {} }]],
  ])('reads the solver as %s', (_name, solver, expected) => {
    expect(validateDefinition(withTask({ solver }), FILE).definition?.tasks[0].solver).toEqual(
      expected,
    );
  });

  test.each([
    ['includes', { type: 'includes', options: {} }],
    ['exact', { type: 'exact' }],
    [
      { match: { location: 'end', ignore_case: true, numeric: true } },
      { type: 'match', options: { location: 'end', ignore_case: true, numeric: true } },
    ],
    [{ includes: { ignore_case: false } }, { type: 'includes', options: { ignore_case: false } }],
    [{ match: null }, { type: 'match', options: {} }],
  ])('reads the scorer %j', (scorer, expected) => {
    const task = validateDefinition(withTask({ scorer }), FILE).definition?.tasks[0];
    expect(task?.scorer).toEqual(expected);
    expect(task?.scorerName).toBe(expected.type);
  });

  test.each([
    ['a .csv path', 'q.csv', { type: 'file', path: 'q.csv', format: 'csv' }],
    [
      'an explicit format',
      { path: 'q.txt', format: 'jsonl' },
      { type: 'file', path: 'q.txt', format: 'jsonl' },
    ],
    ['inline samples', [{ input: 'x' }], { type: 'inline', records: [{ input: 'x' }] }],
  ])('reads the dataset as %s', (_name, dataset, expected) => {
    expect(validateDefinition(withTask({ dataset }), FILE).definition?.tasks[0].dataset).toEqual(
      expected,
    );
  });

  test.each([
    ['a task on the default model gets its model_args', {}, { latency_ms: 5 }],
    [
      'a task with model_args of its own keeps them',
      { model_args: { jitter_ms: 1 } },
      { jitter_ms: 1 },
    ],
    ['a task on another model starts from none', { model: 'openai/gpt-4o-mini' }, {}],
  ])('%s', (_name, task, modelArgs) => {
    const def = { ...withTask(task), model_args: { latency_ms: 5 } };
    expect(validateDefinition(def, FILE).definition?.tasks[0].modelArgs).toEqual(modelArgs);
  });

  test.each([
    ['a count', { epochs: 3 }, 3, { reducers: ['mean'], metrics: ['accuracy', 'stderr'] }],
    [
      'a count and a reducer',
      { epochs: { count: 3, reducer: 'pass_at_2' } },
      3,
      { reducers: ['pass_at_2'], metrics: ['accuracy', 'stderr'] },
    ],
    [
      'reducers and metrics',
      { epochs: { count: 4, reducer: ['mode', 'at_least_4'] }, metrics: ['mean', 'std'] },
      4,
      { reducers: ['mode', 'at_least_4'], metrics: ['mean', 'std'] },
    ],
    ['metrics alone', { metrics: ['accuracy'] }, 1, { reducers: ['mean'], metrics: ['accuracy'] }],
  ])('reads epochs and scoring from %s', (_name, task, epochs, scoring) => {
    const read = validateDefinition(withTask(task), FILE).definition?.tasks[0];
    expect({ epochs: read?.epochs, scoring: read?.scoring }).toEqual({ epochs, scoring });
  });

  test('a custom scorer is named by scorer_name, else by its function', () => {
    async function lengthScorer() {
      return { value: 1 };
    }
    const named = validateDefinition(withTask({ scorer: lengthScorer }), FILE).definition;
    expect(named?.tasks[0].scorerName).toBe('lengthScorer');
    const renamed = validateDefinition(
      withTask({ scorer: lengthScorer, scorer_name: 'length' }),
      FILE,
    ).definition;
    expect(renamed?.tasks[0].scorerName).toBe('length');
  });

  test('warns that scorer_name does not rename a built-in', () => {
    const result = validateDefinition(withTask({ scorer_name: 'mine' }), FILE);
    expect(result.definition).toBeDefined();
    expect(result.warnings.map(formatIssue)).toEqual([
      'evalset.yaml: tasks.0.scorer_name: names custom scorers only; ignored for a built-in ("mine")',
    ]);
  });

  test.each([
    ['an empty document', null, ['evalset.yaml: the definition is empty']],
    ['a list', ['name: x'], ['evalset.yaml: expected object, got array (["name: x"])']],
    [
      'an unknown top-level key, by name',
      { ...base, max_task: 2 },
      ['evalset.yaml: unknown key "max_task"'],
    ],
    [
      'an unknown task key, by name',
      withTask({ epoch: 2 }),
      ['evalset.yaml: tasks.0: unknown key "epoch"'],
    ],
    ['a missing name', { model: base.model, tasks: base.tasks }, ['evalset.yaml: name: required']],
    [
      'a name unfit for workflow ids',
      { ...base, name: 'my set' },
      ['evalset.yaml: name: may only contain letters, digits, "_", "." and "-" ("my set")'],
    ],
    ['no tasks', { ...base, tasks: [] }, ['evalset.yaml: tasks: must not be empty ([])']],
    [
      'a wrong type',
      withTask({ epochs: '2' }),
      ['evalset.yaml: tasks.0.epochs: expected a number or { count, reducer } ("2")'],
    ],
    [
      'a fractional count',
      withTask({ epochs: 1.5 }),
      ['evalset.yaml: tasks.0.epochs: expected integer, got number (1.5)'],
    ],
    [
      'zero epochs',
      withTask({ epochs: 0 }),
      ['evalset.yaml: tasks.0.epochs: must be at least 1 (0)'],
    ],
    [
      'zero epochs with a reducer',
      withTask({ epochs: { count: 0, reducer: 'mean' } }),
      ['evalset.yaml: tasks.0.epochs.count: must be at least 1 (0)'],
    ],
    [
      'epochs with a reducer and no count',
      withTask({ epochs: { reducer: 'mean' } }),
      ['evalset.yaml: tasks.0.epochs.count: required'],
    ],
    [
      'an unknown reducer',
      withTask({ epochs: { count: 2, reducer: 'majority' } }),
      [
        'evalset.yaml: tasks.0.epochs.reducer: unknown reducer; expected mean, median, mode, max, pass_at_<k> or at_least_<k> ("majority")',
      ],
    ],
    [
      'an unknown reducer in a list, at its place',
      withTask({ epochs: { count: 2, reducer: ['mean', 'pass_at_0'] } }),
      [
        'evalset.yaml: tasks.0.epochs.reducer.1: unknown reducer; expected mean, median, mode, max, pass_at_<k> or at_least_<k> ("pass_at_0")',
      ],
    ],
    [
      'a k above the epochs, as Inspect refuses it',
      withTask({ epochs: { count: 3, reducer: ['mean', 'pass_at_5'] } }),
      [
        'evalset.yaml: tasks.0.epochs.reducer.1: needs at least 5 epochs; the task has 3 ("pass_at_5")',
      ],
    ],
    [
      'a k above the default single epoch',
      withTask({ epochs: { count: 1, reducer: 'at_least_2' } }),
      [
        'evalset.yaml: tasks.0.epochs.reducer: needs at least 2 epochs; the task has 1 ("at_least_2")',
      ],
    ],
    [
      'an unknown metric and one named twice',
      withTask({ metrics: ['accuracy', 'f1', 'accuracy'] }),
      [
        'evalset.yaml: tasks.0.metrics.1: expected one of "accuracy", "stderr", "mean", "std" ("f1")',
      ],
    ],
    [
      'a metric and a reducer named twice',
      withTask({ epochs: { count: 2, reducer: ['max', 'max'] }, metrics: ['std', 'std'] }),
      [
        'evalset.yaml: tasks.0.epochs.reducer.1: named twice ("max")',
        'evalset.yaml: tasks.0.metrics.1: named twice ("std")',
      ],
    ],
    [
      'a negative max_samples',
      { ...base, max_samples: -5 },
      ['evalset.yaml: max_samples: must be at least 1 (-5)'],
    ],
    [
      'zero max_tasks',
      { ...base, max_tasks: 0 },
      ['evalset.yaml: max_tasks: must be at least 1 (0)'],
    ],
    [
      'a zero tend_interval',
      { ...base, tend_interval: 0 },
      ['evalset.yaml: tend_interval: must be greater than 0 (0)'],
    ],
    [
      'a negative temperature',
      withTask({ config: { temperature: -1 } }),
      ['evalset.yaml: tasks.0.config.temperature: must be at least 0 (-1)'],
    ],
    [
      'samples_ramp: true',
      { ...base, samples_ramp: true },
      ['evalset.yaml: samples_ramp: expected [lo, hi] or false (true)'],
    ],
    [
      'samples_ramp from zero',
      { ...base, samples_ramp: [0, 10] },
      ['evalset.yaml: samples_ramp.0: must be at least 1 (0)'],
    ],
    [
      'samples_ramp upside down',
      { ...base, samples_ramp: [300, 40] },
      ['evalset.yaml: samples_ramp: lo must not exceed hi ([300,40])'],
    ],
    [
      'samples_ramp with one number',
      { ...base, samples_ramp: [40] },
      ['evalset.yaml: samples_ramp: must have at least 2 items ([40])'],
    ],
    [
      'duplicate task names',
      { ...base, tasks: [base.tasks[0], { ...base.tasks[0], dataset: 'b.jsonl' }] },
      ['evalset.yaml: tasks.1.name: duplicate task name (also tasks.0) ("arithmetic")'],
    ],
    [
      'an unknown model provider',
      withTask({ model: 'gemini/pro' }),
      [
        'evalset.yaml: tasks.0.model: unknown model provider "gemini" in "gemini/pro" (known: mockllm, openai, openai-api, anthropic)',
      ],
    ],
    [
      'an unknown default model provider',
      { ...base, model: 'mock/model' },
      [
        'evalset.yaml: model: unknown model provider "mock" in "mock/model" (known: mockllm, openai, openai-api, anthropic)',
      ],
    ],
    [
      'a task without a model and no default',
      { name: 'x', tasks: base.tasks },
      ['evalset.yaml: tasks.0.model: required: set model here or a default model for the eval set'],
    ],
    [
      'a missing dataset',
      withTask({ dataset: undefined }),
      ['evalset.yaml: tasks.0.dataset: required'],
    ],
    [
      'an unknown dataset format',
      withTask({ dataset: { path: 'a.txt', format: 'xml' } }),
      ['evalset.yaml: tasks.0.dataset.format: expected one of "jsonl", "json", "csv" ("xml")'],
    ],
    [
      'a bad inline sample, at its path',
      withTask({ dataset: [{ input: 'ok' }, { inpt: 'x' }] }),
      [
        'evalset.yaml: tasks.0.dataset.1.input: required',
        'evalset.yaml: tasks.0.dataset.1: unknown key "inpt"',
      ],
    ],
    [
      'a missing scorer',
      withTask({ scorer: undefined }),
      ['evalset.yaml: tasks.0.scorer: required'],
    ],
    [
      'an unknown scorer',
      withTask({ scorer: 'matches' }),
      [
        'evalset.yaml: tasks.0.scorer: unknown scorer; the built-in ones are match, includes, exact, choice, pattern, answer, f1, sandbox_check ("matches")',
      ],
    ],
    [
      'an unknown scorer with options',
      withTask({ scorer: { regex: { pattern: 'x' } } }),
      [
        'evalset.yaml: tasks.0.scorer: unknown scorer; the built-in ones are match, includes, exact, choice, pattern, answer, f1, sandbox_check ({"regex":{"pattern":"x"}})',
      ],
    ],
    [
      'a bad scorer option',
      withTask({ scorer: { match: { location: 'middle' } } }),
      [
        'evalset.yaml: tasks.0.scorer.match.location: expected one of "begin", "end", "any", "exact" ("middle")',
      ],
    ],
    [
      'an unknown scorer option, by name',
      withTask({ scorer: { includes: { numeric: true } } }),
      ['evalset.yaml: tasks.0.scorer.includes: unknown key "numeric"'],
    ],
    [
      'unknown solvers, each at its place',
      withTask({ solver: ['generat', { system_mesage: 'x' }, { generate: { max_token: 5 } }] }),
      [
        'evalset.yaml: tasks.0.solver.0: unknown solver; the built-in ones are system_message, user_message, assistant_message, prompt_template, chain_of_thought, multiple_choice, generate, agent ("generat")',
        'evalset.yaml: tasks.0.solver.1: unknown solver; the built-in ones are system_message, user_message, assistant_message, prompt_template, chain_of_thought, multiple_choice, generate, agent ({"system_mesage":"x"})',
        'evalset.yaml: tasks.0.solver.2.generate: unknown key "max_token"',
      ],
    ],
    [
      'an empty solver list',
      withTask({ solver: [] }),
      ['evalset.yaml: tasks.0.solver: must not be empty ([])'],
    ],
    [
      'every problem at once',
      { ...base, max_workers: 0, tasks: [{ ...base.tasks[0], epochs: 0, extra: 1 }] },
      [
        'evalset.yaml: tasks.0.epochs: must be at least 1 (0)',
        'evalset.yaml: tasks.0: unknown key "extra"',
        'evalset.yaml: max_workers: must be at least 1 (0)',
      ],
    ],
  ])('refuses %s', (_name, raw, expected) => {
    const result = validateDefinition(raw, FILE);
    expect(result.definition).toBeUndefined();
    expect(result.errors.map(formatIssue)).toEqual(expected);
  });
});

async function loadProblems(file: string): Promise<string[]> {
  try {
    await loadDefinition(file);
  } catch (error) {
    if (error instanceof ConfigError) return error.issues.map(formatIssue);
    throw error;
  }
  throw new Error('expected the definition to be refused');
}

describe('loadDefinition (YAML)', () => {
  test('loads a definition with its datasets, built-ins and absolute paths', async () => {
    const file = path.join(FIXTURES, 'hello', 'evalset.yaml');
    const def = await loadDefinition(file);
    expect({ ...def, tasks: undefined, identities: undefined }).toEqual({
      name: 'hello',
      source: file,
      log_dir: path.join(FIXTURES, 'hello', 'logs', 'hello'),
      settings: { max_tasks: 2, samples_ramp: [40, 300] },
      tasks: undefined,
      identities: undefined,
    });
    // What a relaunch into the same log dir must match (src/definition/identity.ts).
    expect(def.identities.arithmetic).toMatchObject({
      model: 'mockllm/model',
      model_args: { outputs: ['The answer is {target}'], latency_ms: 0 },
      scorer: { match: { location: 'end', numeric: true } },
      dataset: { samples: 2 },
      epochs: 2,
      config: {},
      sandbox: null,
    });
    const [arithmetic, capitals] = def.tasks;
    expect(arithmetic).toMatchObject({
      name: 'arithmetic',
      scorerName: 'match',
      epochs: 2,
      model: 'mockllm/model',
      modelArgs: { outputs: ['The answer is {target}'], latency_ms: 0 },
      config: {},
    });
    expect(arithmetic.dataset.map((sample) => sample.id)).toEqual([1, 'three']);
    expect(arithmetic.solver).toHaveLength(2);
    expect(arithmetic.solver.every((solver) => typeof solver === 'function')).toBe(true);
    expect(typeof arithmetic.scorer).toBe('function');
    expect(capitals).toMatchObject({
      name: 'capitals',
      scorerName: 'includes',
      epochs: 1,
      model: 'openai-api/vllm/llama-3',
      modelArgs: {},
      config: { max_tokens: 512 },
    });
    expect(capitals.dataset.map((sample) => sample.target)).toEqual(['Paris', ['Rome', 'Roma']]);
    expect(capitals.solver).toHaveLength(1);
  });

  const broken = (name: string) => path.join(FIXTURES, 'broken', name);

  // Written at run time: as a fixture file it would trip the repository's format check.
  test('refuses a YAML syntax error, at its line and column', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'steward-config-'));
    const file = path.join(dir, 'evalset.yaml');
    await writeFile(file, 'name: broken\ntasks:\n  - name: a\n    scorer: match: exact\n');
    try {
      expect(await loadProblems(file)).toEqual([
        `${file}:4: invalid YAML at column 13: Nested mappings are not allowed in compact mappings`,
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test.each([
    ['an empty file', 'empty.yaml', [`${broken('empty.yaml')}: the definition is empty`]],
    ['a missing file', 'nope.yaml', [`${broken('nope.yaml')}: definition file not found`]],
    [
      'an unsupported file type',
      'evalset.json',
      [
        `${broken('evalset.json')}: unsupported definition file type (use .yaml, .yml, .ts, .mts, .cts, .js, .mjs, .cjs)`,
      ],
    ],
    [
      'every dataset problem of every task',
      'datasets.yaml',
      [
        `${broken('data/missing.jsonl')}: dataset file not found`,
        `${broken('data/malformed.jsonl')}:2: invalid JSON: Expected ',' or '}' after property value in JSON at position 28`,
        `${broken('data/malformed.jsonl')}:3: duplicate sample id 1 (first used at line 1)`,
        `${broken('data/malformed.jsnol')}: dataset file not found`,
      ],
    ],
  ])('refuses %s', async (_name, file, expected) => {
    expect(await loadProblems(broken(file))).toEqual(expected);
  });
});

/**
 * Module definitions load through tsx, which Jest's module sandbox cannot host; a plain Node
 * child loads them, as `steward launch` does, and prints what it got.
 */
async function loadInNode(file: string): Promise<unknown> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--require', 'tsx/cjs', 'load-in-node.ts', file],
    { cwd: FIXTURES },
  );
  return JSON.parse(stdout);
}

describe('loadDefinition (module)', () => {
  test('loads custom solvers and scorers, inline samples and built-ins', async () => {
    expect(await loadInNode('module/evalset.ts')).toEqual({
      name: 'module-set',
      tasks: [
        {
          name: 'custom',
          scorerName: 'lengthScorer',
          solvers: 2,
          ids: [1, 'second'],
          model: 'mockllm/model',
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: 'first' },
            { role: 'assistant', content: 'id 1' },
          ],
          score: { value: 3 },
        },
        { name: 'builtins', scorerName: 'match', solvers: 1, ids: [1], model: 'mockllm/model' },
        {
          name: 'renamed',
          scorerName: 'always_right',
          solvers: 1,
          ids: [1],
          model: 'mockllm/model',
        },
      ],
    });
  });

  test('takes a named evalSet export', async () => {
    expect(await loadInNode('module/named.ts')).toEqual({
      name: 'named-export',
      tasks: [{ name: 't', scorerName: 'exact', solvers: 1, ids: [1], model: 'mockllm/model' }],
    });
  });

  test.each([
    [
      'a module without an eval set',
      'module/nothing.ts',
      'module/nothing.ts: exports no eval set: use `export default defineEvalSet({...})` or `export const evalSet = ...`',
    ],
    [
      'a module that throws',
      'module/throws.ts',
      'module/throws.ts: cannot load the module: definition exploded',
    ],
    [
      'an invalid definition, as for YAML',
      'module/invalid.ts',
      'module/invalid.ts: tasks.0.scorer: expected match, includes, exact, choice, f1, { match: <options> }, { includes: <options> }, { pattern: <regex or options> }, { answer: letter | word | line }, { f1: <options> }, { sandbox_check: <options> } or a function (42)',
    ],
    ['a missing module', 'module/nope.ts', 'module/nope.ts: definition file not found'],
  ])('refuses %s', async (_name, file, expected) => {
    expect(await loadInNode(file)).toEqual({ errors: [expected] });
  });
});

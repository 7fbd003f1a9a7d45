/**
 * The shapes Steward accepts from users, as zod schemas: an eval set definition (`evalset.yaml`
 * or a module) and a dataset record; the definition embeds the concurrency knobs of
 * `knobs.ts`. Keys are snake_case, the seed's names; every object is strict, so a misspelt
 * key is refused by name instead of silently ignored.
 *
 * Schemas check shape only. Rules that relate fields (a ramp's `lo <= hi`, unique task names,
 * model names) live in `validate.ts`, so a union's branch never fails for a reason that is not
 * about its shape (see `issuesFromZod`).
 */

import { z } from 'zod';
import type { Scorer, Solver } from '../definition/types';
import { metricNameSchema } from '../core/metrics';
import { reducerSpecSchema } from '../core/reducers';
import { knobShape, limitsShape } from './knobs';

/** Names of eval sets and tasks end up in Temporal workflow ids and task queues. */
const NAME_PATTERN = /^[A-Za-z0-9_.-]+$/;

const name = z
  .string()
  .regex(NAME_PATTERN, { error: 'may only contain letters, digits, "_", "." and "-"' });

const positiveInt = z.number().int().min(1);

/** A plain JS function, for custom solvers and scorers in module definitions. */
function fn<T>() {
  return z.custom<T>((value) => typeof value === 'function');
}

/** `{ key: ... }` with one key: the YAML form of "a built-in with options". */
function isSingleKeyObject(input: unknown): boolean {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return false;
  return Object.keys(input).length === 1;
}

/**
 * Explains a value that fits none of the forms of a built-in reference (solver or scorer). The
 * value itself is shown after the message, so the message does not repeat it.
 */
function unknownBuiltin(kind: string, known: string, forms: string) {
  return (issue: { input?: unknown }): string => {
    if (issue.input === undefined) return 'required';
    if (typeof issue.input === 'string' || isSingleKeyObject(issue.input)) {
      return `unknown ${kind}; the built-in ones are ${known}`;
    }
    return `expected ${forms}`;
  };
}

// ---- samples ------------------------------------------------------------------------------

const chatMessage = z.discriminatedUnion(
  'role',
  [
    z.strictObject({ role: z.literal('system'), content: z.string() }),
    z.strictObject({ role: z.literal('user'), content: z.string() }),
    z.strictObject({
      role: z.literal('assistant'),
      content: z.string(),
      tool_calls: z
        .array(z.strictObject({ id: z.string(), name: z.string(), arguments: z.string() }))
        .optional(),
    }),
    z.strictObject({ role: z.literal('tool'), content: z.string(), tool_call_id: z.string() }),
  ],
  { error: 'expected system, user, assistant or tool' },
);

/** A target or choice as Inspect reads it: numbers become their text (`3` is `"3"`). */
const text = z.union([z.string(), z.number().transform(String)], {
  error: 'expected a string or a number',
});

/**
 * `choices` as Inspect reads them: a list, or (as a CSV cell holds them) one string split at
 * commas, else at whitespace. Blank entries are dropped.
 */
const choices = z.union(
  [
    z.array(text).transform((list) => list.filter((choice) => choice.trim() !== '')),
    z.string().transform((cell) => {
      const split = cell.split(',');
      const parts = split.length === 1 ? cell.split(/\s+/) : split;
      return parts.map((choice) => choice.trim()).filter((choice) => choice !== '');
    }),
  ],
  { error: 'expected a list of strings or a comma-separated string' },
);

/**
 * One dataset record, with Inspect's sample fields. As in Inspect, `null` in an optional field
 * means it is absent (the dataset loader drops such keys before this schema sees them).
 */
export const sampleRecordSchema = z.strictObject({
  input: z.union([z.string().min(1), z.array(chatMessage).min(1)], {
    error: (issue) =>
      issue.input === undefined ? 'required' : 'expected a string or a list of chat messages',
  }),
  /** Numbers are read as their text, as Inspect does. @default "" */
  target: z
    .union([text, z.array(text)], {
      error: 'expected a string, a number or a list of them',
    })
    .optional(),
  /** @default the record's 1-based position in the dataset */
  id: z
    .union([z.string().min(1), z.number().int()], {
      error: 'expected a string or an integer',
    })
    .optional(),
  choices: choices.optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  /**
   * Files copied into the sample's sandbox before its solvers run: sandbox path (optionally
   * `service:path`) -> a file or directory relative to the dataset, a `data:` URL, or the text
   * itself.
   */
  files: z
    .record(z.string().min(1), z.string(), { error: 'expected an object of strings' })
    .optional(),
  /** A script (or a file holding one) run in the sandbox after the files, before the solvers. */
  setup: z.string().optional(),
});

export type SampleRecord = z.infer<typeof sampleRecordSchema>;

// ---- definitions ----------------------------------------------------------------------------

export const DATASET_FORMATS = ['jsonl', 'json', 'csv'] as const;
export type DatasetFormat = (typeof DATASET_FORMATS)[number];

/** The format a dataset file's name implies, if any. */
export function datasetFormatOf(file: string): DatasetFormat | undefined {
  if (/\.(jsonl|ndjson)$/i.test(file)) return 'jsonl';
  if (/\.json$/i.test(file)) return 'json';
  if (/\.csv$/i.test(file)) return 'csv';
  return undefined;
}

const generateConfig = z.strictObject({
  max_tokens: positiveInt.optional(),
  temperature: z.number().min(0).optional(),
});

/** The `agent` solver's options (`eval/agent.ts`); it needs the task's `sandbox`. */
const agentOptions = z.strictObject({
  max_turns: positiveInt.optional(),
  token_limit: positiveInt.optional(),
  /** Seconds. */
  command_timeout: z.number().positive().optional(),
  system_message: z.string().optional(),
});

/** The `multiple_choice` solver's options (`eval/multiple-choice.ts`); it needs `choices`. */
const multipleChoiceOptions = z.strictObject({
  template: z.string().optional(),
  cot: z.boolean().optional(),
  multiple_correct: z.boolean().optional(),
  /** `true` (seed 0) or a seed: the same order for a sample in every epoch and relaunch. */
  shuffle: z.union([z.boolean(), z.number().int()]).optional(),
  max_tokens: positiveInt.optional(),
});

const solverEntry = z.union(
  [
    z.enum(['generate', 'agent', 'chain_of_thought', 'multiple_choice']),
    z.strictObject({ system_message: z.string() }),
    z.strictObject({ user_message: z.string() }),
    z.strictObject({ assistant_message: z.string() }),
    z.strictObject({ prompt_template: z.string() }),
    z.strictObject({ chain_of_thought: z.string().nullable() }),
    // `- generate:` with nothing after it is YAML's null.
    z.strictObject({ generate: generateConfig.nullable() }),
    z.strictObject({ agent: agentOptions.nullable() }),
    z.strictObject({ multiple_choice: multipleChoiceOptions.nullable() }),
    fn<Solver>(),
  ],
  {
    error: unknownBuiltin(
      'solver',
      'system_message, user_message, assistant_message, prompt_template, chain_of_thought, multiple_choice, generate, agent',
      'generate, agent, chain_of_thought, multiple_choice, { system_message: <text> }, { user_message: <text> }, { assistant_message: <text> }, { prompt_template: <template> }, { chain_of_thought: <template> }, { multiple_choice: <options> }, { generate: <config> }, { agent: <options> } or a function',
    ),
  },
);

const solverSpec = z.union([solverEntry, z.array(solverEntry).min(1)], {
  error: 'expected a solver or a list of solvers',
});

const matchOptions = z.strictObject({
  location: z.enum(['begin', 'end', 'any', 'exact']).optional(),
  ignore_case: z.boolean().optional(),
  numeric: z.boolean().optional(),
});

const includesOptions = z.strictObject({ ignore_case: z.boolean().optional() });

/** The `sandbox_check` scorer's options (`eval/sandbox-scorers.ts`); it needs the task's `sandbox`. */
const sandboxCheckOptions = z.strictObject({
  cmd: z.union([z.string().min(1), z.array(z.string()).min(1)], {
    error: 'expected a shell command or a list of arguments',
  }),
  expect_exit: z.number().int().min(0).max(255).optional(),
  /** Seconds. */
  timeout: z.number().positive().optional(),
});

/** The `pattern` scorer's options (`eval/scorers.ts`). */
const patternOptions = z.strictObject({
  pattern: z.string().min(1),
  ignore_case: z.boolean().optional(),
  match_all: z.boolean().optional(),
});

const scorerSpec = z.union(
  [
    z.enum(['match', 'includes', 'exact', 'choice', 'f1']),
    z.strictObject({ match: matchOptions.nullable() }),
    z.strictObject({ includes: includesOptions.nullable() }),
    z.strictObject({ sandbox_check: sandboxCheckOptions }),
    z.strictObject({ choice: z.null() }),
    z.strictObject({ pattern: z.union([z.string().min(1), patternOptions]) }),
    z.strictObject({ answer: z.enum(['letter', 'word', 'line']) }),
    z.strictObject({
      f1: z.strictObject({ stop_words: z.array(z.string()).optional() }).nullable(),
    }),
    fn<Scorer>(),
  ],
  {
    error: unknownBuiltin(
      'scorer',
      'match, includes, exact, choice, pattern, answer, f1, sandbox_check',
      'match, includes, exact, choice, f1, { match: <options> }, { includes: <options> }, { pattern: <regex or options> }, { answer: letter | word | line }, { f1: <options> }, { sandbox_check: <options> } or a function',
    ),
  },
);

const datasetSpec = z.union(
  [
    z.string().min(1),
    z.strictObject({ path: z.string().min(1), format: z.enum(DATASET_FORMATS).optional() }),
    z.array(sampleRecordSchema),
  ],
  {
    error: (issue) =>
      issue.input === undefined
        ? 'required'
        : 'expected a file path, { path, format } or a list of samples',
  },
);

const modelArgs = z.record(z.string(), z.unknown());

/** `epochs: 3`, or `epochs: { count: 3, reducer: pass_at_2 }` with one reducer or a list. */
const epochsSpec = z.union(
  [
    positiveInt,
    z.strictObject({
      count: positiveInt,
      reducer: reducerSpecSchema.optional(),
    }),
  ],
  {
    error: (issue) => {
      if (issue.input === undefined) return 'required';
      // A number misses both forms only by not being a whole one.
      if (typeof issue.input === 'number') {
        return Number.isFinite(issue.input)
          ? 'expected integer, got number'
          : 'expected a finite number';
      }
      return 'expected a number or { count, reducer }';
    },
  },
);

const taskSchema = z.strictObject({
  /** Unique within the eval set. */
  name,
  /** A JSONL, JSON or CSV file relative to the definition, `{ path, format }`, or inline samples. */
  dataset: datasetSpec,
  /** @default generate */
  solver: solverSpec.optional(),
  scorer: scorerSpec,
  /** Names a custom scorer in logs. @default the function's name */
  scorer_name: z.string().min(1).optional(),
  /** A count, or `{ count, reducer }` as Inspect's `Epochs`. @default 1, reduced by `mean` */
  epochs: epochsSpec.optional(),
  /** The metrics over the reduced samples, as Inspect names them. @default [accuracy, stderr] */
  metrics: z.array(metricNameSchema).min(1).optional(),
  /** Inspect-style model name. @default the eval set's `model` */
  model: z.string().min(1).optional(),
  /** @default the eval set's `model_args` when the task uses the eval set's model, else {} */
  model_args: modelArgs.optional(),
  /** @default {} */
  config: generateConfig.optional(),
  /**
   * Each sample's sandbox: an image name (one container kept alive), or a compose-style YAML file
   * (`.yaml`/`.yml`, relative to the definition). @default none
   */
  sandbox: z.string().min(1).optional(),
  /** Per-sample limits (`time_limit`, `working_limit`, `message_limit`, `token_limit`). */
  ...limitsShape,
});

/** An eval set definition as written in `evalset.yaml` or exported by a module. */
export const definitionSchema = z.strictObject({
  name,
  /** Relative to the definition file. */
  log_dir: z.string().min(1).optional(),
  /** Default model of the tasks. */
  model: z.string().min(1).optional(),
  /** Goes with `model`: used by tasks that use the default model. */
  model_args: modelArgs.optional(),
  tasks: z.array(taskSchema).min(1),
  ...knobShape,
});

/** What a module definition exports (`defineEvalSet` takes one). */
export type EvalSetSpec = z.input<typeof definitionSchema>;
export type TaskSpec = z.input<typeof taskSchema>;
export type SolverSpec = z.input<typeof solverEntry>;
export type ScorerSpec = z.input<typeof scorerSpec>;
export type DatasetSpec = z.input<typeof datasetSpec>;
export type ParsedDefinition = z.output<typeof definitionSchema>;
export type ParsedTask = z.output<typeof taskSchema>;

/**
 * Validation of an eval set definition, in three pure steps: the zod schema (shape), rules
 * (relations between fields: unique names, known models, a usable ramp), normalise (shorthands
 * expanded, defaults filled; it runs last because it relies on the rules having held). No I/O:
 * the loader in `loader/definition.ts` reads files and datasets.
 */

import { DEFAULT_SCORING, reducerEpochsNeeded } from '../core/reducers';
import type { ConfigIssue } from '../errors';
import { issuesFromZod, type IssueOrigin } from './issues';
import { KNOBS, LIMITS, rampRangeProblem, type ConcurrencySettings } from './knobs';
import type { GenerateConfig, Scorer, Solver, TaskDefinition } from '../definition/types';
import type { AgentOptions } from '../eval/agent';
import type { SandboxCheckOptions } from '../eval/sandbox-scorers';
import type { F1Options } from '../eval/f1';
import type { MultipleChoiceOptions } from '../eval/multiple-choice';
import type { AnswerKind, MatchOptions, PatternOptions } from '../eval/scorers';
import { MAX_CHOICES, compilePattern, validChoiceTemplate } from '../core/vocabulary';
import { functionIdentity } from '../definition/identity';
import { modelArgsSchema, parseModelName } from './models';
import {
  datasetFormatOf,
  definitionSchema,
  type DatasetFormat,
  type ParsedDefinition,
  type ParsedTask,
  type SampleRecord,
} from './schema';

/** A solver chain step, before it is built. */
export type SolverRef =
  | { type: 'system_message'; text: string }
  | { type: 'user_message'; text: string }
  | { type: 'assistant_message'; text: string }
  | { type: 'prompt_template'; template: string }
  | { type: 'chain_of_thought'; template?: string }
  | { type: 'multiple_choice'; options: MultipleChoiceOptions }
  | { type: 'generate'; config: GenerateConfig }
  | { type: 'agent'; options: AgentOptions }
  | { type: 'custom'; solver: Solver };

/** A scorer, before it is built. */
export type ScorerRef =
  | { type: 'match'; options: MatchOptions }
  | { type: 'includes'; options: { ignore_case?: boolean } }
  | { type: 'exact' }
  | { type: 'choice' }
  | { type: 'pattern'; options: PatternOptions }
  | { type: 'answer'; kind: AnswerKind }
  | { type: 'f1'; options: F1Options }
  | { type: 'sandbox_check'; options: SandboxCheckOptions }
  | { type: 'custom'; scorer: Scorer };

/**
 * Where a task's samples come from; a file path is as written, relative to the definition. A
 * file's format is unset when its name does not tell it: the loader says so once it has found
 * the file (a mistyped path is reported as missing, not as an unknown format).
 */
export type DatasetRef =
  | { type: 'file'; path: string; format?: DatasetFormat }
  | { type: 'inline'; records: SampleRecord[] };

export interface ValidatedTask extends Omit<
  TaskDefinition,
  'dataset' | 'solver' | 'scorer' | 'sandbox'
> {
  dataset: DatasetRef;
  solver: SolverRef[];
  scorer: ScorerRef;
  /** The `sandbox` setting as written: an image name or a compose file relative to the definition. */
  sandbox?: string;
}

/** A definition that passed every check, with its datasets not yet read. */
export interface RawValidatedDefinition {
  name: string;
  /** As written, relative to the definition file. */
  log_dir?: string;
  settings: ConcurrencySettings;
  tasks: ValidatedTask[];
}

export interface ValidationResult<T> {
  /** Present only when there are no errors. */
  definition?: T;
  warnings: ConfigIssue[];
  errors: ConfigIssue[];
}

/**
 * Validates a definition as parsed from YAML or exported by a module.
 *
 * @param source.file names the definition in every issue.
 */
export function validateDefinition(
  raw: unknown,
  source: { file: string },
): ValidationResult<RawValidatedDefinition> {
  const origin = { file: source.file };
  if (raw === null || raw === undefined) {
    return { warnings: [], errors: [{ ...origin, message: 'the definition is empty' }] };
  }
  const parsed = definitionSchema.safeParse(raw, { reportInput: true });
  if (!parsed.success) {
    return { warnings: [], errors: issuesFromZod(parsed.error, origin) };
  }
  const { errors, warnings } = checkRules(parsed.data, origin);
  if (errors.length > 0) return { warnings, errors };
  return { definition: normalise(parsed.data), warnings, errors };
}

// ---- normalise ----------------------------------------------------------------------------

function normalise(def: ParsedDefinition): RawValidatedDefinition {
  return {
    name: def.name,
    log_dir: def.log_dir,
    settings: pickSettings(def),
    tasks: def.tasks.map((task) => normaliseTask(task, def)),
  };
}

function pickSettings(def: ParsedDefinition): ConcurrencySettings {
  return Object.fromEntries(
    KNOBS.filter((knob) => def[knob] !== undefined).map((knob) => [knob, def[knob]]),
  ) as ConcurrencySettings;
}

function normaliseTask(task: ParsedTask, def: ParsedDefinition): ValidatedTask {
  const scorer = scorerRef(task.scorer);
  // checkRules has made sure one of them is set.
  const model = (task.model ?? def.model) as string;
  return {
    name: task.name,
    dataset: datasetRef(task.dataset),
    solver: solverRefs(task.solver),
    scorer,
    scorerName:
      scorer.type === 'custom'
        ? (task.scorer_name ?? (scorer.scorer.name || 'custom'))
        : scorer.type,
    ...epochsOf(task),
    model,
    // The eval set's model_args describe its model; a task naming another model starts afresh.
    modelArgs: task.model_args ?? (model === def.model ? def.model_args : undefined) ?? {},
    config: task.config ?? {},
    limits: Object.fromEntries(
      LIMITS.filter((limit) => task[limit] !== undefined).map((limit) => [limit, task[limit]]),
    ),
    ...(task.sandbox === undefined ? {} : { sandbox: task.sandbox }),
  };
}

/** The epoch count and the scoring, Inspect's defaults filled in. */
function epochsOf(task: ParsedTask): Pick<TaskDefinition, 'epochs' | 'scoring'> {
  const epochs = typeof task.epochs === 'object' ? task.epochs : { count: task.epochs ?? 1 };
  const reducer = epochs.reducer ?? DEFAULT_SCORING.reducers;
  return {
    epochs: epochs.count,
    scoring: {
      reducers: typeof reducer === 'string' ? [reducer] : reducer,
      // Inspect's f1 declares mean and stderr (its values are fractions, not right or wrong).
      metrics:
        task.metrics ??
        (scorerRef(task.scorer).type === 'f1' ? ['mean', 'stderr'] : DEFAULT_SCORING.metrics),
    },
  };
}

function solverRefs(spec: ParsedTask['solver']): SolverRef[] {
  if (spec === undefined) return [{ type: 'generate', config: {} }];
  return (Array.isArray(spec) ? spec : [spec]).map((entry): SolverRef => {
    if (typeof entry === 'function') return { type: 'custom', solver: entry };
    if (entry === 'generate') return { type: 'generate', config: {} };
    if (entry === 'agent') return { type: 'agent', options: {} };
    if (entry === 'chain_of_thought') return { type: 'chain_of_thought' };
    if (entry === 'multiple_choice') return { type: 'multiple_choice', options: {} };
    if ('system_message' in entry) return { type: 'system_message', text: entry.system_message };
    if ('user_message' in entry) return { type: 'user_message', text: entry.user_message };
    if ('assistant_message' in entry) {
      return { type: 'assistant_message', text: entry.assistant_message };
    }
    if ('prompt_template' in entry) {
      return { type: 'prompt_template', template: entry.prompt_template };
    }
    if ('chain_of_thought' in entry) {
      return entry.chain_of_thought === null
        ? { type: 'chain_of_thought' }
        : { type: 'chain_of_thought', template: entry.chain_of_thought };
    }
    if ('multiple_choice' in entry) {
      return { type: 'multiple_choice', options: entry.multiple_choice ?? {} };
    }
    if ('agent' in entry) return { type: 'agent', options: entry.agent ?? {} };
    return { type: 'generate', config: entry.generate ?? {} };
  });
}

function scorerRef(spec: ParsedTask['scorer']): ScorerRef {
  if (typeof spec === 'function') return { type: 'custom', scorer: spec };
  if (spec === 'exact') return { type: 'exact' };
  if (spec === 'match') return { type: 'match', options: {} };
  if (spec === 'includes') return { type: 'includes', options: {} };
  if (spec === 'choice') return { type: 'choice' };
  if (spec === 'f1') return { type: 'f1', options: {} };
  if ('choice' in spec) return { type: 'choice' };
  if ('f1' in spec) return { type: 'f1', options: spec.f1 ?? {} };
  if ('answer' in spec) return { type: 'answer', kind: spec.answer };
  if ('pattern' in spec) {
    return {
      type: 'pattern',
      options: typeof spec.pattern === 'string' ? { pattern: spec.pattern } : spec.pattern,
    };
  }
  if ('match' in spec) return { type: 'match', options: spec.match ?? {} };
  if ('sandbox_check' in spec) return { type: 'sandbox_check', options: spec.sandbox_check };
  return { type: 'includes', options: spec.includes ?? {} };
}

function datasetRef(spec: ParsedTask['dataset']): DatasetRef {
  if (Array.isArray(spec)) return { type: 'inline', records: spec };
  const { path, format } = typeof spec === 'string' ? { path: spec, format: undefined } : spec;
  const known = format ?? datasetFormatOf(path);
  return { type: 'file', path, ...(known === undefined ? {} : { format: known }) };
}

// ---- rules --------------------------------------------------------------------------------

function checkRules(def: ParsedDefinition, origin: IssueOrigin) {
  const errors: ConfigIssue[] = [];
  const warnings: ConfigIssue[] = [];
  const at = (path: string, message: string, value?: unknown): ConfigIssue => ({
    ...origin,
    path,
    message,
    ...(value === undefined ? {} : { value }),
  });

  if (def.samples_ramp) {
    const problem = rampRangeProblem(def.samples_ramp);
    if (problem) errors.push(at('samples_ramp', problem, def.samples_ramp));
  }
  const modelProblem = (name: string) => {
    try {
      parseModelName(name);
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  };
  // model_args are the model's provider's: checked where they are written, against that model.
  const argsProblems = (prefix: string, model: string, args: Record<string, unknown>) => {
    const parsed = modelArgsSchema(model)?.safeParse(args, { reportInput: true });
    if (!parsed || parsed.success) return [];
    const path = [prefix, 'model_args'].filter((part) => part).join('.');
    return issuesFromZod(parsed.error, { ...origin, path });
  };
  if (def.model !== undefined) {
    const problem = modelProblem(def.model);
    if (problem) errors.push(at('model', problem));
    else if (def.model_args) errors.push(...argsProblems('', def.model, def.model_args));
  }

  const firstByName = new Map<string, number>();
  def.tasks.forEach((task, i) => {
    const path = `tasks.${i}`;
    const first = firstByName.get(task.name);
    if (first === undefined) firstByName.set(task.name, i);
    else errors.push(at(`${path}.name`, `duplicate task name (also tasks.${first})`, task.name));

    if (task.model === undefined && def.model === undefined) {
      errors.push(
        at(`${path}.model`, 'required: set model here or a default model for the eval set'),
      );
    } else if (task.model !== undefined) {
      const problem = modelProblem(task.model);
      if (problem) errors.push(at(`${path}.model`, problem));
      else if (task.model_args) errors.push(...argsProblems(path, task.model, task.model_args));
    } else if (task.model_args && def.model !== undefined) {
      errors.push(...argsProblems(path, def.model, task.model_args));
    }

    if (task.sandbox === undefined) {
      const needs = sandboxUsers(task);
      if (needs.length > 0) {
        errors.push(
          at(
            `${path}.sandbox`,
            `required by ${needs.join(' and ')}: set an image name or a compose file`,
          ),
        );
      }
    }

    errors.push(...scoringProblems(task).map((p) => at(`${path}.${p.path}`, p.message, p.value)));
    errors.push(
      ...vocabularyProblems(task).map((p) => at(`${path}.${p.path}`, p.message, p.value)),
    );

    if (task.scorer_name !== undefined && typeof task.scorer !== 'function') {
      warnings.push(
        at(
          `${path}.scorer_name`,
          'names custom scorers only; ignored for a built-in',
          task.scorer_name,
        ),
      );
    }
  });
  return { errors, warnings };
}

/**
 * A reducer or metric named twice, and a reducer whose k is above the task's epochs (Inspect's
 * `validate_reducer` refuses that too: `pass_at_5` over 3 epochs has no meaning).
 */
function scoringProblems(
  task: ParsedTask,
): Array<{ path: string; message: string; value: unknown }> {
  const { epochs, scoring } = epochsOf(task);
  const reducerPath = Array.isArray(typeof task.epochs === 'object' && task.epochs.reducer)
    ? (i: number) => `epochs.reducer.${i}`
    : () => 'epochs.reducer';
  const problems = scoring.reducers.flatMap((reducer, i) => {
    const needed = reducerEpochsNeeded(reducer);
    const found: Array<{ path: string; message: string; value: unknown }> = [];
    if (scoring.reducers.indexOf(reducer) !== i) {
      found.push({ path: reducerPath(i), message: 'named twice', value: reducer });
    }
    if (needed !== undefined && needed > epochs) {
      found.push({
        path: reducerPath(i),
        message: `needs at least ${needed} epochs; the task has ${epochs}`,
        value: reducer,
      });
    }
    return found;
  });
  scoring.metrics.forEach((metric, i) => {
    if (scoring.metrics.indexOf(metric) !== i) {
      problems.push({ path: `metrics.${i}`, message: 'named twice', value: metric });
    }
  });
  return problems;
}

/**
 * Built-in solvers and scorers that cannot work as written: a `choice` scorer with no
 * `multiple_choice` solver to mark choices, a `pattern` that is not a regular expression, a
 * `multiple_choice` template without its placeholders. What needs the samples (their `choices`)
 * is checked once they are read (`multipleChoiceProblems`).
 */
function vocabularyProblems(
  task: ParsedTask,
): Array<{ path: string; message: string; value?: unknown }> {
  const problems: Array<{ path: string; message: string; value?: unknown }> = [];
  const solvers = solverRefs(task.solver);
  const solverPath = (i: number) => (Array.isArray(task.solver) ? `solver.${i}` : 'solver');
  solvers.forEach((ref, i) => {
    const template = ref.type === 'multiple_choice' ? ref.options.template : undefined;
    if (template !== undefined && !validChoiceTemplate(template)) {
      problems.push({
        path: `${solverPath(i)}.multiple_choice.template`,
        message: `task ${task.name}: a multiple_choice template needs {question} and {choices} placeholders`,
        value: template,
      });
    }
  });
  const scorer = scorerRef(task.scorer);
  if (
    builtInName(scorer) === 'choice' &&
    !solvers.some((ref) => builtInName(ref) === 'multiple_choice')
  ) {
    problems.push({
      path: 'scorer',
      message: `task ${task.name}: the choice scorer reads the choices multiple_choice marks: add the multiple_choice solver`,
    });
  }
  if (scorer.type === 'pattern') {
    try {
      compilePattern(scorer.options.pattern, scorer.options.ignore_case ?? true);
    } catch (error) {
      problems.push({
        path:
          typeof task.scorer === 'object' &&
          typeof (task.scorer as { pattern?: unknown }).pattern === 'string'
            ? 'scorer.pattern'
            : 'scorer.pattern.pattern',
        message: `task ${task.name}: not a valid regular expression (${(error as Error).message})`,
        value: scorer.options.pattern,
      });
    }
  }
  return problems;
}

/**
 * The built-in a step is: its type, or for a function the built-in that made it (a module's
 * `multipleChoice()` or `choice()`), so a module is checked as YAML is.
 */
function builtInName(ref: SolverRef | ScorerRef): string {
  if (ref.type !== 'custom') return ref.type;
  const identity = functionIdentity('solver' in ref ? ref.solver : ref.scorer);
  const [name] = Object.keys(identity as Record<string, unknown>);
  return name === 'function' || name === undefined ? 'custom' : name;
}

/**
 * A task whose `multiple_choice` solver meets samples it cannot ask: none of their choices, or
 * more than the 26 letters A to Z can name. Checked once the dataset is read.
 */
export function multipleChoiceProblems(
  task: Pick<ValidatedTask, 'name' | 'solver'>,
  samples: Array<{ id: string | number; choices?: string[] }>,
): string[] {
  if (!task.solver.some((ref) => builtInName(ref) === 'multiple_choice')) return [];
  const problems: string[] = [];
  const without = samples.filter((sample) => !sample.choices || sample.choices.length === 0);
  if (without.length > 0) {
    problems.push(
      `task ${task.name}: the multiple_choice solver needs samples with choices; ${without.length} of ${samples.length} have none (sample ${without[0].id} first)`,
    );
  }
  const over = samples.filter((sample) => (sample.choices?.length ?? 0) > MAX_CHOICES);
  if (over.length > 0) {
    problems.push(
      `task ${task.name}: multiple_choice letters choices A to Z, at most ${MAX_CHOICES}; sample ${over[0].id} has ${over[0].choices?.length}${over.length > 1 ? ` (and ${over.length - 1} more samples have too many)` : ''}`,
    );
  }
  return problems;
}

/** The built-ins of a task that work in its sandbox, by name. */
function sandboxUsers(task: ParsedTask): string[] {
  const users = solverRefs(task.solver).some((ref) => ref.type === 'agent')
    ? ['the agent solver']
    : [];
  if (scorerRef(task.scorer).type === 'sandbox_check') users.push('the sandbox_check scorer');
  return users;
}

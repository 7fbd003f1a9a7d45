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
import type { TaskDefinition } from '../definition/types';
import { modelArgsSchema, parseModelName } from './models';
import { scorerRef, solverRefs, stepProblems, type ScorerRef, type SolverRef } from './steps';
import {
  datasetFormatOf,
  definitionSchema,
  type DatasetFormat,
  type ParsedDefinition,
  type ParsedTask,
  type SampleRecord,
} from './schema';

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
    errors.push(...stepProblems(task).map((p) => at(`${path}.${p.path}`, p.message, p.value)));

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

/** The built-ins of a task that work in its sandbox, by name. */
function sandboxUsers(task: ParsedTask): string[] {
  const users = solverRefs(task.solver).some((ref) => ref.type === 'agent')
    ? ['the agent solver']
    : [];
  if (scorerRef(task.scorer).type === 'sandbox_check') users.push('the sandbox_check scorer');
  return users;
}

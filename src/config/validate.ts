/**
 * Validation of an eval set definition, in three pure steps: the zod schema (shape), rules
 * (relations between fields: unique names, known models, a usable ramp), normalise (shorthands
 * expanded, defaults filled; it runs last because it relies on the rules having held). No I/O:
 * the loader in `definition/load.ts` reads files and datasets.
 */

import type { z } from 'zod';
import type { ConfigIssue } from '../errors';
import type {
  ConcurrencySettings,
  GenerateConfig,
  Scorer,
  Solver,
  TaskDefinition,
} from '../definition/types';
import type { AgentOptions } from '../eval/agent';
import type { SandboxCheckOptions } from '../eval/sandbox-scorers';
import type { MatchOptions } from '../eval/scorers';
import { modelArgsSchema, parseModelName } from '../models';
import {
  datasetFormatOf,
  definitionSchema,
  rampRangeProblem,
  type DatasetFormat,
  type ParsedDefinition,
  type ParsedTask,
  type SampleRecord,
} from './schema';

/** A solver chain step, before it is built. */
export type SolverRef =
  | { type: 'system_message'; text: string }
  | { type: 'generate'; config: GenerateConfig }
  | { type: 'agent'; options: AgentOptions }
  | { type: 'custom'; solver: Solver };

/** A scorer, before it is built. */
export type ScorerRef =
  | { type: 'match'; options: MatchOptions }
  | { type: 'includes'; options: { ignore_case?: boolean } }
  | { type: 'exact' }
  | { type: 'sandbox_check'; options: SandboxCheckOptions }
  | { type: 'custom'; scorer: Scorer };

/** Where a task's samples come from; a file path is as written, relative to the definition. */
export type DatasetRef =
  | { type: 'file'; path: string; format: DatasetFormat }
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

/** Where issues found in a document are: its file, and its line or path prefix inside it. */
export interface IssueOrigin {
  file?: string;
  line?: number;
  /** Prepended to every issue's path, e.g. `tasks.0.dataset.3` for an inline sample. */
  path?: string;
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
  const settings: ConcurrencySettings = {
    max_tasks: def.max_tasks,
    max_samples: def.max_samples,
    max_sandboxes: def.max_sandboxes,
    max_connections: def.max_connections,
    samples_ramp: def.samples_ramp,
    max_workers: def.max_workers,
    tend_interval: def.tend_interval,
  };
  return Object.fromEntries(
    Object.entries(settings).filter(([, value]) => value !== undefined),
  ) as ConcurrencySettings;
}

function normaliseTask(task: ParsedTask, def: ParsedDefinition): ValidatedTask {
  const scorer = scorerRef(task.scorer);
  // checkRules has made sure one of them is set.
  const model = (task.model ?? def.model) as string;
  return {
    name: task.name,
    dataset: datasetRef(task.dataset) as DatasetRef,
    solver: solverRefs(task.solver),
    scorer,
    scorerName:
      scorer.type === 'custom'
        ? (task.scorer_name ?? (scorer.scorer.name || 'custom'))
        : scorer.type,
    epochs: task.epochs ?? 1,
    model,
    // The eval set's model_args describe its model; a task naming another model starts afresh.
    modelArgs: task.model_args ?? (model === def.model ? def.model_args : undefined) ?? {},
    config: task.config ?? {},
    ...(task.sandbox === undefined ? {} : { sandbox: task.sandbox }),
  };
}

function solverRefs(spec: ParsedTask['solver']): SolverRef[] {
  if (spec === undefined) return [{ type: 'generate', config: {} }];
  return (Array.isArray(spec) ? spec : [spec]).map((entry): SolverRef => {
    if (typeof entry === 'function') return { type: 'custom', solver: entry };
    if (entry === 'generate') return { type: 'generate', config: {} };
    if (entry === 'agent') return { type: 'agent', options: {} };
    if ('system_message' in entry) return { type: 'system_message', text: entry.system_message };
    if ('agent' in entry) return { type: 'agent', options: entry.agent ?? {} };
    return { type: 'generate', config: entry.generate ?? {} };
  });
}

function scorerRef(spec: ParsedTask['scorer']): ScorerRef {
  if (typeof spec === 'function') return { type: 'custom', scorer: spec };
  if (spec === 'exact') return { type: 'exact' };
  if (spec === 'match') return { type: 'match', options: {} };
  if (spec === 'includes') return { type: 'includes', options: {} };
  if ('match' in spec) return { type: 'match', options: spec.match ?? {} };
  if ('sandbox_check' in spec) return { type: 'sandbox_check', options: spec.sandbox_check };
  return { type: 'includes', options: spec.includes ?? {} };
}

/** `undefined` for a file whose format cannot be told, which checkRules reports. */
function datasetRef(spec: ParsedTask['dataset']): DatasetRef | undefined {
  if (Array.isArray(spec)) return { type: 'inline', records: spec };
  const { path, format } = typeof spec === 'string' ? { path: spec, format: undefined } : spec;
  const known = format ?? datasetFormatOf(path);
  return known && { type: 'file', path, format: known };
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
      if (parseModelName(name).provider === 'anthropic') {
        return 'the anthropic provider is not supported yet (supported: mockllm, openai, openai-api)';
      }
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

    if (datasetRef(task.dataset) === undefined) {
      errors.push(
        at(
          `${path}.dataset`,
          'cannot tell the format from the file name: add format: jsonl or csv',
          task.dataset,
        ),
      );
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

/** The built-ins of a task that work in its sandbox, by name. */
function sandboxUsers(task: ParsedTask): string[] {
  const users = solverRefs(task.solver).some((ref) => ref.type === 'agent')
    ? ['the agent solver']
    : [];
  if (scorerRef(task.scorer).type === 'sandbox_check') users.push('the sandbox_check scorer');
  return users;
}

// ---- zod issues -----------------------------------------------------------------------------

type ZodIssue = z.core.$ZodIssue;

/**
 * Turns zod's issues into Steward's, one per problem, with messages in the user's terms: an
 * unknown key is named, a union that failed reports the branch the value was meant for.
 */
export function issuesFromZod(error: z.ZodError, origin: IssueOrigin = {}): ConfigIssue[] {
  return error.issues
    .flatMap((issue) => pinpoint(issue, []))
    .flatMap(({ issue, path }) => {
      const where = (keys: PropertyKey[]) => ({
        ...(origin.file === undefined ? {} : { file: origin.file }),
        ...(origin.line === undefined ? {} : { line: origin.line }),
        path: [origin.path, ...keys.map(String)].filter((part) => part).join('.') || undefined,
      });
      if (issue.code === 'unrecognized_keys') {
        return issue.keys.map((key) => ({ ...where(path), message: `unknown key "${key}"` }));
      }
      const input: unknown = issue.input;
      const message = describe(issue, input);
      return [{ ...where(path), message, ...(input === undefined ? {} : { value: input }) }];
    });
}

/** Codes meaning "this value is not of that branch's kind at all", as opposed to a near miss. */
const MISMATCH = new Set([
  'invalid_type',
  'invalid_value',
  'unrecognized_keys',
  'invalid_union',
  'custom',
]);

/**
 * zod reports a failed union as every branch's issues. The user meant one branch: the one whose
 * kind the value has (its issues are deeper, or about size). Report that branch's issues, or the
 * union's own message when no single branch fits; a nested union that is the only candidate
 * speaks for itself (its message names the unknown built-in).
 */
function pinpoint(
  issue: ZodIssue,
  base: PropertyKey[],
): Array<{ issue: ZodIssue; path: PropertyKey[] }> {
  const path = [...base, ...issue.path];
  if (issue.code !== 'invalid_union') return [{ issue, path }];
  const isMismatch = (i: ZodIssue) => i.path.length === 0 && MISMATCH.has(i.code);
  const nearMisses = issue.errors.filter((branch) => branch.length > 0 && !branch.some(isMismatch));
  if (nearMisses.length === 1) return nearMisses[0].flatMap((i) => pinpoint(i, path));
  const nested = issue.errors.filter(
    (branch) =>
      branch.length === 1 && branch[0].code === 'invalid_union' && branch[0].path.length === 0,
  );
  if (nearMisses.length === 0 && nested.length === 1) return pinpoint(nested[0][0], path);
  return [{ issue, path }];
}

/** zod's type names, in the user's words (a record is what YAML and JSON call an object). */
const TYPE_NAMES: Partial<Record<string, string>> = { int: 'integer', record: 'object' };

function describe(issue: ZodIssue, input: unknown): string {
  switch (issue.code) {
    case 'invalid_type':
      if (input === undefined) return 'required';
      // YAML's .inf and .nan are numbers to JavaScript, but not ones any setting can take.
      if (typeof input === 'number' && !Number.isFinite(input)) return 'expected a finite number';
      return `expected ${TYPE_NAMES[issue.expected] ?? issue.expected}, got ${kindOf(input)}`;
    case 'too_small':
      return sizeMessage(issue.origin, 'min', issue.minimum, issue.inclusive ?? true);
    case 'too_big':
      return sizeMessage(issue.origin, 'max', issue.maximum, issue.inclusive ?? true);
    case 'invalid_value':
      return issue.values.length === 1
        ? `expected ${JSON.stringify(issue.values[0])}`
        : `expected one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}`;
    default:
      // Our schemas word their own messages for formats, custom checks and unions.
      return issue.message;
  }
}

function sizeMessage(
  origin: string,
  side: 'min' | 'max',
  limit: number | bigint,
  inclusive: boolean,
): string {
  const n = String(limit);
  // zod says `int` for a `.int()` number, whose only maximum is the largest safe integer.
  if (origin === 'number' || origin === 'int') {
    if (side === 'min') return inclusive ? `must be at least ${n}` : `must be greater than ${n}`;
    return inclusive ? `must be at most ${n}` : `must be less than ${n}`;
  }
  if (side === 'min' && n === '1') return 'must not be empty';
  const unit = origin === 'string' ? 'characters' : 'items';
  return `must have ${side === 'min' ? 'at least' : 'at most'} ${n} ${unit}`;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'array' : typeof value;
}

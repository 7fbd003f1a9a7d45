/**
 * Loading an eval set definition: read the file (YAML, or a TypeScript/JavaScript module run
 * through tsx), validate it, read its datasets, and build its solvers and scorers. Validation
 * itself is pure and lives in `config/validate.ts`; this is the I/O around it.
 */

import * as path from 'node:path';
import { require as tsxRequire } from 'tsx/cjs/api';
import { ConfigError, type ConfigIssue } from '../errors';
import { parseYaml, readTextFile } from '../config/load';
import { multipleChoiceProblems, type ScorerRef, type SolverRef } from '../config/steps';
import { validateDefinition, type DatasetRef, type ValidatedTask } from '../config/validate';
import { agent } from '../eval/agent';
import { sandboxCheck } from '../eval/sandbox-scorers';
import { f1 } from '../eval/f1';
import { choice, multipleChoice } from '../eval/multiple-choice';
import { answer, exact, includes, match, pattern } from '../eval/scorers';
import {
  assistantMessage,
  chainOfThought,
  generate,
  promptTemplate,
  systemMessage,
  userMessage,
} from '../eval/solvers';
import { isComposeFile, loadSandboxSpec } from '../sandbox/compose';
import type { SandboxSpec } from '../sandbox/types';
import { loadDataset, samplesFromRecords } from '../definition/dataset';
import { diskLookup } from '../definition/sample-files';
import { datasetDigest, functionIdentity, type TaskIdentity } from '../definition/identity';
import type {
  EvalSetDefinition,
  Sample,
  Scorer,
  Solver,
  TaskDefinition,
} from '../definition/types';

const YAML_EXTENSIONS = new Set(['.yaml', '.yml']);
const MODULE_EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs']);

export interface LoadOptions {
  /** Receives problems that do not stop the load (e.g. an ignored `scorer_name`). */
  onWarning?: (issue: ConfigIssue) => void;
  /**
   * The file to read for a dataset or compose file the definition names (`ref`, as written),
   * given the definition's directory. Default: `ref` resolved against that directory.
   */
  locate?: (ref: string, baseDir: string) => string;
  /** Receives the local files a module definition loaded (itself included; no packages). */
  onModuleFiles?: (files: string[]) => void;
}

function defaultLocate(ref: string, baseDir: string): string {
  return path.isAbsolute(ref) ? ref : path.join(baseDir, ref);
}

/**
 * Loads a definition from `evalset.yaml` (or `.yml`) or from a module exporting one (`default`
 * or `evalSet`). Relative paths in it are relative to its directory; the result's paths are
 * absolute.
 *
 * @param file as the user gave it; messages name files the same way (relative stays relative).
 * @throws ConfigError listing every problem found, in the definition and in its datasets.
 */
export async function loadDefinition(
  file: string,
  options: LoadOptions = {},
): Promise<EvalSetDefinition> {
  const raw = await readDefinition(file, options);
  const { definition, warnings, errors } = validateDefinition(raw, { file });
  warnings.forEach((issue) => options.onWarning?.(issue));
  if (!definition) throw new ConfigError(errors);

  const dir = path.dirname(path.resolve(file));
  const locate = options.locate ?? defaultLocate;
  const [datasets, sandboxes] = await Promise.all([
    Promise.allSettled(
      definition.tasks.map((task, i) =>
        readSamples(task.dataset, file, `tasks.${i}.dataset`, locate),
      ),
    ),
    Promise.allSettled(
      definition.tasks.map(async (task) =>
        task.sandbox === undefined
          ? undefined
          : loadSandboxSpec(
              isComposeFile(task.sandbox) ? locate(task.sandbox, dir) : task.sandbox,
              dir,
            ),
      ),
    ),
  ]);
  const issues = [...datasets, ...sandboxes].flatMap((result) => {
    if (result.status === 'fulfilled') return [];
    if (result.reason instanceof ConfigError) return result.reason.issues;
    throw result.reason;
  });
  if (issues.length > 0) throw new ConfigError(issues);
  const choiceIssues = definition.tasks.flatMap((task, i) =>
    multipleChoiceProblems(task, (datasets[i] as PromiseFulfilledResult<Sample[]>).value).map(
      (message): ConfigIssue => ({ file, path: `tasks.${i}.dataset`, message }),
    ),
  );
  if (choiceIssues.length > 0) throw new ConfigError(choiceIssues);
  definition.tasks.forEach((task, i) => {
    const dataset = (datasets[i] as PromiseFulfilledResult<Sample[]>).value;
    const needing = dataset.filter((s) => s.files !== undefined || s.setup !== undefined).length;
    if (task.sandbox === undefined && needing > 0) {
      options.onWarning?.({
        file,
        path: `tasks.${i}.sandbox`,
        message: `${needing} of the task's samples have files or setup, which need a sandbox: without one they are ignored`,
      });
    }
  });

  return {
    name: definition.name,
    source: path.resolve(file),
    ...(definition.log_dir === undefined ? {} : { log_dir: path.resolve(dir, definition.log_dir) }),
    settings: definition.settings,
    tasks: definition.tasks.map((task, i) =>
      buildTask(
        task,
        (datasets[i] as PromiseFulfilledResult<Sample[]>).value,
        (sandboxes[i] as PromiseFulfilledResult<SandboxSpec | undefined>).value,
      ),
    ),
    identities: Object.fromEntries(
      definition.tasks.map((task, i) => [
        task.name,
        identityOf(
          task,
          (datasets[i] as PromiseFulfilledResult<Sample[]>).value,
          (sandboxes[i] as PromiseFulfilledResult<SandboxSpec | undefined>).value,
        ),
      ]),
    ),
  };
}

async function readDefinition(file: string, options: LoadOptions): Promise<unknown> {
  const extension = path.extname(file).toLowerCase();
  if (YAML_EXTENSIONS.has(extension)) {
    return parseYaml(await readTextFile(file, 'definition file'), file);
  }
  if (MODULE_EXTENSIONS.has(extension)) return importDefinition(file, options.onModuleFiles);
  const known = [...YAML_EXTENSIONS, ...MODULE_EXTENSIONS].join(', ');
  throw new ConfigError([{ file, message: `unsupported definition file type (use ${known})` }]);
}

/**
 * Runs a module definition through tsx, so TypeScript needs no build step. tsx loads it in a
 * namespace of its own: a fresh copy each time, and no hooks left installed afterwards.
 */
async function importDefinition(
  file: string,
  onModuleFiles?: (files: string[]) => void,
): Promise<unknown> {
  // Checked first: a missing file would otherwise surface as tsx's resolution error.
  await readTextFile(file, 'definition file');
  let exports: Record<string, unknown>;
  try {
    exports = tsxRequire(path.resolve(file), __filename) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError([
      { file, message: `cannot load the module: ${(error as Error).message}` },
    ]);
  }
  onModuleFiles?.(localModuleFiles(path.resolve(file)));
  const { evalSet, default: byDefault } = exports;
  if (evalSet !== undefined && byDefault !== undefined && evalSet !== byDefault) {
    throw new ConfigError([
      { file, message: 'exports two eval sets (default and evalSet): export one' },
    ]);
  }
  const definition = evalSet ?? byDefault;
  if (definition === undefined) {
    throw new ConfigError([
      {
        file,
        message:
          'exports no eval set: use `export default defineEvalSet({...})` or `export const evalSet = ...`',
      },
    ]);
  }
  return definition;
}

/**
 * The files of the definition's own that the module at `file` loaded: tsx loads a module and its
 * imports under one namespace (`<file>?namespace=<n>` in the require cache). Those under the
 * definition's directory count; packages (anything in node_modules), Steward's own code and
 * files elsewhere are left to be resolved where they are.
 */
function localModuleFiles(file: string): string[] {
  const keys = Object.keys(require.cache);
  const namespace = keys.find((key) => key.startsWith(`${file}?`))?.slice(file.length);
  if (namespace === undefined) return [file];
  const packageRoot = path.resolve(__dirname, '..', '..');
  const own = [path.join(packageRoot, 'src'), path.join(packageRoot, 'dist')];
  const under = (loaded: string, dir: string): boolean => {
    const relative = path.relative(dir, loaded);
    return !relative.startsWith('..') && !path.isAbsolute(relative);
  };
  return keys
    .filter((key) => key.endsWith(namespace))
    .map((key) => key.slice(0, -namespace.length))
    .filter(
      (loaded) =>
        under(loaded, path.dirname(file)) &&
        !loaded.split(path.sep).includes('node_modules') &&
        !own.some((dir) => under(loaded, dir)),
    );
}

/** A task's samples; a file is found relative to the definition and named in messages so. */
async function readSamples(
  dataset: DatasetRef,
  file: string,
  at: string,
  locate: NonNullable<LoadOptions['locate']>,
): Promise<Sample[]> {
  if (dataset.type === 'file') {
    return loadDataset(locate(dataset.path, path.dirname(file)), dataset.format, { locate });
  }
  // Inline samples' `files` and `setup` are relative to the definition, as the dataset is.
  const { samples, issues } = samplesFromRecords(
    dataset.records.map((record, i) => ({ record, place: { file, path: `${at}.${i}` } })),
    diskLookup(path.dirname(path.resolve(file)), locate),
  );
  if (issues.length > 0) throw new ConfigError(issues);
  if (samples.length === 0) throw new ConfigError([{ file, path: at, message: 'no samples' }]);
  return samples;
}

function buildTask(
  task: ValidatedTask,
  dataset: Sample[],
  sandbox: SandboxSpec | undefined,
): TaskDefinition {
  const { sandbox: _setting, ...rest } = task;
  return {
    ...rest,
    dataset,
    solver: task.solver.map(buildSolver),
    scorer: buildScorer(task.scorer),
    ...(sandbox === undefined ? {} : { sandbox }),
  };
}

function identityOf(
  task: ValidatedTask,
  dataset: Sample[],
  sandbox: SandboxSpec | undefined,
): TaskIdentity {
  return {
    model: task.model,
    model_args: task.modelArgs,
    solver: task.solver.map((ref) => {
      switch (ref.type) {
        case 'system_message':
        case 'user_message':
        case 'assistant_message':
          return { [ref.type]: ref.text };
        case 'prompt_template':
          return { prompt_template: ref.template };
        case 'chain_of_thought':
          return { chain_of_thought: ref.template ?? {} };
        case 'multiple_choice':
          return { multiple_choice: ref.options };
        case 'generate':
          return { generate: ref.config };
        case 'agent':
          return { agent: ref.options };
        case 'custom':
          return functionIdentity(ref.solver);
      }
    }),
    scorer: scorerIdentity(task.scorer),
    dataset: datasetDigest(dataset),
    epochs: task.epochs,
    config: { ...task.config },
    sandbox: sandbox ?? null,
  };
}

/** A built-in scorer by its name and options, as a module's `withIdentity` marks one. */
function scorerIdentity(ref: ScorerRef): unknown {
  switch (ref.type) {
    case 'custom':
      return functionIdentity(ref.scorer);
    case 'exact':
    case 'choice':
      return { [ref.type]: {} };
    case 'answer':
      return { answer: ref.kind };
    default:
      return { [ref.type]: ref.options };
  }
}

function buildSolver(ref: SolverRef): Solver {
  switch (ref.type) {
    case 'system_message':
      return systemMessage(ref.text);
    case 'user_message':
      return userMessage(ref.text);
    case 'assistant_message':
      return assistantMessage(ref.text);
    case 'prompt_template':
      return promptTemplate(ref.template);
    case 'chain_of_thought':
      return chainOfThought(ref.template);
    case 'multiple_choice':
      return multipleChoice(ref.options);
    case 'generate':
      return generate(ref.config);
    case 'agent':
      return agent(ref.options);
    case 'custom':
      return ref.solver;
  }
}

function buildScorer(ref: ScorerRef): Scorer {
  switch (ref.type) {
    case 'match':
      return match(ref.options);
    case 'includes':
      return includes(ref.options);
    case 'exact':
      return exact();
    case 'choice':
      return choice();
    case 'pattern':
      return pattern(ref.options);
    case 'answer':
      return answer(ref.kind);
    case 'f1':
      return f1(ref.options);
    case 'sandbox_check':
      return sandboxCheck(ref.options);
    case 'custom':
      return ref.scorer;
  }
}

/**
 * Steward's public API for module definitions: `import { defineEvalSet, generate, match } from
 * 'steward'`. A module exports its eval set as `default` or `evalSet`; solvers and scorers may be
 * the built-ins below or functions of the user's own.
 */

import type { EvalSetSpec } from '../config/schema';
import * as scorers from '../eval/scorers';
import type { Scorer } from './types';

/**
 * Declares an eval set in a module. It returns its argument unchanged: it exists so editors
 * check the definition's shape as it is typed.
 *
 * @example
 * export default defineEvalSet({
 *   name: 'hello',
 *   model: 'mockllm/model',
 *   tasks: [{ name: 'arith', dataset: 'arith.jsonl', solver: [generate()], scorer: match() }],
 * });
 */
export function defineEvalSet(definition: EvalSetSpec): EvalSetSpec {
  return definition;
}

/**
 * A built-in scorer whose function carries the built-in's name: the loader names a function
 * scorer after the function, so `match()` in a module is logged as `match`, as in YAML.
 */
function named<A extends unknown[]>(name: string, make: (...args: A) => Scorer) {
  return (...args: A): Scorer => Object.defineProperty(make(...args), 'name', { value: name });
}

/** Inspect's `match()`: the target at the start, end, anywhere in, or exactly as the completion. */
export const match = named('match', scorers.match);
/** Inspect's `includes()`: the target appears anywhere in the completion. */
export const includes = named('includes', scorers.includes);
/** Inspect's `exact()`: the completion equals a target, disregarding case and runs of whitespace. */
export const exact = named('exact', scorers.exact);

export { generate, systemMessage } from '../eval/solvers';
export { agent, type AgentOptions } from '../eval/agent';
export { sandboxCheck, type SandboxCheckOptions } from '../eval/sandbox-scorers';
export { loadDefinition } from './load';
export { loadDataset } from './dataset';
export type {
  DatasetSpec,
  EvalSetSpec,
  SampleRecord,
  ScorerSpec,
  SolverSpec,
  TaskSpec,
} from '../config/schema';
export type {
  ChatMessage,
  EvalSetDefinition,
  GenerateConfig,
  Model,
  ModelOutput,
  Sample,
  SampleContext,
  Score,
  ScoreValue,
  Scorer,
  Solver,
  TaskDefinition,
  TaskState,
  TokenUsage,
  ToolCall,
  ToolDefinition,
} from './types';

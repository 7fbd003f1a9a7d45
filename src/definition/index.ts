/**
 * Steward's public API for module definitions: `import { defineEvalSet, generate, match } from
 * 'steward'`. A module exports its eval set as `default` or `evalSet`; solvers and scorers may be
 * the built-ins below or functions of the user's own.
 */

import type { EvalSetSpec } from '../config/schema';
import { agent as agentSolver } from '../eval/agent';
import { f1 as f1Scorer } from '../eval/f1';
import * as multipleChoiceModule from '../eval/multiple-choice';
import { sandboxCheck as sandboxScorer } from '../eval/sandbox-scorers';
import * as scorers from '../eval/scorers';
import * as solvers from '../eval/solvers';
import { withIdentity } from './identity';
import type { Scorer, Solver } from './types';

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
 * scorer after the function, so `match()` in a module is logged as `match`, as in YAML. It also
 * carries its options, so the task's identity sees them as it does in YAML.
 */
function named<A extends unknown[]>(name: string, make: (...args: A) => Scorer) {
  return (...args: A): Scorer =>
    withIdentity(
      Object.defineProperty(make(...args), 'name', { value: name }),
      name,
      args[0] ?? {},
    );
}

/** A built-in solver that carries its name and options, for the task's identity. */
function described<A extends unknown[]>(name: string, make: (...args: A) => Solver) {
  return (...args: A): Solver => withIdentity(make(...args), name, args[0] ?? {});
}

/** Inspect's `match()`: the target at the start, end, anywhere in, or exactly as the completion. */
export const match = named('match', scorers.match);
/** Inspect's `includes()`: the target appears anywhere in the completion. */
export const includes = named('includes', scorers.includes);
/** Inspect's `exact()`: the completion equals a target, disregarding case and runs of whitespace. */
export const exact = named('exact', scorers.exact);
/** Inspect's `generate()`: calls the model with the conversation so far. */
export const generate = described('generate', solvers.generate);
/** Inspect's `system_message()`: puts a system message first. */
export const systemMessage = described('system_message', solvers.systemMessage);
/** Inspect's `user_message()`: appends a user message (metadata fills `{name}`s). */
export const userMessage = described('user_message', solvers.userMessage);
/** Inspect's `assistant_message()`: appends an assistant message (metadata fills `{name}`s). */
export const assistantMessage = described('assistant_message', solvers.assistantMessage);
/** Inspect's `prompt_template()`: rewrites the user prompt; `{prompt}` is the prompt as it was. */
export const promptTemplate = described('prompt_template', solvers.promptTemplate);
/** Inspect's `chain_of_thought()`: asks for reasoning, then `ANSWER: ...` on the last line. */
export const chainOfThought = described('chain_of_thought', solvers.chainOfThought);
/** Inspect's `multiple_choice()`: asks the sample's lettered choices and reads `ANSWER: X`. */
export const multipleChoice = described('multiple_choice', multipleChoiceModule.multipleChoice);
/** Inspect's `choice()`: scores the choices `multiple_choice` marked against the target letters. */
export const choice = named('choice', multipleChoiceModule.choice);
/** Inspect's `pattern()`: a regular expression's group compared with the targets. */
export const pattern = named('pattern', scorers.pattern);
/** Inspect's `answer()`: the letter, word or line after the output's last `ANSWER:`. */
export const answer = named('answer', scorers.answer);
/** Inspect's `f1()`: token F1 against the best target, normalised as Inspect does. */
export const f1 = named('f1', f1Scorer);
/** The tool-calling agent loop in the task's sandbox. */
export const agent = described('agent', agentSolver);
/** Scores by running a check in the sample's sandbox. */
export const sandboxCheck = named('sandbox_check', sandboxScorer);

export type { AgentOptions } from '../eval/agent';
export type { F1Options } from '../eval/f1';
export type { MultipleChoiceOptions } from '../eval/multiple-choice';
export type { AnswerKind, MatchOptions, PatternOptions } from '../eval/scorers';
export type { SandboxCheckOptions } from '../eval/sandbox-scorers';
export { loadDefinition } from '../loader/definition';
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
  Choice,
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

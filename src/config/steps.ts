/**
 * A task's solver chain and scorer as written, turned into refs (a built-in by name and
 * options, or a function), and the rules on them that need no dataset. Pure, as the rest of
 * validation: `loader/definition.ts` builds the functions.
 */

import { MAX_CHOICES, compilePattern, validChoiceTemplate } from '../core/vocabulary';
import { functionIdentity } from '../definition/identity';
import type { GenerateConfig, Scorer, Solver } from '../definition/types';
import type { AgentOptions } from '../eval/agent';
import type { F1Options } from '../eval/f1';
import type { MultipleChoiceOptions } from '../eval/multiple-choice';
import type { SandboxCheckOptions } from '../eval/sandbox-scorers';
import type { AnswerKind, MatchOptions, PatternOptions } from '../eval/scorers';
import type { ParsedTask } from './schema';

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

export function solverRefs(spec: ParsedTask['solver']): SolverRef[] {
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

export function scorerRef(spec: ParsedTask['scorer']): ScorerRef {
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

/**
 * Built-in solvers and scorers that cannot work as written: a `choice` scorer with no
 * `multiple_choice` solver to mark choices, a `pattern` that is not a regular expression, a
 * `multiple_choice` template without its placeholders. What needs the samples (their `choices`)
 * is checked once they are read (`multipleChoiceProblems`).
 */
export function stepProblems(
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
  task: { name: string; solver: SolverRef[] },
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

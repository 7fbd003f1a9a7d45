/**
 * The built-in solvers (`system_message`, `user_message`, `assistant_message`, `prompt_template`,
 * `chain_of_thought`, `generate`) and the state a solver chain starts from, with Inspect AI's
 * semantics (`inspect_ai/solver/_prompt.py`). `multiple_choice` is in `multiple-choice.ts`.
 */

import type {
  ChatMessage,
  GenerateConfig,
  Sample,
  Solver,
  TaskState,
  TokenUsage,
} from '../definition/types';

/** The state before any solver runs: a string input becomes one user message. */
export function initialState(sample: Sample, epoch: number): TaskState {
  return {
    sample,
    epoch,
    // A copy: solvers may edit messages, and the dataset's sample is shared by every epoch.
    messages:
      typeof sample.input === 'string'
        ? [{ role: 'user', content: sample.input }]
        : structuredClone(sample.input),
    ...(sample.choices !== undefined
      ? { choices: sample.choices.map((value, i) => ({ value, original_position: i })) }
      : {}),
    usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
    completed: false,
    store: {},
  };
}

/**
 * Adds a system message after any the conversation already has (at the start, for a plain
 * input), as Inspect does. `{name}` placeholders are filled from the sample's metadata; unknown
 * ones stay as written, and `{{` / `}}` stand for literal braces.
 */
export function systemMessage(text: string): Solver {
  return async (state) => {
    const message: ChatMessage = {
      role: 'system',
      content: formatTemplate(text, templateParams(state)),
    };
    const messages = [...state.messages];
    messages.splice(lastIndexOf(messages, 'system') + 1, 0, message);
    return { ...state, messages };
  };
}

/** Appends a user message, its `{name}` placeholders filled as `systemMessage`'s are. */
export function userMessage(text: string): Solver {
  return async (state) => ({
    ...state,
    messages: [
      ...state.messages,
      { role: 'user', content: formatTemplate(text, templateParams(state)) },
    ],
  });
}

/** Appends an assistant message, as if the model had said it, placeholders filled likewise. */
export function assistantMessage(text: string): Solver {
  return async (state) => ({
    ...state,
    messages: [
      ...state.messages,
      { role: 'assistant', content: formatTemplate(text, templateParams(state)) },
    ],
  });
}

/**
 * Rewrites the user prompt (the last user message) through `template`: `{prompt}` is the prompt
 * as it was, other `{name}`s the sample's metadata (a metadata field named `prompt` does not
 * hide the prompt).
 */
export function promptTemplate(template: string): Solver {
  return async (state) =>
    withUserPrompt(state, (prompt) => {
      const { prompt: _hidden, ...params } = templateParams(state);
      return formatTemplate(template, { prompt, ...params });
    });
}

/** The default `chain_of_thought` template: asks for reasoning, then `ANSWER: ...` last. */
export const CHAIN_OF_THOUGHT_TEMPLATE = `
{prompt}

Work through the problem one step at a time before you answer. Then give your answer on a line of its own at the very end, written as "ANSWER: $ANSWER" (leave out the quotes), where $ANSWER is your answer.
`;

/**
 * Rewrites the user prompt to ask for step-by-step reasoning. Only `{prompt}` is filled: the
 * template sees no metadata, as in Inspect.
 */
export function chainOfThought(template: string = CHAIN_OF_THOUGHT_TEMPLATE): Solver {
  return async (state) => withUserPrompt(state, (prompt) => formatTemplate(template, { prompt }));
}

/**
 * The state with its user prompt (the last user message, as Inspect's `state.user_prompt`)
 * replaced by `rewrite(prompt)`.
 *
 * @throws Error when the conversation has no user message.
 */
export function withUserPrompt(state: TaskState, rewrite: (prompt: string) => string): TaskState {
  const index = lastIndexOf(state.messages, 'user');
  if (index < 0) throw new Error('the conversation has no user message to rewrite');
  const messages = [...state.messages];
  messages[index] = { role: 'user', content: rewrite(messages[index].content) };
  return { ...state, messages };
}

/** The user prompt's text (the last user message's). */
export function userPrompt(state: TaskState): string {
  const index = lastIndexOf(state.messages, 'user');
  if (index < 0) throw new Error('the conversation has no user message');
  return state.messages[index].content;
}

/** What a template's `{name}`s may name: the sample's metadata and the state's store. */
function templateParams(state: TaskState): Record<string, unknown> {
  return { ...(state.sample.metadata ?? {}), ...state.store };
}

/**
 * Calls the model on the conversation so far and appends its reply, adding its usage to the
 * sample's. `config` overrides the task's generate config field by field; the task's config and
 * the sample context (for mockllm's scripts) come from the sample-scoped model `runSample` puts
 * in `ctx`.
 */
export function generate(config: GenerateConfig = {}): Solver {
  return async (state, ctx) => {
    const output = await ctx.model.generate(state.messages, { config, signal: ctx.signal });
    ctx.heartbeat();
    return {
      ...state,
      messages: [...state.messages, output.message],
      output,
      usage: addUsage(state.usage, output.usage),
    };
  };
}

function lastIndexOf(messages: ChatMessage[], role: ChatMessage['role']): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === role) return i;
  }
  return -1;
}

function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
  };
}

/**
 * Python's `str.format` as Inspect's `format_template` uses it: fields that are unknown, or
 * null (Python's None), are left as written; `{{` / `}}` stand for literal braces. Booleans read
 * as Python writes them; objects as JSON.
 */
export function formatTemplate(template: string, params: Record<string, unknown>): string {
  return template.replace(/\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (token, field?: string) => {
    if (field === undefined) return token[0];
    if (!Object.hasOwn(params, field)) return token;
    const value = params[field];
    if (value === null || value === undefined) return token;
    if (typeof value === 'boolean') return value ? 'True' : 'False';
    return typeof value === 'object' ? JSON.stringify(value) : String(value);
  });
}

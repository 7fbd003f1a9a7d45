/**
 * The built-in solvers (`system_message`, `generate`) and the state a solver chain starts from,
 * with Inspect AI's semantics.
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
      content: formatTemplate(text, state.sample.metadata ?? {}),
    };
    const messages = [...state.messages];
    messages.splice(lastSystemIndex(messages) + 1, 0, message);
    return { ...state, messages };
  };
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

function lastSystemIndex(messages: ChatMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === 'system') return i;
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

/** Python's `str.format_map` as Inspect uses it for templates: unknown fields left alone. */
function formatTemplate(template: string, params: Record<string, unknown>): string {
  return template.replace(/\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (token, field?: string) => {
    if (field === undefined) return token[0];
    if (!Object.hasOwn(params, field)) return token;
    const value = params[field];
    return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
  });
}

/**
 * `agent`: a ReAct-style tool loop, the counterpart of Inspect AI's `basic_agent`. The model works in
 * the sample's sandbox through two tools offered by native tool calling: `bash`, which runs a
 * shell command there, and `submit`, which ends the sample with an answer. The loop stops at the
 * submit, or at a limit: `max_turns` is Inspect's `turn` limit and the agent's `token_limit` a
 * token limit of its own, and like the sample's limits (`limits.ts`) they stop the sample, which is
 * then scored on what it has and records which limit stopped it.
 */

import type { Solver, TaskState, TokenUsage, ToolCall, ToolDefinition } from '../definition/types';
import type { ExecResult } from '../sandbox/types';
import { SampleLimitExceeded } from './limits';
import { systemMessage } from './solvers';

/** The `agent` solver's options, as written in a definition. */
export interface AgentOptions {
  /** Model calls before the agent stops without submitting (a `turn` limit). @default 30 */
  max_turns?: number;
  /**
   * Tokens (input plus output, summed over the agent's model calls) after which no further call
   * is made (a `token` limit, like the task's `token_limit`). Not to be confused with
   * `generate`'s `max_tokens`, which bounds one reply. @default unlimited
   */
  token_limit?: number;
  /** Seconds one `bash` command may run before it is killed. @default 180 */
  command_timeout?: number;
  /** The system prompt. @default {@link AGENT_SYSTEM_MESSAGE} */
  system_message?: string;
}

/** Why the loop ended; kept in `state.store.agent` (a limit is also the sample's `limit`). */
export type AgentStop = 'submit' | 'max_turns' | 'token_limit';

/** What the agent leaves in `state.store.agent`, for custom scorers. */
export interface AgentReport {
  stop: AgentStop;
  turns: number;
}

export const AGENT_DEFAULTS = { max_turns: 30, command_timeout: 180 } as const;

/**
 * Steward's default system prompt for the agent: what the two tools do and how the sample ends.
 * Replace it with the solver's `system_message` option.
 */
export const AGENT_SYSTEM_MESSAGE =
  'You are working on a task inside a Linux sandbox. Use the bash tool to run shell commands ' +
  'there: look around, read files, run programs, and check your results. Each tool result comes ' +
  'back to you before you choose the next step, so work one step at a time and say briefly what ' +
  'you expect each command to show.\n\n' +
  'Once you are confident of the answer, call the submit tool with it. Submitting ends the task, ' +
  'and only the submitted answer is graded.';

/** Sent when the model replies without calling a tool, so the loop does not stall. */
export const CONTINUE_MESSAGE =
  'No tool was called. Carry on with the next step using the bash tool, or, if the task is ' +
  'done, call submit with your answer.';

/**
 * Bytes of each of stdout and stderr a command's result may show the model (Inspect's default
 * `max_tool_output`): enough to read, not enough to blow the context with a `cat` of a binary.
 */
export const MAX_TOOL_OUTPUT_BYTES = 16 * 1024;

export const BASH_TOOL: ToolDefinition = {
  name: 'bash',
  description:
    'Run a shell command in the sandbox (with `sh -c`) and see its output. Each call starts a new ' +
    'shell, so `cd` and variables do not carry over; files do.',
  parameters: {
    type: 'object',
    properties: { cmd: { type: 'string', description: 'The shell command to run.' } },
    required: ['cmd'],
    additionalProperties: false,
  },
};

export const SUBMIT_TOOL: ToolDefinition = {
  name: 'submit',
  description: 'Submit your final answer. This ends the task.',
  parameters: {
    type: 'object',
    properties: { answer: { type: 'string', description: 'The answer to submit.' } },
    required: ['answer'],
    additionalProperties: false,
  },
};

/** The agent solver. Needs the sample's sandbox (`ctx.sandbox`): its task must set `sandbox`. */
export function agent(options: AgentOptions = {}): Solver {
  const maxTurns = options.max_turns ?? AGENT_DEFAULTS.max_turns;
  const timeoutMs = (options.command_timeout ?? AGENT_DEFAULTS.command_timeout) * 1000;
  const system = options.system_message ?? AGENT_SYSTEM_MESSAGE;

  return async (state, ctx) => {
    const sandbox = ctx.sandbox;
    if (!sandbox) {
      throw new Error('the agent solver needs a sandbox: set `sandbox` on the task');
    }
    // Through the built-in solver, so `{field}` placeholders read the sample's metadata as usual.
    let current: TaskState = await systemMessage(system)(state, ctx);
    ctx.progress?.(current);
    let answer: string | undefined;
    let turns = 0;
    /** Appends to the conversation and publishes it: a limit may stop the sample at any step. */
    const advance = (change: Partial<TaskState>): void => {
      current = { ...current, ...change };
      ctx.progress?.(current);
    };
    const report = (stop: AgentStop): TaskState => ({
      ...current,
      store: { ...current.store, agent: { stop, turns } satisfies AgentReport },
    });

    for (;;) {
      if (turns >= maxTurns) {
        advance(report('max_turns'));
        throw new SampleLimitExceeded({ type: 'turn', limit: maxTurns });
      }
      if (options.token_limit !== undefined && current.usage.total_tokens >= options.token_limit) {
        advance(report('token_limit'));
        throw new SampleLimitExceeded({ type: 'token', limit: options.token_limit });
      }
      ctx.signal.throwIfAborted();
      const output = await ctx.model.generate(current.messages, {
        tools: [BASH_TOOL, SUBMIT_TOOL],
        signal: ctx.signal,
      });
      turns++;
      advance({
        messages: [...current.messages, output.message],
        output,
        usage: addUsage(current.usage, output.usage),
      });
      ctx.heartbeat();

      const calls = output.message.tool_calls ?? [];
      if (calls.length === 0) {
        advance({ messages: [...current.messages, { role: 'user', content: CONTINUE_MESSAGE }] });
        continue;
      }
      // Every call gets its tool message (the wire protocol wants one per call id), in order.
      for (const call of calls) {
        const result = await runTool(call, async (cmd) => {
          const exec = await sandbox.exec(['sh', '-c', cmd], {
            timeoutMs,
            maxOutputBytes: MAX_TOOL_OUTPUT_BYTES,
            signal: ctx.signal,
          });
          ctx.heartbeat();
          return formatExec(exec, timeoutMs);
        });
        advance({
          messages: [
            ...current.messages,
            { role: 'tool', tool_call_id: call.id, content: result.content },
          ],
        });
        if (result.answer !== undefined && answer === undefined) answer = result.answer;
      }
      if (answer !== undefined) break;
    }

    const { output } = current;
    return {
      ...report('submit'),
      // The submitted answer is the sample's completion, as in Inspect.
      output: output && answer !== undefined ? { ...output, completion: answer } : output,
      completed: true,
    } satisfies TaskState;
  };
}

/** What a tool call produced: the tool message's content, and the answer if it was a submit. */
interface ToolResult {
  content: string;
  answer?: string;
}

/**
 * Runs one tool call. A malformed call (unknown tool, arguments that are not the JSON object the
 * schema asks for) is answered with an error message the model can act on, not thrown: models
 * make such mistakes and recover from them.
 */
async function runTool(
  call: ToolCall,
  bash: (cmd: string) => Promise<string>,
): Promise<ToolResult> {
  const args = parseArguments(call.arguments);
  if (call.name === 'submit') {
    const answer = args?.answer;
    if (typeof answer !== 'string') {
      return { content: 'Error: submit needs {"answer": <string>}.' };
    }
    return { content: answer, answer };
  }
  if (call.name === 'bash') {
    const cmd = args?.cmd;
    if (typeof cmd !== 'string') return { content: 'Error: bash needs {"cmd": <string>}.' };
    return { content: await bash(cmd) };
  }
  return { content: `Error: there is no tool named ${call.name}; use bash or submit.` };
}

function parseArguments(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text || '{}');
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A command's result as the model reads it: stderr then stdout (Inspect's order), and what went
 * wrong, if anything, at the end where it is not missed.
 */
export function formatExec(result: ExecResult, timeoutMs: number): string {
  const parts = [result.stderr, result.stdout].filter((part) => part.length > 0);
  if (result.truncated) parts.push(`[output truncated to ${MAX_TOOL_OUTPUT_BYTES} bytes]`);
  if (result.timedOut) parts.push(`[command timed out after ${timeoutMs / 1000} s and was killed]`);
  else if (result.exitCode !== 0) parts.push(`[exit code ${result.exitCode ?? 'unknown'}]`);
  return parts.join('\n');
}

function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
  };
}

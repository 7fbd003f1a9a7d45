/**
 * `agent`: a ReAct-style tool loop, the counterpart of Inspect AI's `basic_agent`. The model works in
 * the sample's sandbox through two tools offered by native tool calling: `bash`, which runs a
 * shell command there, and `submit`, which ends the sample with an answer. The loop stops at the
 * submit, or when a turn or token limit is reached (then the sample is scored on what it has).
 */

import type { Solver, TaskState, TokenUsage, ToolCall, ToolDefinition } from '../definition/types';
import type { ExecResult } from '../sandbox/types';
import { systemMessage } from './solvers';

/** The `agent` solver's options, as written in a definition. */
export interface AgentOptions {
  /** Model calls before the agent gives up without submitting. @default 30 */
  max_turns?: number;
  /**
   * Tokens (input plus output, summed over the sample's model calls) after which no further call
   * is made. Not to be confused with `generate`'s `max_tokens`, which bounds one reply.
   * @default unlimited
   */
  token_limit?: number;
  /** Seconds one `bash` command may run before it is killed. @default 180 */
  command_timeout?: number;
  /** The system prompt. @default {@link AGENT_SYSTEM_MESSAGE} */
  system_message?: string;
}

/** Why the loop ended; kept in `state.store.agent`. */
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
    let messages = (await systemMessage(system)(state, ctx)).messages;
    let usage = state.usage;
    let output = state.output;
    let answer: string | undefined;
    let stop: AgentStop = 'max_turns';
    let turns = 0;

    while (turns < maxTurns) {
      if (options.token_limit !== undefined && usage.total_tokens >= options.token_limit) {
        stop = 'token_limit';
        break;
      }
      ctx.signal.throwIfAborted();
      output = await ctx.model.generate(messages, {
        tools: [BASH_TOOL, SUBMIT_TOOL],
        signal: ctx.signal,
      });
      turns++;
      usage = addUsage(usage, output.usage);
      messages = [...messages, output.message];
      ctx.heartbeat();

      const calls = output.message.tool_calls ?? [];
      if (calls.length === 0) {
        messages = [...messages, { role: 'user', content: CONTINUE_MESSAGE }];
        continue;
      }
      // Every call gets its tool message (the wire protocol wants one per call id), in order.
      for (const call of calls) {
        const result = await runTool(call, async (cmd) => {
          const exec = await sandbox.exec(['sh', '-c', cmd], {
            timeoutMs,
            maxOutputBytes: MAX_TOOL_OUTPUT_BYTES,
          });
          ctx.heartbeat();
          return formatExec(exec, timeoutMs);
        });
        messages = [...messages, { role: 'tool', tool_call_id: call.id, content: result.content }];
        if (result.answer !== undefined && answer === undefined) answer = result.answer;
      }
      if (answer !== undefined) {
        stop = 'submit';
        break;
      }
    }

    const report: AgentReport = { stop, turns };
    return {
      ...state,
      messages,
      usage,
      // The submitted answer is the sample's completion, as in Inspect.
      output: output && answer !== undefined ? { ...output, completion: answer } : output,
      completed: true,
      store: { ...state.store, agent: report },
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

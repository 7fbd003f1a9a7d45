/**
 * What the simulated provider answers: the request it accepts, the reply a script gives, the
 * default script, what a request and a reply cost in tokens, and the OpenAI wire bodies they
 * become. No I/O: the HTTP side is `provider.ts`.
 *
 * ## The default script
 *
 * Deterministic: the same conversation always gets the same answer. It reads directives from
 * the **last user message**, one per line:
 *
 * - `ANSWER: <text>` — the answer to give.
 * - `RUN: <command>` — the shell command an agent should run.
 *
 * When the request offers tools named `bash` and `submit` (an agent loop), it plays a two-turn
 * agent:
 *
 * 1. While the conversation does not end with a tool result, it calls `bash` with the `RUN:`
 *    command, else the body of the first fenced code block (```` ``` ````) of the message, else
 *    `echo done`.
 * 2. After a tool result it calls `submit` with the `ANSWER:` text, else with the last tool
 *    output, trimmed.
 *
 * Each tool's argument is named after the first required property of its JSON schema (else its
 * first property, else `cmd` for `bash` and `answer` for `submit`), so Inspect-style
 * `bash(cmd)` / `submit(answer)` and `command`-style tools both work.
 *
 * Without those two tools it replies with the `ANSWER:` text, else `Simulated reply.`.
 *
 * Example user message for an agent sample:
 *
 * ```text
 * Write hello to /tmp/out.txt.
 * RUN: echo hello > /tmp/out.txt && cat /tmp/out.txt
 * ```
 *
 * The model calls `bash` with that command, then `submit` with its output, `hello`.
 *
 * ## Custom scripts
 *
 * In-process users (tests) pass a {@link SimScript}: a function of the validated request that
 * returns `{ content?, tool_calls? }`, or `{ status, body }` to answer with that HTTP error.
 */
import { z } from 'zod';

const contentSchema = z.union([
  z.string(),
  z.null(),
  z.array(z.looseObject({ type: z.string(), text: z.string().optional() })),
]);

const toolCallSchema = z.looseObject({
  id: z.string(),
  type: z.literal('function'),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

const messageSchema = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: contentSchema.optional(),
  tool_calls: z.array(toolCallSchema).optional(),
  tool_call_id: z.string().optional(),
});

const toolSchema = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});

/** The body of `POST /v1/chat/completions` the simulated provider accepts. */
export const simRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(messageSchema).min(1),
  tools: z.array(toolSchema).optional(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  stream: z.boolean().nullish(),
});

/** A validated chat completions request. */
export type SimRequest = z.infer<typeof simRequestSchema>;
type SimMessage = SimRequest['messages'][number];
type SimTool = NonNullable<SimRequest['tools']>[number];

export interface SimToolCall {
  name: string;
  /** An object (sent as its JSON) or JSON text sent as is. */
  arguments: Record<string, unknown> | string;
}

/** What the model says: text, tool calls, or both. */
export interface SimAnswer {
  content?: string;
  tool_calls?: SimToolCall[];
}

/** An HTTP error to answer with instead of a completion. */
export interface SimFailure {
  status: number;
  body: unknown;
}

export type SimReply = SimAnswer | SimFailure;

/**
 * Decides the reply to a request. Called only for admitted requests, of either API: an
 * Anthropic Messages request arrives in the chat completions shape (see `messages.ts`), so one
 * script answers both. A `SimFailure`'s body is sent as is.
 */
export type SimScript = (request: SimRequest) => SimReply | Promise<SimReply>;

export function isFailure(reply: SimReply): reply is SimFailure {
  return 'status' in reply;
}

/** The default script; see the module documentation for its conventions. */
export const defaultScript: SimScript = (request) => {
  const instruction = lastUserText(request.messages);
  const bash = findTool(request.tools, 'bash');
  const submit = findTool(request.tools, 'submit');
  if (!bash || !submit) {
    return { content: directive(instruction, 'ANSWER') ?? 'Simulated reply.' };
  }
  const last = request.messages[request.messages.length - 1];
  if (last.role === 'tool') {
    const answer = directive(instruction, 'ANSWER') ?? textOf(last.content).trim();
    return {
      tool_calls: [{ name: 'submit', arguments: { [argumentName(submit, 'answer')]: answer } }],
    };
  }
  const command = directive(instruction, 'RUN') ?? fencedBlock(instruction) ?? 'echo done';
  return { tool_calls: [{ name: 'bash', arguments: { [argumentName(bash, 'cmd')]: command } }] };
};

/** The text of a message's content: a string, or its text parts joined. */
export function textOf(content: SimMessage['content']): string {
  if (typeof content === 'string') return content;
  if (!content) return '';
  return content.map((part) => part.text ?? '').join('');
}

function lastUserText(messages: SimMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === 'user') return textOf(messages[i].content);
  }
  return '';
}

function findTool(tools: SimTool[] | undefined, name: string): SimTool | undefined {
  return tools?.find((tool) => tool.function.name === name);
}

/** The rest of the first line starting with `NAME:`, trimmed. */
function directive(text: string, name: string): string | undefined {
  const line = text.split('\n').find((candidate) => candidate.trimStart().startsWith(`${name}:`));
  return line
    ?.trimStart()
    .slice(name.length + 1)
    .trim();
}

function fencedBlock(text: string): string | undefined {
  const body = /```[^\n]*\n([\s\S]*?)```/.exec(text)?.[1]?.trim();
  return body ? body : undefined;
}

function argumentName(tool: SimTool, fallback: string): string {
  const parameters = tool.function.parameters ?? {};
  const required = parameters['required'];
  if (Array.isArray(required) && typeof required[0] === 'string') return required[0];
  const properties = parameters['properties'];
  const first =
    properties && typeof properties === 'object' ? Object.keys(properties)[0] : undefined;
  return first ?? fallback;
}

/**
 * Token estimates, about four characters a token as for English text with OpenAI's tokenizers.
 * A simulation needs costs that grow with the text, not a tokenizer.
 */
export function estimateTokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}

/** Prompt tokens: every message's text and tool calls, plus the offered tools' definitions. */
export function promptTokens(request: SimRequest): number {
  let chars = request.tools ? JSON.stringify(request.tools).length : 0;
  for (const message of request.messages) {
    chars += textOf(message.content).length;
    for (const call of message.tool_calls ?? []) {
      chars += call.function.name.length + call.function.arguments.length;
    }
  }
  return estimateTokens(chars);
}

/** JSON text of a tool call's arguments, as sent on the wire. */
function argumentsText(call: SimToolCall): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
}

/** Completion tokens: the reply's text and tool calls. */
function completionTokens(answer: SimAnswer): number {
  let chars = answer.content?.length ?? 0;
  for (const call of answer.tool_calls ?? []) {
    chars += call.name.length + argumentsText(call).length;
  }
  return estimateTokens(chars);
}

// The wire bodies.

/** OpenAI's error body. */
export type OpenAiErrorBody = {
  error: { message: string; type: string; param: string | null; code: string | null };
};

export function openAiError(
  message: string,
  type: string,
  code: string | null = null,
  param: string | null = null,
): OpenAiErrorBody {
  return { error: { message, type, param, code } };
}

/** Parses and validates a request body, or says what is wrong in OpenAI's words (a 400). */
export function parseRequest(text: string): { request: SimRequest } | OpenAiErrorBody {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return openAiError(
      "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)",
      'invalid_request_error',
    );
  }
  const result = simRequestSchema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0];
    const param = issue.path.map(String).join('.');
    return openAiError(
      `Invalid request: ${param ? `${param}: ` : ''}${issue.message}`,
      'invalid_request_error',
      null,
      param || null,
    );
  }
  if (result.data.stream) {
    return openAiError(
      'The simulated provider does not stream: set stream to false.',
      'invalid_request_error',
      null,
      'stream',
    );
  }
  return { request: result.data };
}

/** OpenAI's body for a 500. */
export const serverError = openAiError(
  'The server had an error while processing your request. Sorry about that!',
  'server_error',
);

export type CompletionBody = ReturnType<typeof completionBody>;

/**
 * The `chat.completion` body for an answer. `max_tokens` (or `max_completion_tokens`) cuts a text
 * answer short with `finish_reason: "length"`.
 */
export function completionBody(
  request: SimRequest,
  answer: SimAnswer,
  meta: {
    /** Makes the completion and tool call ids unique. */
    serial: number;
    /** Unix seconds. */
    created: number;
    promptTokens: number;
  },
) {
  const { serial, created, promptTokens: prompt } = meta;
  const maxTokens = request.max_completion_tokens ?? request.max_tokens ?? undefined;
  let content = answer.content ?? null;
  const toolCalls = (answer.tool_calls ?? []).map((call, index) => ({
    id: `call_sim_${serial}_${index}`,
    type: 'function' as const,
    function: { name: call.name, arguments: argumentsText(call) },
  }));
  let finishReason = toolCalls.length > 0 ? 'tool_calls' : 'stop';
  if (
    content !== null &&
    toolCalls.length === 0 &&
    maxTokens !== undefined &&
    completionTokens({ content }) > maxTokens
  ) {
    // Cut at the estimate's four characters a token, as a real model stops mid-sentence.
    content = content.slice(0, maxTokens * 4);
    finishReason = 'length';
  }
  const completion = completionTokens({
    content: content ?? undefined,
    tool_calls: answer.tool_calls,
  });
  return {
    id: `chatcmpl-sim-${serial}`,
    object: 'chat.completion',
    created,
    model: request.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content,
          refusal: null,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: finishReason,
      },
    ],
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
    },
  };
}

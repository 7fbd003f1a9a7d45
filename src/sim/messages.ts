/**
 * Anthropic's Messages API for the simulated provider (`POST /v1/messages`): the request it
 * accepts, checked as the real API checks it, and the bodies it answers with. No I/O: the HTTP
 * side is `provider.ts`.
 *
 * A request is read into the chat completions shape (`SimRequest`) so that one script answers
 * both APIs: system blocks become a system message, `tool_result` blocks tool messages,
 * `tool_use` blocks tool calls. Its answer is the same chat completion the OpenAI path sends,
 * written as a Message: text and `tool_use` content blocks, `stop_reason`, `usage`.
 */
import { z } from 'zod';
import type { CompletionBody, SimRequest } from './script';

/** Anthropic's error body, e.g. `rate_limit_error`, `overloaded_error`, `invalid_request_error`. */
export type AnthropicErrorBody = { type: 'error'; error: { type: string; message: string } };

export function anthropicError(type: string, message: string): AnthropicErrorBody {
  return { type: 'error', error: { type, message } };
}

const textBlockSchema = z.looseObject({ type: z.literal('text'), text: z.string() });

const blockSchema = z.discriminatedUnion('type', [
  textBlockSchema,
  z.looseObject({
    type: z.literal('tool_use'),
    id: z.string().min(1),
    name: z.string().min(1),
    input: z.record(z.string(), z.unknown()),
  }),
  z.looseObject({
    type: z.literal('tool_result'),
    tool_use_id: z.string().min(1),
    content: z.union([z.string(), z.array(textBlockSchema)]).optional(),
    is_error: z.boolean().optional(),
  }),
]);

/** The body of `POST /v1/messages` the simulated provider accepts. */
const messagesRequestSchema = z.looseObject({
  model: z.string().min(1),
  max_tokens: z.number().int().min(1),
  messages: z
    .array(
      z.looseObject({
        role: z.enum(['user', 'assistant']),
        content: z.union([z.string(), z.array(blockSchema)]),
      }),
    )
    .min(1),
  system: z.union([z.string(), z.array(textBlockSchema)]).optional(),
  tools: z
    .array(
      z.looseObject({
        name: z.string().min(1),
        description: z.string().optional(),
        input_schema: z.looseObject({ type: z.literal('object') }),
      }),
    )
    .optional(),
  stream: z.boolean().nullish(),
});
type MessagesRequest = z.infer<typeof messagesRequestSchema>;
type Block = z.infer<typeof blockSchema>;

/**
 * Parses and checks a Messages request, or says what is wrong in Anthropic's words (a 400),
 * including what the real API refuses beyond the schema: empty text blocks, and `tool_use`
 * blocks not answered by `tool_result` blocks in the very next message (or the reverse).
 */
export function parseMessagesRequest(text: string): { request: SimRequest } | AnthropicErrorBody {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return anthropicError('invalid_request_error', 'The request body is not valid JSON.');
  }
  const result = messagesRequestSchema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0];
    const field = issue.path.map(String).join('.');
    const missing = issue.code === 'invalid_type' && issue.input === undefined;
    return anthropicError(
      'invalid_request_error',
      `${field ? `${field}: ` : ''}${missing ? 'Field required' : issue.message}`,
    );
  }
  const request = result.data;
  if (request.stream) {
    return anthropicError(
      'invalid_request_error',
      'stream: the simulated provider does not stream: set stream to false.',
    );
  }
  const problem = conversationProblem(request);
  if (problem) return anthropicError('invalid_request_error', problem);
  return { request: toChatRequest(request) };
}

function blocksOf(content: string | Block[]): Block[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

function conversationProblem(request: MessagesRequest): string | undefined {
  const { messages } = request;
  for (const [i, message] of messages.entries()) {
    for (const [j, block] of blocksOf(message.content).entries()) {
      if (block.type === 'text' && block.text === '') {
        return `messages.${i}.content.${j}: text content blocks must be non-empty`;
      }
    }
    const uses = blocksOf(message.content).flatMap((b) => (b.type === 'tool_use' ? [b.id] : []));
    const next = messages[i + 1];
    const answered = new Set(
      next
        ? blocksOf(next.content).flatMap((b) => (b.type === 'tool_result' ? [b.tool_use_id] : []))
        : [],
    );
    const unanswered = uses.filter((id) => !answered.has(id));
    if (unanswered.length > 0) {
      return (
        `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately ` +
        `after: ${unanswered.join(', ')}. Each \`tool_use\` block must have a corresponding ` +
        '`tool_result` block in the next message.'
      );
    }
    const previous = messages[i - 1];
    const offered = new Set(
      previous?.role === 'assistant'
        ? blocksOf(previous.content).flatMap((b) => (b.type === 'tool_use' ? [b.id] : []))
        : [],
    );
    for (const [j, block] of blocksOf(message.content).entries()) {
      if (block.type === 'tool_result' && !offered.has(block.tool_use_id)) {
        return (
          `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` ` +
          `blocks: ${block.tool_use_id}. Each \`tool_result\` block must have a corresponding ` +
          '`tool_use` block in the previous message.'
        );
      }
    }
  }
  return undefined;
}

/** The request as a chat completions request, for the script and the token estimate. */
function toChatRequest(request: MessagesRequest): SimRequest {
  const messages: SimRequest['messages'] = [];
  const system =
    typeof request.system === 'string'
      ? request.system
      : (request.system ?? []).map((block) => block.text).join('\n');
  if (system) messages.push({ role: 'system', content: system });
  for (const message of request.messages) {
    const blocks = blocksOf(message.content);
    const text = blocks.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
    if (message.role === 'assistant') {
      const calls = blocks.flatMap((b) =>
        b.type === 'tool_use'
          ? [
              {
                id: b.id,
                type: 'function' as const,
                function: { name: b.name, arguments: JSON.stringify(b.input) },
              },
            ]
          : [],
      );
      messages.push({
        role: 'assistant',
        content: text,
        ...(calls.length ? { tool_calls: calls } : {}),
      });
      continue;
    }
    // Tool results come first in a user turn; the user's own words, if any, after them.
    for (const block of blocks) {
      if (block.type !== 'tool_result') continue;
      const content =
        typeof block.content === 'string'
          ? block.content
          : (block.content ?? []).map((part) => part.text).join('');
      messages.push({ role: 'tool', tool_call_id: block.tool_use_id, content });
    }
    if (text || blocks.every((b) => b.type !== 'tool_result')) {
      messages.push({ role: 'user', content: text });
    }
  }
  return {
    model: request.model,
    messages,
    max_tokens: request.max_tokens,
    ...(request.tools
      ? {
          tools: request.tools.map((tool) => ({
            type: 'function' as const,
            function: {
              name: tool.name,
              description: tool.description,
              parameters: tool.input_schema,
            },
          })),
        }
      : {}),
  };
}

/** The Message for a chat completion the script's answer became (same text, calls and usage). */
export function messageBody(completion: CompletionBody, serial: number) {
  const { message, finish_reason: finish } = completion.choices[0];
  const content: Record<string, unknown>[] = [];
  if (message.content) content.push({ type: 'text', text: message.content });
  for (const [index, call] of (message.tool_calls ?? []).entries()) {
    content.push({
      type: 'tool_use',
      id: `toolu_sim_${serial}_${index}`,
      name: call.function.name,
      input: toolInput(call.function.arguments),
    });
  }
  const stopReason =
    finish === 'tool_calls' ? 'tool_use' : finish === 'length' ? 'max_tokens' : 'end_turn';
  return {
    id: `msg_sim_${serial}`,
    type: 'message',
    role: 'assistant',
    model: completion.model,
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: {
      input_tokens: completion.usage.prompt_tokens,
      output_tokens: completion.usage.completion_tokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  };
}

/** Anthropic's tool input is an object; a script's JSON text that is not one travels as text. */
function toolInput(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      return parsed as Record<string, unknown>;
    }
  } catch {
    // Kept as text below.
  }
  return { input: text };
}

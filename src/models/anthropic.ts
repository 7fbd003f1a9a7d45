/**
 * The Anthropic Messages API provider (`anthropic/<model>`), through the official SDK,
 * non-streaming.
 *
 * As with OpenAI, the SDK's own retries are off and its errors propagate unchanged (an
 * `APIError` keeps `status`, `headers` and the body's `error.type`), so Steward's one retry
 * policy (`core/retry.ts`) classifies them: 429 `rate_limit_error` and 529 `overloaded_error`
 * are rate-limit pushback, 5xx and timeouts transient, 400 `invalid_request_error` fatal.
 *
 * Steward's messages are OpenAI-shaped; here they become Anthropic's: system messages go to the
 * top-level `system`, tool calls become `tool_use` blocks of the assistant's turn and tool
 * results `tool_result` blocks of the user turn that follows (consecutive user-side messages are
 * one turn, as the API requires).
 */

import type Anthropic from '@anthropic-ai/sdk';
import type {
  ContentBlockParam,
  Message,
  MessageCreateParamsNonStreaming,
  MessageParam,
  TextBlockParam,
  Tool,
} from '@anthropic-ai/sdk/resources/messages';
import { ANTHROPIC_DEFAULT_MAX_TOKENS, type AnthropicArgs } from '../config/models';
import {
  DEFAULT_TIMEOUT_MS,
  describeBody,
  explainFailure,
  ModelResponseError,
  reportHeaders,
  type ModelHooks,
} from './http';
import type {
  ChatMessage,
  GenerateConfig,
  Model,
  ModelOutput,
  ToolCall,
  ToolDefinition,
} from '../definition/types';

/** Where and how to reach the endpoint. Built from the worker's environment, never logged. */
export interface AnthropicConnection {
  /** The provider's model name, e.g. `claude-sonnet-4-5`. */
  model: string;
  apiKey: string;
  baseURL: string;
}

/** A {@link Model} backed by Anthropic's Messages API. `name` is the Inspect-style name. */
export function createAnthropicModel(
  name: string,
  connection: AnthropicConnection,
  args: AnthropicArgs,
  hooks: ModelHooks = {},
): Model {
  const timeoutMs = args.timeout_ms ?? DEFAULT_TIMEOUT_MS;
  // The client (and so the key) stays in this closure, as with OpenAI. An explicit key and base
  // URL stop the SDK from reading ANTHROPIC_* from this process's environment: the worker's
  // injected environment is the one that counts. An explicit timeout also stops the SDK from
  // refusing large `max_tokens` without streaming.
  //
  // The SDK is loaded with the first call, not with this module: every worker process imports
  // the providers, and the SDK is 270 modules (about 20 MiB resident) that only a task on an
  // Anthropic model needs.
  let client: Anthropic | undefined;
  const connect = (): Anthropic => {
    if (client === undefined) {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { default: Sdk } = require('@anthropic-ai/sdk') as typeof import('@anthropic-ai/sdk');
      client = new Sdk({
        apiKey: connection.apiKey,
        baseURL: connection.baseURL,
        maxRetries: 0,
        timeout: timeoutMs,
      });
    }
    return client;
  };
  return {
    name,
    ...(args.max_retries === undefined ? {} : { maxRetries: args.max_retries }),
    async generate(messages, options = {}) {
      const body = requestBody(connection.model, messages, options.tools, options.config);
      const sdk = connect();
      // With the response, for its rate-limit headers; an error carries its own.
      const sentAt = performance.now();
      const { data: message, response } = await sdk.messages
        .create(body, { signal: options.signal })
        .withResponse()
        .catch((err: unknown) => {
          reportHeaders(hooks, (err as { headers?: unknown } | null)?.headers, sentAt);
          throw explainFailure(name, readableError(err), timeoutMs);
        });
      reportHeaders(hooks, response.headers, sentAt);
      return toModelOutput(name, message);
    },
  };
}

/**
 * The SDK's message for an HTTP error is the status and the whole JSON body; this one says the
 * body's type and message (`400 invalid_request_error: prompt is too long: ...`). The error
 * itself is kept (its class, status, headers and body are what the retry policy reads).
 */
function readableError(err: unknown): unknown {
  const { status, apiMessage, type } = (err ?? {}) as {
    status?: unknown;
    apiMessage?: unknown;
    type?: unknown;
  };
  if (err instanceof Error && typeof status === 'number' && typeof apiMessage === 'string') {
    err.message = `${status} ${typeof type === 'string' ? `${type}: ` : ''}${apiMessage}`;
  }
  return err;
}

/** The request for `messages`. Exported for tests of the mapping. */
export function requestBody(
  model: string,
  messages: ChatMessage[],
  tools: ToolDefinition[] | undefined,
  config: GenerateConfig = {},
): MessageCreateParamsNonStreaming {
  const system: TextBlockParam[] = messages
    .filter((message) => message.role === 'system' && message.content !== '')
    .map((message) => ({ type: 'text', text: message.content }));
  const body: MessageCreateParamsNonStreaming = {
    model,
    max_tokens: config.max_tokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
    messages: toWireMessages(messages),
  };
  if (system.length > 0) body.system = system;
  if (tools && tools.length > 0) body.tools = tools.map(toWireTool);
  // The SDK's types no longer declare `temperature` (Anthropic deprecated it). A task that sets
  // one still sends it, rather than have it dropped unseen; the API says what it makes of it.
  if (config.temperature !== undefined) {
    return { ...body, temperature: config.temperature } as MessageCreateParamsNonStreaming;
  }
  return body;
}

function toWireMessages(messages: ChatMessage[]): MessageParam[] {
  const wire: MessageParam[] = [];
  const append = (role: 'user' | 'assistant', blocks: ContentBlockParam[]) => {
    if (blocks.length === 0) return;
    const last = wire[wire.length - 1];
    // Tool results and the user's next words are one user turn; so are two user messages.
    if (last?.role === role && Array.isArray(last.content)) last.content.push(...blocks);
    else wire.push({ role, content: blocks });
  };
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        break;
      case 'user':
        append('user', textBlocks(message.content));
        break;
      case 'tool':
        append('user', [
          { type: 'tool_result', tool_use_id: message.tool_call_id, content: message.content },
        ]);
        break;
      case 'assistant': {
        const blocks: ContentBlockParam[] = textBlocks(message.content);
        for (const call of message.tool_calls ?? []) {
          blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: toolInput(call) });
        }
        append('assistant', blocks);
        break;
      }
    }
  }
  return wire;
}

/** The API refuses empty text blocks (a tool-only turn has no text). */
function textBlocks(text: string): ContentBlockParam[] {
  return text === '' ? [] : [{ type: 'text', text }];
}

/**
 * A tool call's arguments as the object Anthropic wants. Calls Anthropic made were objects (kept
 * as their JSON); arguments from elsewhere that are not an object travel under `input`, rather
 * than be dropped.
 */
function toolInput(call: ToolCall): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(call.arguments);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      return parsed as Record<string, unknown>;
    }
  } catch {
    // Not JSON: kept as text below.
  }
  return { input: call.arguments };
}

function toWireTool(tool: ToolDefinition): Tool {
  return {
    name: tool.name,
    description: tool.description,
    input_schema: { type: 'object', ...tool.parameters },
  };
}

function toModelOutput(name: string, message: Message): ModelOutput {
  // The SDK does not validate bodies: a misbehaving endpoint can hand back anything.
  if (!Array.isArray(message?.content)) {
    throw new ModelResponseError(
      `model ${name} answered without a message's content: ${describeBody(message)}`,
    );
  }
  let completion = '';
  const toolCalls: ToolCall[] = [];
  for (const block of message.content) {
    if (block.type === 'text') completion += block.text;
    if (block.type === 'tool_use') {
      toolCalls.push({ id: block.id, name: block.name, arguments: JSON.stringify(block.input) });
    }
  }
  const usage = message.usage;
  // All the input the model read, cached or not: what the account was charged and limited for.
  const input =
    (usage?.input_tokens ?? 0) +
    (usage?.cache_creation_input_tokens ?? 0) +
    (usage?.cache_read_input_tokens ?? 0);
  const output = usage?.output_tokens ?? 0;
  return {
    completion,
    message:
      toolCalls.length > 0
        ? { role: 'assistant', content: completion, tool_calls: toolCalls }
        : { role: 'assistant', content: completion },
    usage: { input_tokens: input, output_tokens: output, total_tokens: input + output },
    stop_reason: stopReason(message.stop_reason),
  };
}

function stopReason(reason: string | null | undefined): ModelOutput['stop_reason'] {
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'stop';
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'max_tokens';
    default:
      return 'unknown';
  }
}

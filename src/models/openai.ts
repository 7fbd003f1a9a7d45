/**
 * The OpenAI chat completions provider (`openai/<model>` and `openai-api/<service>/<model>`),
 * through the official SDK, non-streaming.
 *
 * The SDK's own retries are off: Steward classifies every failure and retries itself, so the
 * SDK's errors (`APIError` with `status` and `headers`, connection errors, timeouts, aborts)
 * propagate unchanged.
 */

import OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { OpenAIArgs } from '../config/models';
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

export { ModelResponseError } from './http';

/** Where and how to reach the endpoint. Built from the worker's environment, never logged. */
export interface OpenAIConnection {
  /** The provider's model name, e.g. `gpt-4o-mini`. */
  model: string;
  apiKey: string;
  baseURL: string;
  organization?: string;
  project?: string;
  /** The request field that carries {@link GenerateConfig.max_tokens}. */
  maxTokensParam: 'max_tokens' | 'max_completion_tokens';
}

/**
 * A {@link Model} backed by an OpenAI-compatible chat completions endpoint. `name` is the
 * Inspect-style name, used in messages.
 */
export function createOpenAIModel(
  name: string,
  connection: OpenAIConnection,
  args: OpenAIArgs,
  hooks: ModelHooks = {},
): Model {
  // The client (and so the key) stays in this closure: the returned object has nothing that
  // could leak it through logging or serialisation.
  const client = new OpenAI({
    apiKey: connection.apiKey,
    baseURL: connection.baseURL,
    // Explicit nulls stop the SDK from reading OPENAI_ORG_ID / OPENAI_PROJECT_ID itself.
    organization: connection.organization ?? null,
    project: connection.project ?? null,
    maxRetries: 0,
    timeout: args.timeout_ms ?? DEFAULT_TIMEOUT_MS,
  });
  const timeoutMs = args.timeout_ms ?? DEFAULT_TIMEOUT_MS;
  return {
    name,
    ...(args.max_retries === undefined ? {} : { maxRetries: args.max_retries }),
    async generate(messages, options = {}) {
      const body = requestBody(connection, messages, options.tools, options.config);
      // With the response, for its rate-limit headers; an error carries its own.
      const sentAt = performance.now();
      const { data: completion, response } = await client.chat.completions
        .create(body, { signal: options.signal })
        .withResponse()
        .catch((err: unknown) => {
          reportHeaders(hooks, (err as { headers?: unknown } | null)?.headers, sentAt);
          throw explainFailure(name, err, timeoutMs);
        });
      reportHeaders(hooks, response.headers, sentAt);
      return toModelOutput(name, completion);
    },
  };
}

function requestBody(
  connection: OpenAIConnection,
  messages: ChatMessage[],
  tools: ToolDefinition[] | undefined,
  config: GenerateConfig = {},
): ChatCompletionCreateParamsNonStreaming {
  const body: ChatCompletionCreateParamsNonStreaming = {
    model: connection.model,
    messages: messages.map(toWireMessage),
  };
  if (tools && tools.length > 0) body.tools = tools.map(toWireTool);
  if (config.max_tokens !== undefined) body[connection.maxTokensParam] = config.max_tokens;
  if (config.temperature !== undefined) body.temperature = config.temperature;
  return body;
}

function toWireMessage(message: ChatMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'tool':
      return { role: 'tool', content: message.content, tool_call_id: message.tool_call_id };
    case 'assistant': {
      const toolCalls = message.tool_calls ?? [];
      if (toolCalls.length === 0) return { role: 'assistant', content: message.content };
      return {
        role: 'assistant',
        // The API itself answers a tool-only turn with null content; echo it back that way.
        content: message.content === '' ? null : message.content,
        tool_calls: toolCalls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: call.arguments },
        })),
      };
    }
  }
}

function toWireTool(tool: ToolDefinition): ChatCompletionTool {
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}

function toModelOutput(name: string, completion: ChatCompletion): ModelOutput {
  // The SDK does not validate bodies: a misbehaving endpoint can hand back anything.
  const choice = Array.isArray(completion?.choices) ? completion.choices[0] : undefined;
  if (!choice?.message) {
    throw new ModelResponseError(
      `model ${name} answered without a completion choice: ${describeBody(completion)}`,
    );
  }
  const content = choice.message.content ?? '';
  const toolCalls: ToolCall[] = (choice.message.tool_calls ?? []).flatMap((call) =>
    call.type === 'function'
      ? [{ id: call.id, name: call.function.name, arguments: call.function.arguments }]
      : [],
  );
  const usage = completion.usage;
  return {
    completion: content,
    message:
      toolCalls.length > 0
        ? { role: 'assistant', content, tool_calls: toolCalls }
        : { role: 'assistant', content },
    usage: {
      input_tokens: usage?.prompt_tokens ?? 0,
      output_tokens: usage?.completion_tokens ?? 0,
      total_tokens: usage?.total_tokens ?? 0,
    },
    stop_reason: stopReason(choice.finish_reason),
  };
}

function stopReason(finishReason: string | null | undefined): ModelOutput['stop_reason'] {
  switch (finishReason) {
    case 'stop':
      return 'stop';
    case 'tool_calls':
    case 'function_call':
      return 'tool_calls';
    case 'length':
      return 'max_tokens';
    default:
      return 'unknown';
  }
}

/**
 * `mockllm/model`: a scripted model with no network, for tests, demos and load rehearsals.
 *
 * Everything it does is a function of its args, the sample and the call index, so two runs of
 * the same eval set produce the same transcripts and the same latencies.
 */

import { setTimeout as sleep } from 'node:timers/promises';
import type { MockArgs } from '../config/models';
import type { ChatMessage, Model, ModelOutput, Sample, ToolCall } from '../definition/types';

/** What Inspect's mockllm answers when no outputs are scripted. */
export const MOCK_DEFAULT_OUTPUT = 'Default output from mockllm/model';

type ScriptedOutput = NonNullable<MockArgs['outputs']>[number];

/** A {@link Model} that replies from `args.outputs`, after `args.latency_ms`. */
export function createMockModel(name: string, args: MockArgs): Model {
  const outputs: ScriptedOutput[] = args.outputs ?? [MOCK_DEFAULT_OUTPUT];
  // Callers outside a sample (no `sample` option) still get the script in order, per instance.
  let unscopedCalls = 0;
  return {
    name,
    async generate(messages, options = {}) {
      options.signal?.throwIfAborted();
      const sample = options.sample?.sample;
      const call = options.sample?.call ?? unscopedCalls++;
      const delay = mockLatency(args.latency_ms ?? 0, args.jitter_ms ?? 0, sample?.id ?? '', call);
      if (delay > 0) await sleep(delay, undefined, { signal: options.signal });
      const scripted = outputs[call % outputs.length];
      return toModelOutput(scripted, sample, call, messages);
    },
  };
}

/**
 * The delay of one call: `latencyMs` moved by up to +/- `jitterMs`, never below zero. The jitter
 * is a hash of the sample id and call index, so a rerun waits exactly as long.
 */
export function mockLatency(
  latencyMs: number,
  jitterMs: number,
  sampleId: string | number,
  call: number,
): number {
  if (jitterMs === 0) return latencyMs;
  const unit = fnv1a(`${sampleId}:${call}`) / 0xffffffff; // [0, 1]
  return Math.max(0, latencyMs + (unit * 2 - 1) * jitterMs);
}

function toModelOutput(
  scripted: ScriptedOutput,
  sample: Sample | undefined,
  call: number,
  messages: ChatMessage[],
): ModelOutput {
  const reply = typeof scripted === 'string' ? { content: scripted } : scripted;
  const content = fillTemplate(reply.content ?? '', sample);
  const toolCalls: ToolCall[] = (reply.tool_calls ?? []).map((toolCall, index) => ({
    id: `call_${call}_${index}`,
    name: toolCall.name,
    arguments: JSON.stringify(toolCall.arguments),
  }));
  const inputTokens = messages.reduce((sum, message) => sum + countWords(message.content), 0);
  const outputTokens =
    countWords(content) +
    toolCalls.reduce(
      (sum, toolCall) => sum + countWords(`${toolCall.name} ${toolCall.arguments}`),
      0,
    );
  return {
    completion: content,
    message:
      toolCalls.length > 0
        ? { role: 'assistant', content, tool_calls: toolCalls }
        : { role: 'assistant', content },
    usage: {
      input_tokens: inputTokens,
      output_tokens: outputTokens,
      total_tokens: inputTokens + outputTokens,
    },
    stop_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
  };
}

/** Without a sample there is nothing to substitute; the placeholders stay visible. */
function fillTemplate(template: string, sample: Sample | undefined): string {
  if (!sample) return template;
  const target = Array.isArray(sample.target) ? (sample.target[0] ?? '') : sample.target;
  // Replacer functions, so a `$&` in a target is text, not a replacement pattern.
  return template
    .replaceAll('{target}', () => target)
    .replaceAll('{input}', () => inputText(sample));
}

/** As Inspect's `input_text`: the input string, or the first user message of a chat input. */
function inputText(sample: Sample): string {
  if (typeof sample.input === 'string') return sample.input;
  return sample.input.find((message) => message.role === 'user')?.content ?? '';
}

/** A stand-in for a tokenizer: stable, cheap, and roughly proportional to text length. */
function countWords(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

/** 32-bit FNV-1a: a tiny, well-spread, dependency-free string hash. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * Steward's sample records in Inspect AI's shapes (`EvalSample`, `EvalSampleSummary`,
 * `ChatMessage`, `ModelOutput`), as `inspect_ai/log/_log.py` and `inspect_ai/model` declare them.
 * Pure: a record in, JSON out. Ids that Inspect makes random are derived from the record, so a
 * rebuilt log is the same file.
 */
import { createHash } from 'node:crypto';
import type { ChatMessage, Choice, ScoreValue, TokenUsage } from '../../definition/types';
import type { SampleErrorRecord, SampleRecord } from '../store';
import type { AttemptError } from '../../eval/retries';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A 22-character id in the alphabet of Inspect's shortuuids, derived from `seed`. */
export function shortId(seed: string): string {
  let n = BigInt(`0x${createHash('sha256').update(seed).digest('hex')}`);
  let id = '';
  for (let i = 0; i < 22; i++) {
    id += BASE62[Number(n % 62n)];
    n /= 62n;
  }
  return id;
}

/** Inspect's `ModelUsage` (the fields Steward counts). */
export type InspectUsage = TokenUsage;

export type InspectMessage =
  | { id: string; role: 'system'; content: string }
  | { id: string; role: 'user'; content: string; source?: 'input' }
  | {
      id: string;
      role: 'assistant';
      content: string;
      source: 'generate';
      model: string;
      tool_calls?: InspectToolCall[];
    }
  | { id: string; role: 'tool'; content: string; tool_call_id: string; function?: string };

export interface InspectToolCall {
  id: string;
  function: string;
  arguments: Record<string, unknown>;
  type: 'function';
  /** Set when the model's arguments were not a JSON object. */
  parse_error?: string;
}

export interface InspectScore {
  value: ScoreValue;
  answer?: string;
  explanation?: string;
  reason?: string;
  history: [];
}

/** Inspect's `EvalError`. */
export interface InspectError {
  message: string;
  traceback: string;
  traceback_ansi: string;
}

export interface InspectSample {
  id: string | number;
  epoch: number;
  input: string | InspectMessage[];
  /** The sample's choices in the dataset's order (a shuffle's order is in the score's explanation). */
  choices?: string[];
  target: string | string[];
  messages: InspectMessage[];
  output: {
    model: string;
    choices: Array<{ message: InspectMessage; stop_reason: string }>;
    completion: string;
    usage?: InspectUsage;
  };
  scores: Record<string, InspectScore> | null;
  metadata: Record<string, unknown>;
  store: Record<string, unknown>;
  events: [];
  model_usage: Record<string, InspectUsage>;
  started_at: string | null;
  completed_at: string;
  total_time: number | null;
  working_time: number | null;
  uuid: string;
  error: InspectError | null;
  error_retries: InspectError[];
  attachments: Record<string, string>;
  /** Inspect's `EvalSampleLimit`: the limit that stopped the sample, and its value. */
  limit: { type: string; limit: number } | null;
}

/** A sample's line in `summaries.json`: the sample's own fields, without its conversation. */
export type InspectSampleSummary = Pick<
  InspectSample,
  | 'id'
  | 'epoch'
  | 'input'
  | 'choices'
  | 'target'
  | 'metadata'
  | 'scores'
  | 'model_usage'
  | 'started_at'
  | 'completed_at'
  | 'total_time'
  | 'working_time'
  | 'uuid'
> & {
  error: string | null;
  retries: number;
  completed: boolean;
  message_count: number;
  /** The type of the limit that stopped the sample, as Inspect's summaries keep it. */
  limit: string | null;
};

/** `samples/<id>_epoch_<n>.json`, as Inspect names a sample's entry. */
export function sampleEntryName(id: string | number, epoch: number): string {
  return `samples/${id}_epoch_${epoch}.json`;
}

/** A completed sample, as Inspect logs one. */
export function completedSample(record: SampleRecord, evalId: string): InspectSample {
  const seed = `${evalId}:${typeof record.sample_id}:${record.sample_id}:${record.epoch}`;
  const messages = toMessages(record.messages, record.model, seed);
  const last = [...messages].reverse().find((m) => m.role === 'assistant');
  const usage = { ...record.usage };
  const totalTime = seconds(record.started_at, record.completed_at);
  return {
    id: record.sample_id,
    epoch: record.epoch,
    input: typeof record.input === 'string' ? record.input : toMessages(record.input, record.model, `${seed}:input`),
    ...(record.choices !== undefined ? { choices: originalChoices(record.choices) } : {}),
    target: record.target,
    messages,
    output: {
      model: record.model,
      choices: last ? [{ message: last, stop_reason: stopReason(last) }] : [],
      completion: record.output,
      usage,
    },
    scores: { [record.scorer]: toScore(record.score) },
    metadata: record.metadata ?? {},
    store: {},
    events: [],
    model_usage: { [record.model]: usage },
    started_at: record.started_at,
    completed_at: record.completed_at,
    total_time: totalTime,
    working_time: totalTime,
    uuid: shortId(`${seed}:uuid`),
    error: null,
    error_retries: retriedErrors(record.error_retries),
    attachments: {},
    limit: record.limit ? { type: record.limit.type, limit: record.limit.limit } : null,
  };
}

/** A sample whose latest attempt failed: its input and target (when recorded) and the error. */
export function erroredSample(record: SampleErrorRecord, model: string, evalId: string): InspectSample {
  const seed = `${evalId}:${typeof record.sample_id}:${record.sample_id}:${record.epoch}`;
  const input = record.input ?? '';
  const messages =
    typeof input === 'string'
      ? [{ id: shortId(`${seed}:0`), role: 'user' as const, content: input, source: 'input' as const }]
      : toMessages(input, model, seed);
  const type = record.error_type ? `${record.error_type}: ` : '';
  return {
    id: record.sample_id,
    epoch: record.epoch,
    input: typeof input === 'string' ? input : messages,
    target: record.target ?? '',
    messages,
    output: { model, choices: [], completion: '' },
    scores: null,
    metadata: record.metadata ?? {},
    store: {},
    events: [],
    model_usage: {},
    started_at: null,
    completed_at: record.failed_at,
    total_time: null,
    working_time: null,
    uuid: shortId(`${seed}:uuid`),
    error: {
      message: record.error,
      traceback: `${type}${record.error}\n(attempt ${record.attempt} on ${record.worker.host}, pid ${record.worker.pid})`,
      traceback_ansi: `${type}${record.error}`,
    },
    error_retries: retriedErrors(record.error_retries),
    attachments: {},
    limit: null,
  };
}

/** A sample's earlier attempts in this run, which failed and ran again, as Inspect keeps them. */
function retriedErrors(attempts: AttemptError[] = []): InspectError[] {
  return attempts.map((attempt) => {
    const type = attempt.error_type ? `${attempt.error_type}: ` : '';
    return {
      message: attempt.error,
      traceback: `${type}${attempt.error}\n(failed at ${attempt.failed_at}; run again)`,
      traceback_ansi: `${type}${attempt.error}`,
    };
  });
}

/** The summary Inspect keeps of each sample (`summaries.json`, the journal's summaries). */
export function sampleSummary(sample: InspectSample): InspectSampleSummary {
  return {
    id: sample.id,
    epoch: sample.epoch,
    input: sample.input,
    ...(sample.choices !== undefined ? { choices: sample.choices } : {}),
    target: sample.target,
    metadata: sample.metadata,
    scores: sample.scores,
    model_usage: sample.model_usage,
    started_at: sample.started_at,
    completed_at: sample.completed_at,
    total_time: sample.total_time,
    working_time: sample.working_time,
    uuid: sample.uuid,
    error: sample.error?.message ?? null,
    retries: sample.error_retries.length,
    completed: true,
    message_count: sample.messages.length,
    limit: sample.limit?.type ?? null,
  };
}

/**
 * Steward's OpenAI-shaped messages as Inspect's: tool calls carry parsed arguments and their
 * function's name, a tool message the name of the function that it answers.
 */
export function toMessages(messages: ChatMessage[], model: string, seed: string): InspectMessage[] {
  const functions = new Map<string, string>();
  let inputDone = false;
  return messages.map((message, i): InspectMessage => {
    const id = shortId(`${seed}:${i}`);
    switch (message.role) {
      case 'system':
        return { id, role: 'system', content: message.content };
      case 'user': {
        // The dataset's input is the first user turn(s), before the model first answers.
        return inputDone
          ? { id, role: 'user', content: message.content }
          : { id, role: 'user', content: message.content, source: 'input' };
      }
      case 'assistant': {
        inputDone = true;
        const calls = (message.tool_calls ?? []).map((call) => {
          functions.set(call.id, call.name);
          return toToolCall(call.id, call.name, call.arguments);
        });
        return {
          id,
          role: 'assistant',
          content: message.content,
          source: 'generate',
          model,
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
        };
      }
      case 'tool': {
        const fn = functions.get(message.tool_call_id);
        return {
          id,
          role: 'tool',
          content: message.content,
          tool_call_id: message.tool_call_id,
          ...(fn !== undefined ? { function: fn } : {}),
        };
      }
    }
  });
}

function toToolCall(id: string, name: string, args: string): InspectToolCall {
  try {
    const parsed: unknown = JSON.parse(args || '{}');
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
      return { id, function: name, arguments: parsed as Record<string, unknown>, type: 'function' };
    }
  } catch {
    // Reported below, as Inspect reports arguments it cannot parse.
  }
  return {
    id,
    function: name,
    arguments: {},
    type: 'function',
    parse_error: `arguments are not a JSON object: ${args}`,
  };
}

/** The choices as the dataset ordered them, whatever order the model saw. */
function originalChoices(choices: Choice[]): string[] {
  return [...choices]
    .sort((a, b) => a.original_position - b.original_position)
    .map((choice) => choice.value);
}

function toScore(score: SampleRecord['score']): InspectScore {
  return {
    value: score.value,
    ...(score.answer !== undefined ? { answer: score.answer } : {}),
    ...(score.explanation !== undefined ? { explanation: score.explanation } : {}),
    ...(score.reason !== undefined ? { reason: score.reason } : {}),
    history: [],
  };
}

function stopReason(message: InspectMessage): string {
  return message.role === 'assistant' && message.tool_calls ? 'tool_calls' : 'stop';
}

/** Seconds between two ISO times, to the millisecond; null when either does not parse. */
function seconds(from: string, to: string): number | null {
  const ms = Date.parse(to) - Date.parse(from);
  return Number.isFinite(ms) ? Math.max(0, ms) / 1000 : null;
}

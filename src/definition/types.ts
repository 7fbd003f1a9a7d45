/**
 * What an eval set is, once loaded: the shapes every other part of Steward works with.
 *
 * A definition comes from YAML (`evalset.yaml`) or from a TypeScript module exporting one; both
 * end up as an {@link EvalSetDefinition}. Solvers and scorers are plain functions here; YAML names
 * the built-in ones (solvers in `eval/solvers.ts`, `eval/multiple-choice.ts`, `eval/agent.ts`;
 * scorers in `eval/scorers.ts`, `eval/f1.ts`, `eval/multiple-choice.ts`,
 * `eval/sandbox-scorers.ts`).
 */

import type { ConcurrencySettings, SampleLimits } from '../config/knobs';
import type { Scoring } from '../core/reducers';
import type { Sandbox, SandboxSpec } from '../sandbox/types';

/** A chat message, in the shape the OpenAI-compatible wire protocol uses. */
export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; tool_calls?: ToolCall[] }
  | { role: 'tool'; content: string; tool_call_id: string };

export interface ToolCall {
  id: string;
  name: string;
  /** JSON text of the arguments, as the model sent it. */
  arguments: string;
}

export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON schema of the arguments object. */
  parameters: Record<string, unknown>;
}

export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
}

export interface ModelOutput {
  /** The assistant's text (empty when it only called tools). */
  completion: string;
  message: Extract<ChatMessage, { role: 'assistant' }>;
  usage: TokenUsage;
  stop_reason: 'stop' | 'tool_calls' | 'max_tokens' | 'unknown';
}

export interface GenerateConfig {
  max_tokens?: number;
  temperature?: number;
}

/** One model endpoint. Implementations do no retries of their own: Steward classifies and retries. */
export interface Model {
  /** Inspect-style name, e.g. `openai/gpt-4o-mini` or `mockllm/model`. */
  readonly name: string;
  /**
   * Retries Steward may make of one call before the call fails (its `model_args.max_retries`).
   * @default unlimited: retries stop 30 minutes after the first failure
   */
  readonly maxRetries?: number;
  generate(
    messages: ChatMessage[],
    options?: {
      tools?: ToolDefinition[];
      config?: GenerateConfig;
      signal?: AbortSignal;
      /** Context for providers that script by sample (mockllm); real providers ignore it. */
      sample?: { sample: Sample; call: number };
      /**
       * Where the call's waits (for a connection slot, a rate-limit backoff) are counted, so the
       * sample's `working_limit` leaves them out. Providers without an account never wait.
       */
      waiting?: WaitMeter;
    },
  ): Promise<ModelOutput>;
}

/** Counts the time a promise takes as waiting, not working. */
export interface WaitMeter {
  during<T>(wait: Promise<T>): Promise<T>;
}

/** A dataset record with Inspect's sample fields. */
export interface Sample {
  /** Stable id: the record's `id`, else its 1-based position in the dataset. */
  id: string | number;
  input: string | ChatMessage[];
  target: string | string[];
  /** Answer choices, for multiple-choice tasks. */
  choices?: string[];
  metadata?: Record<string, unknown>;
  /**
   * Files written into the sample's sandbox before its solvers run: sandbox path (a `service:`
   * prefix picks a service other than the default) -> the file's bytes, base64. Read when the
   * dataset is loaded, so every worker writes the same bytes.
   */
  files?: Record<string, string>;
  /** A script run in the sandbox's default service after the files, before the solvers. */
  setup?: string;
}

/** One of a multiple-choice sample's choices, as Inspect's `Choice`. */
export interface Choice {
  value: string;
  /** Whether the model picked it; unset until a solver (`multiple_choice`) reads the answer. */
  correct?: boolean;
  /** Its place in the dataset's order, so a shuffled choice maps back (0 is `A`). */
  original_position: number;
}

/** The state a solver chain threads through, as in Inspect's TaskState. */
export interface TaskState {
  sample: Sample;
  epoch: number;
  messages: ChatMessage[];
  /** The sample's choices, in the order the model sees them; absent when it has none. */
  choices?: Choice[];
  output?: ModelOutput;
  /** Usage summed over every model call of this sample. */
  usage: TokenUsage;
  /** Set by a solver to stop the chain early (e.g. a submit tool). */
  completed: boolean;
  /** Free-form per-sample store for custom solvers. */
  store: Record<string, unknown>;
}

/** What solvers and scorers may use besides the state. */
export interface SampleContext {
  model: Model;
  /**
   * Says the sample made progress. Model calls returning and sandbox commands starting or ending
   * count on their own; a solver or scorer that works long without either calls this, or after
   * `stuck_after` (30 minutes by default) the sample is stuck: cancelled and run again once.
   */
  heartbeat(): void;
  signal: AbortSignal;
  /** The sample's own sandbox, when its task has one (up before the solvers, removed after the scorer). */
  sandbox?: Sandbox;
  /**
   * Publishes the state as a solver builds it (each message appended): a sample stopped by a
   * limit is scored on the last state published, else on the one its solver started from. Throws
   * the sample's `SampleLimitExceeded` when the conversation would pass its `message_limit`.
   */
  progress?(state: TaskState): void;
}

export type Solver = (state: TaskState, ctx: SampleContext) => Promise<TaskState>;

/** Correct, incorrect, no answer (Inspect's `NOANSWER`), or a number. */
export type ScoreValue = 'C' | 'I' | 'N' | number;

export interface Score {
  value: ScoreValue;
  answer?: string;
  explanation?: string;
  /**
   * Why a score is abnormal, in Inspect's words: `no_response` (an empty reply),
   * `invalid_response_format` (a reply not in the asked format).
   */
  reason?: string;
}

export type Scorer = (state: TaskState, target: string[], ctx: SampleContext) => Promise<Score>;

export interface TaskDefinition {
  name: string;
  /** The samples, already loaded and validated (ids unique). */
  dataset: Sample[];
  solver: Solver[];
  scorer: Scorer;
  /** Name of the scorer, for logs (`match`, `includes`, `exact`, or a custom name). */
  scorerName: string;
  /** @default 1 */
  epochs: number;
  /**
   * How the epochs of a sample are reduced and the task's metrics computed, as Inspect's
   * `Epochs(reducer=...)` and `metrics=[...]`. @default mean; accuracy, stderr
   */
  scoring: Scoring;
  /** Inspect-style model name. */
  model: string;
  /** Provider-specific arguments, e.g. mockllm's scripted outputs and latency. */
  modelArgs: Record<string, unknown>;
  config: GenerateConfig;
  /** The sandbox each sample gets, from the task's `sandbox` (an image or a compose file). */
  sandbox?: SandboxSpec;
  /** The task's own sample limits; the eval set's, where set, replace them. @default {} */
  limits?: SampleLimits;
}

/** Concurrency knobs as written in a definition: declared, with their rules, in `config/knobs.ts`. */
export type { ConcurrencySettings };

/** What a task's results depend on (see `identity.ts`): a relaunch into its log dir must match. */
export interface TaskIdentity {
  model: string;
  model_args: Record<string, unknown>;
  /** The solver chain: built-ins by name and options, a function by its name and code's hash. */
  solver: unknown[];
  scorer: unknown;
  /** The samples as loaded (a reformatted file with the same samples is the same dataset). */
  dataset: { samples: number; sha256: string };
  epochs: number;
  config: Record<string, unknown>;
  /** The sandbox spec as read (image, or the compose file's services); null without one. */
  sandbox: unknown;
}

export interface EvalSetDefinition {
  name: string;
  /** Absolute path of the file it was loaded from. */
  source: string;
  /** Log directory from the definition, if it sets one (absolute). */
  log_dir?: string;
  settings: ConcurrencySettings;
  tasks: TaskDefinition[];
  /** What each task's results depend on, by task name; a relaunch into its log dir must match. */
  identities: Record<string, TaskIdentity>;
}

/**
 * A worker process's side of its provider accounts: every model call goes through a slot of its
 * account's one controller (owned by the host's {@link AccountHost}, in this process or, leased
 * over a socket, in the supervisor's) with Steward's retry policy.
 */
import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { retryModelCall } from '../core/backoff';
import { estimateCost, readRateLimitHeaders } from '../core/pacing';
import { classifyError } from '../core/retry';
import type { ChatMessage, Model, ToolDefinition } from '../definition/types';
import { ErrorType } from '../errors';
import { ANTHROPIC_DEFAULT_MAX_TOKENS } from '../config/models';
import type { ConnectionsSetting } from '../config/settings';
import { modelCredentials, parseModelName, type ModelHooks } from '.';
import type { AccountRef, AccountUser, SlotSource } from './account-host';

/** A model call that failed for good, as a value with a stable type. */
export class ModelCallError extends Error {
  constructor(
    message: string,
    readonly type: ErrorType,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ModelCallError';
  }
}

export interface ProviderAccountsOptions {
  /** Where calls get their slots. */
  source: SlotSource;
  /** The controller's setting, should this process's call be the account's first on the host. */
  connections: ConnectionsSetting;
  env: NodeJS.ProcessEnv;
  now?: () => number;
}

export class ProviderAccounts {
  private readonly now: () => number;
  private used = false;

  constructor(private readonly options: ProviderAccountsOptions) {
    this.now = options.now ?? Date.now;
  }

  /**
   * What a model of `name` reports back to its account as it answers: the rate-limit headers of
   * every answer, success or refusal, for the account's pacing.
   */
  hooks(name: string): ModelHooks {
    if (parseModelName(name).provider === 'mockllm') return {};
    const { key } = accountRef(name, this.options.env, this.options.connections);
    return {
      onResponseHeaders: (get, sentMsAgo) => {
        const reading = readRateLimitHeaders(get, this.now());
        if (Object.keys(reading).length > 0) this.options.source.observe(key, reading, sentMsAgo);
      },
    };
  }

  /**
   * The model, with its calls through its account's controller and retried by Steward's policy.
   * `mockllm` has no provider account (no network, no rate limit) and is returned as is.
   */
  govern(name: string, model: Model, user: AccountUser | null = null): Model {
    if (parseModelName(name).provider === 'mockllm') return model;
    const account = accountRef(name, this.options.env, this.options.connections);
    const slots = this.options.source.slots(account, user);
    this.used = true;
    // Anthropic always sends a max_tokens, and counts it against output tokens on admission.
    const defaultMaxTokens =
      parseModelName(name).provider === 'anthropic' ? ANTHROPIC_DEFAULT_MAX_TOKENS : undefined;
    return {
      name: model.name,
      generate: (messages, options) => {
        // Estimated before sending, for the provider's tokens limit (see src/core/pacing).
        const cost = estimateCost(
          inputChars(messages, options?.tools),
          options?.config?.max_tokens ?? defaultMaxTokens,
        );
        // Waiting for a slot (pacing included) and backing off are not the sample's work.
        const waiting = options?.waiting ?? { during: <T>(wait: Promise<T>) => wait };
        const paced = {
          acquire: (signal?: AbortSignal) => waiting.during(slots.acquire(signal, cost)),
        };
        let attempts = 0;
        return retryModelCall(
          (attempt) => {
            attempts = attempt;
            return model.generate(messages, options);
          },
          {
            now: this.now,
            sleep: (ms, signal) => waiting.during(delay(ms, undefined, { signal })),
            random: Math.random,
            signal: options?.signal,
            controller: paced,
            ...(model.maxRetries === undefined ? {} : { maxAttempts: model.maxRetries + 1 }),
            onRetry: () => this.options.source.retried(account.key),
          },
        ).catch((err: unknown) => {
          throw finalError(name, err, attempts, this.now());
        });
      },
    };
  }

  /** Whether any model goes through an account (`mockllm` never does). */
  get inUse(): boolean {
    return this.used;
  }
}

/**
 * The account a model's calls count against: provider, base URL, API key and model. The key only
 * tells accounts apart; it is hashed, so it is never held twice in clear nor sent anywhere.
 */
export function accountRef(
  name: string,
  env: NodeJS.ProcessEnv,
  connections: ConnectionsSetting,
): AccountRef {
  const { baseURL, apiKey } = modelCredentials(name, env);
  const hash = apiKey ? createHash('sha256').update(apiKey).digest('hex') : '';
  return {
    key: [parseModelName(name).provider, baseURL ?? '', hash.slice(0, 16), name].join('\u0000'),
    label: baseURL ? `${name} at ${baseURL}` : name,
    keyHash: hash.slice(0, 8),
    connections,
  };
}

/** Characters a request sends as input: messages, tool calls and tool definitions. */
function inputChars(messages: ChatMessage[], tools: ToolDefinition[] | undefined): number {
  let chars = tools ? JSON.stringify(tools).length : 0;
  for (const message of messages) {
    chars += message.content.length;
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? [])
        chars += call.name.length + call.arguments.length;
    }
  }
  return chars;
}

/**
 * After retries: a provider's refusal or exhausted retries, typed for the workflow, naming the
 * model and (for exhausted retries) how many attempts were made. Messages that already name the
 * model (Steward's own explanations) are not prefixed again.
 */
function finalError(name: string, err: unknown, attempts: number, now: number): unknown {
  if ((err as Error)?.name === 'AbortError') return err;
  const decision = classifyError(err, now);
  const message = err instanceof Error ? err.message : String(err);
  const model = `model ${name}`;
  if (decision.kind === 'no') {
    const refused = typeof (err as { status?: unknown })?.status === 'number';
    const text = message.startsWith(model)
      ? message
      : `${model}: ${refused ? 'the provider refused the request: ' : ''}${message}`;
    return new ModelCallError(text, ErrorType.modelFatal, { cause: err });
  }
  const reason = message.startsWith(`${model}: `) ? message.slice(model.length + 2) : message;
  const tries = attempts === 1 ? '1 attempt' : `${attempts} attempts`;
  return new ModelCallError(
    `${model}: gave up after ${tries}: ${reason}`,
    ErrorType.modelRetriesExhausted,
    { cause: err },
  );
}

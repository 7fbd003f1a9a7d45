/**
 * Model names and `model_args`, as users write them in a definition: Inspect-style names
 * (`mockllm/model`, `openai/<model>`, `openai-api/<service>/<model>`, `anthropic/<model>`) and
 * each provider's arguments. Pure (zod only), so validating a definition does not load a
 * provider's SDK; `models/` builds the models from these.
 */

import { z } from 'zod';
import { ExitCode, StewardError } from '../errors';

export const MODEL_PROVIDERS = ['mockllm', 'openai', 'openai-api', 'anthropic'] as const;
export type ModelProvider = (typeof MODEL_PROVIDERS)[number];

/** A model name split into its parts. */
export interface ParsedModelName {
  provider: ModelProvider;
  /** The OpenAI-compatible service, for `openai-api/<service>/<model>` only. */
  service?: string;
  /** The provider's own model name; may itself contain `/` (e.g. `meta-llama/Llama-3-70b`). */
  model: string;
}

/** Service names become environment variable prefixes, so they must be valid there. */
const SERVICE_PATTERN = /^[A-Za-z0-9_-]+$/;

/**
 * Splits an Inspect-style model name.
 *
 * @throws StewardError naming the bad name when the provider is unknown or a part is missing.
 */
export function parseModelName(name: string): ParsedModelName {
  const known = MODEL_PROVIDERS.join(', ');
  if (!name.includes('/')) {
    throw badName(
      `malformed model name "${name}": expected <provider>/<model> (providers: ${known})`,
    );
  }
  const [provider, ...rest] = name.split('/');
  if (!isProvider(provider)) {
    throw badName(`unknown model provider "${provider}" in "${name}" (known: ${known})`);
  }
  if (provider === 'openai-api') {
    const [service, ...model] = rest;
    if (!service || !SERVICE_PATTERN.test(service) || !model.join('/')) {
      throw badName(
        `malformed model name "${name}": expected openai-api/<service>/<model>, ` +
          'with a service of letters, digits, "-" or "_"',
      );
    }
    return { provider, service, model: model.join('/') };
  }
  const model = rest.join('/');
  if (!model) {
    throw badName(`malformed model name "${name}": expected ${provider}/<model>`);
  }
  return { provider, model };
}

const scriptedOutputSchema = z.union(
  [
    z.string(),
    z.strictObject({
      content: z.string().optional(),
      tool_calls: z
        .array(
          z.strictObject({ name: z.string().min(1), arguments: z.record(z.string(), z.unknown()) }),
        )
        .optional(),
    }),
  ],
  { error: 'expected a string or { content?, tool_calls?: [{ name, arguments }] }' },
);

/** `model_args` mockllm accepts. */
export const mockArgsSchema = z.strictObject({
  /**
   * Replies, used in order within a sample (call N gets `outputs[N % length]`). Strings and
   * `content` are templates: `{target}` is the first target, `{input}` the sample's input text.
   */
  outputs: z.array(scriptedOutputSchema).min(1).optional(),
  /** Delay before each reply, in milliseconds. @default 0 */
  latency_ms: z.number().nonnegative().optional(),
  /** Spread around `latency_ms`, +/- this many milliseconds, fixed per sample and call. @default 0 */
  jitter_ms: z.number().nonnegative().optional(),
});
export type MockArgs = z.infer<typeof mockArgsSchema>;

/** `model_args` an OpenAI model accepts. */
export const openAIArgsSchema = z.strictObject({
  /** Per-request timeout in milliseconds. @default 600000 (10 minutes) */
  timeout_ms: z.number().int().positive().optional(),
  /**
   * Retries of one call (transient errors, rate limits) before its sample fails.
   * @default unlimited: retries stop 30 minutes after the first failure
   */
  max_retries: z.number().int().min(0).optional(),
});
export type OpenAIArgs = z.infer<typeof openAIArgsSchema>;

/**
 * `model_args` an Anthropic model accepts: the same as OpenAI's. `max_tokens`, which Anthropic
 * requires on every request, is the task's generate config, not a model argument (default
 * {@link ANTHROPIC_DEFAULT_MAX_TOKENS}).
 */
export const anthropicArgsSchema = openAIArgsSchema;
export type AnthropicArgs = z.infer<typeof anthropicArgsSchema>;

/**
 * `max_tokens` sent to Anthropic when the task's config sets none: Anthropic refuses a request
 * without it. Inspect AI sends the same 4096 (Claude 3's most).
 */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

/** The schema of `model_args` for the model `name`, if Steward can build that model. */
export function modelArgsSchema(name: string): z.ZodType | undefined {
  let provider: ModelProvider;
  try {
    provider = parseModelName(name).provider;
  } catch {
    return undefined;
  }
  switch (provider) {
    case 'mockllm':
      return mockArgsSchema;
    case 'anthropic':
      return anthropicArgsSchema;
    case 'openai':
    case 'openai-api':
      return openAIArgsSchema;
  }
}

function isProvider(value: string | undefined): value is ModelProvider {
  return (MODEL_PROVIDERS as readonly (string | undefined)[]).includes(value);
}

function badName(message: string): StewardError {
  return new StewardError(message, ExitCode.usage);
}

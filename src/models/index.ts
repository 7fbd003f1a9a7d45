/**
 * Model names, the credentials they need, and the factory that turns a name into a {@link Model}.
 *
 * Names follow Inspect AI: `mockllm/model`, `openai/<model>`, `openai-api/<service>/<model>`,
 * `anthropic/<model>`. Credentials are read from an injected environment (a worker's), never
 * from a definition: API keys must not reach workflow inputs or history.
 */

import type { z } from 'zod';
import { ConfigError, ExitCode, StewardError } from '../errors';
import type { Model } from '../definition/types';
import {
  anthropicArgsSchema,
  mockArgsSchema,
  openAIArgsSchema,
  parseModelName,
  type ParsedModelName,
} from '../config/models';
import { createAnthropicModel } from './anthropic';
import { createMockModel } from './mockllm';
import { createOpenAIModel } from './openai';

export {
  MODEL_PROVIDERS,
  modelArgsSchema,
  parseModelName,
  type ModelProvider,
  type ParsedModelName,
} from '../config/models';

import type { ModelHooks } from './http';

export type { ModelHooks };

/** Where a model's requests go and the environment variables that say so. */
export interface ModelCredentials {
  baseURL?: string;
  apiKey?: string;
  /** Name of the variable holding the API key. */
  keyVar?: string;
  /** Name of the variable holding the base URL. */
  baseUrlVar?: string;
}

const OPENAI_BASE_URL = 'https://api.openai.com/v1';
const ANTHROPIC_BASE_URL = 'https://api.anthropic.com';

/**
 * The base URL, API key and variable names a model uses, read from `env`. Empty variables count
 * as unset. `openai/<m>` and `anthropic/<m>` default their base URL to their provider's; mockllm
 * needs nothing.
 */
export function modelCredentials(name: string, env: NodeJS.ProcessEnv): ModelCredentials {
  const parsed = parseModelName(name);
  switch (parsed.provider) {
    case 'mockllm':
      return {};
    case 'openai':
      return {
        ...fromEnv(env, 'OPENAI_API_KEY', 'OPENAI_BASE_URL'),
        baseURL: readVar(env, 'OPENAI_BASE_URL') ?? OPENAI_BASE_URL,
      };
    case 'openai-api': {
      const prefix = serviceEnvPrefix(parsed.service ?? '');
      return fromEnv(env, `${prefix}_API_KEY`, `${prefix}_BASE_URL`);
    }
    case 'anthropic':
      return {
        ...fromEnv(env, 'ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL'),
        baseURL: readVar(env, 'ANTHROPIC_BASE_URL') ?? ANTHROPIC_BASE_URL,
      };
  }
}

/**
 * Why `name` cannot run with `env`, or `undefined` when it can: a missing variable or a
 * malformed name. Meant for a check before any sample starts.
 */
export function checkModelEnvironment(name: string, env: NodeJS.ProcessEnv): string | undefined {
  let parsed: ParsedModelName;
  try {
    parsed = parseModelName(name);
  } catch (error) {
    return (error as Error).message;
  }
  const credentials = modelCredentials(name, env);
  const missing: string[] = [];
  if (credentials.keyVar && !credentials.apiKey) missing.push(credentials.keyVar);
  // openai and anthropic fall back to their own endpoints; a compatible service has no default.
  if (parsed.provider === 'openai-api' && credentials.baseUrlVar && !credentials.baseURL) {
    missing.push(credentials.baseUrlVar);
  }
  if (missing.length === 0) return undefined;
  return `model ${name} needs ${missing.join(' and ')} in the environment`;
}

/**
 * Builds the model `name` names, with its provider-specific `args` (a task's `model_args`).
 *
 * @throws StewardError when the name is malformed or the environment lacks what it needs;
 *   ConfigError when `args` are invalid.
 */
export function createModel(
  name: string,
  args: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  hooks: ModelHooks = {},
): Model {
  const parsed = parseModelName(name);
  const problem = checkModelEnvironment(name, env);
  if (problem) throw new StewardError(problem, ExitCode.environment);
  const credentials = modelCredentials(name, env);
  switch (parsed.provider) {
    case 'mockllm':
      return createMockModel(name, parseModelArgs(mockArgsSchema, args));
    case 'openai':
      return createOpenAIModel(
        name,
        {
          model: parsed.model,
          apiKey: credentials.apiKey ?? '',
          baseURL: credentials.baseURL ?? OPENAI_BASE_URL,
          organization: readVar(env, 'OPENAI_ORG_ID'),
          project: readVar(env, 'OPENAI_PROJECT_ID'),
          // OpenAI's reasoning models reject the older `max_tokens`.
          maxTokensParam: 'max_completion_tokens',
        },
        parseModelArgs(openAIArgsSchema, args),
        hooks,
      );
    case 'openai-api':
      return createOpenAIModel(
        name,
        {
          model: parsed.model,
          apiKey: credentials.apiKey ?? '',
          baseURL: credentials.baseURL ?? '',
          // Compatible servers (vLLM, Together, ...) widely know only `max_tokens`.
          maxTokensParam: 'max_tokens',
        },
        parseModelArgs(openAIArgsSchema, args),
        hooks,
      );
    case 'anthropic':
      return createAnthropicModel(
        name,
        {
          model: parsed.model,
          apiKey: credentials.apiKey ?? '',
          baseURL: credentials.baseURL ?? ANTHROPIC_BASE_URL,
        },
        parseModelArgs(anthropicArgsSchema, args),
        hooks,
      );
  }
}

/** Validates `model_args` against a provider's schema, reporting every problem by its path. */
function parseModelArgs<T>(schema: z.ZodType<T>, args: Record<string, unknown>): T {
  const result = schema.safeParse(args);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.flatMap((issue) => {
      // An unknown key is reported at the key itself, not at the object holding it.
      const paths =
        issue.code === 'unrecognized_keys'
          ? issue.keys.map((key) => [...issue.path, key])
          : [issue.path];
      return paths.map((path) => ({
        path: ['model_args', ...path.map(String)].join('.'),
        message:
          issue.code !== 'unrecognized_keys'
            ? issue.message
            : issue.path.length === 0
              ? 'unknown model argument'
              : 'unknown key',
        value: valueAt(args, path),
      }));
    }),
  );
}

function valueAt(root: unknown, path: PropertyKey[]): unknown {
  let value = root;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** `together-ai` -> `TOGETHER_AI`, as Inspect names a service's variables. */
function serviceEnvPrefix(service: string): string {
  return service.toUpperCase().replaceAll('-', '_');
}

function fromEnv(env: NodeJS.ProcessEnv, keyVar: string, baseUrlVar: string): ModelCredentials {
  return {
    apiKey: readVar(env, keyVar),
    baseURL: readVar(env, baseUrlVar),
    keyVar,
    baseUrlVar,
  };
}

function readVar(env: NodeJS.ProcessEnv, variable: string): string | undefined {
  return env[variable] || undefined;
}

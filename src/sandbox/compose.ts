/**
 * A task's `sandbox` setting, read into a {@link SandboxSpec}: either an image name (one service
 * kept alive for the sample's commands) or a compose-style YAML file with the subset of compose
 * Steward supports. Anything else in the file is an error naming it, because silently ignoring a
 * `volumes:` or `ports:` would give the sample a different sandbox than its author wrote.
 */

import { promises as fs } from 'node:fs';
import * as path from 'node:path';

import { parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';

import { ConfigError, type ConfigIssue } from '../errors';
import type { SandboxServiceSpec, SandboxSpec } from './types';

/** Whether a `sandbox` setting names a compose file rather than an image. */
export function isComposeFile(setting: string): boolean {
  return /\.ya?ml$/i.test(setting);
}

/**
 * Resolves a task's `sandbox` setting: a compose file (relative to `baseDir`, the definition's
 * directory) or an image name.
 */
export async function loadSandboxSpec(setting: string, baseDir: string): Promise<SandboxSpec> {
  if (!isComposeFile(setting)) return imageSandboxSpec(setting);
  const file = path.resolve(baseDir, setting);
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    throw new ConfigError([
      { file, message: `cannot read sandbox compose file (${(error as Error).message})` },
    ]);
  }
  return parseComposeSpec(text, file);
}

/**
 * A sandbox of one service running `image`, kept alive by `tail -f /dev/null` under Docker's init
 * so the sample's commands have a container to run in and their zombies get reaped.
 */
export function imageSandboxSpec(image: string): SandboxSpec {
  return {
    services: [{ name: 'default', image, command: ['tail', '-f', '/dev/null'], init: true }],
    defaultService: 'default',
  };
}

const stringList = z.union([z.string(), z.array(z.string())]);

const serviceSchema = z.looseObject({
  image: z.string({ error: 'is required: the image to run' }).min(1, 'must not be empty'),
  command: stringList.optional(),
  entrypoint: stringList.optional(),
  environment: z
    .union([
      z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
      z.array(z.string()),
    ])
    .optional(),
  working_dir: z.string().optional(),
  user: z.union([z.string(), z.number()]).optional(),
  network_mode: z.enum(['none', 'host', 'bridge']).optional(),
  mem_limit: z.union([z.number().positive(), z.string()]).optional(),
  cpus: z.union([z.number().positive(), z.string()]).optional(),
  init: z.boolean().optional(),
  'x-default': z.boolean().optional(),
});

const SERVICE_KEYS = new Set(Object.keys(serviceSchema.shape));
/** Top-level keys compose allows that change nothing for Steward. */
const IGNORED_TOP_LEVEL = new Set(['services', 'version', 'name']);

/** Parses a compose-style YAML document. Every problem is reported, each naming file and path. */
export function parseComposeSpec(text: string, file: string): SandboxSpec {
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (error) {
    if (error instanceof YAMLParseError) {
      throw new ConfigError([
        { file, line: error.linePos?.[0].line, message: error.message.split('\n')[0] },
      ]);
    }
    throw error;
  }
  const issues: ConfigIssue[] = [];
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    throw new ConfigError([{ file, message: 'must be a YAML mapping with a `services` key' }]);
  }
  const top = document as Record<string, unknown>;
  for (const key of Object.keys(top)) {
    if (!IGNORED_TOP_LEVEL.has(key) && !key.startsWith('x-')) {
      issues.push({ file, path: key, message: 'is not supported in a Steward sandbox' });
    }
  }
  const services = top.services;
  if (
    typeof services !== 'object' ||
    services === null ||
    Array.isArray(services) ||
    Object.keys(services).length === 0
  ) {
    throw new ConfigError([
      ...issues,
      { file, path: 'services', message: 'must map service names to services' },
    ]);
  }

  const parsed: Array<SandboxServiceSpec & { isDefault: boolean }> = [];
  for (const [name, raw] of Object.entries(services)) {
    const at = `services.${name}`;
    if (!/^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/.test(name)) {
      issues.push({
        file,
        path: at,
        message: 'service names may use letters, digits, _ . - only',
        value: name,
      });
      continue;
    }
    const result = serviceSchema.safeParse(raw ?? {});
    if (!result.success) {
      for (const issue of result.error.issues) {
        issues.push({ file, path: [at, ...issue.path].join('.'), message: issue.message });
      }
      continue;
    }
    for (const key of Object.keys(result.data)) {
      if (!SERVICE_KEYS.has(key) && !key.startsWith('x-')) {
        issues.push({
          file,
          path: `${at}.${key}`,
          message: 'is not supported in a Steward sandbox',
        });
      }
    }
    const service = normaliseService(name, result.data, (issue) =>
      issues.push({ file, ...issue, path: `${at}.${issue.path}` }),
    );
    parsed.push({ ...service, isDefault: result.data['x-default'] === true });
  }

  const marked = parsed.filter((service) => service.isDefault);
  if (marked.length > 1) {
    issues.push({
      file,
      path: 'services',
      message: 'only one service may set x-default: true',
      value: marked.map((s) => s.name),
    });
  }
  if (issues.length > 0) throw new ConfigError(issues);

  const chosen = marked[0] ?? parsed.find((service) => service.name === 'default') ?? parsed[0];
  const ordered = [chosen, ...parsed.filter((service) => service !== chosen)];
  return {
    services: ordered.map(({ isDefault: _isDefault, ...service }) => service),
    defaultService: chosen.name,
  };
}

type ServiceInput = z.infer<typeof serviceSchema>;

function normaliseService(
  name: string,
  input: ServiceInput,
  report: (issue: { path: string; message: string; value?: unknown }) => void,
): SandboxServiceSpec {
  const service: SandboxServiceSpec = { name, image: input.image };
  if (input.command !== undefined) service.command = toArgv(input.command);
  if (input.entrypoint !== undefined) service.entrypoint = toArgv(input.entrypoint);
  if (input.environment !== undefined) {
    const environment: Record<string, string> = {};
    if (Array.isArray(input.environment)) {
      input.environment.forEach((entry, index) => {
        const eq = entry.indexOf('=');
        // Compose would copy a bare KEY from the host, which here is a worker holding API keys.
        if (eq > 0) {
          environment[entry.slice(0, eq)] = entry.slice(eq + 1);
        } else {
          report({ path: `environment.${index}`, message: 'must be KEY=value', value: entry });
        }
      });
    } else {
      for (const [key, value] of Object.entries(input.environment)) {
        environment[key] = String(value);
      }
    }
    service.environment = environment;
  }
  if (input.working_dir !== undefined) service.working_dir = input.working_dir;
  if (input.user !== undefined) service.user = String(input.user);
  if (input.network_mode !== undefined) service.network_mode = input.network_mode;
  if (input.mem_limit !== undefined) {
    service.mem_limit = parseBytes(input.mem_limit);
    if (service.mem_limit === undefined) {
      const message = 'must be bytes or a size such as 512m or 2g';
      report({ path: 'mem_limit', message, value: input.mem_limit });
    }
  }
  if (input.cpus !== undefined) {
    service.cpus = Number(input.cpus);
    if (!(service.cpus > 0)) {
      report({ path: 'cpus', message: 'must be a positive number', value: input.cpus });
    }
  }
  if (input.init !== undefined) service.init = input.init;
  return service;
}

/** `512m`, `2g`, `1.5gb`, `1024` (bytes) as compose reads them, to bytes. */
export function parseBytes(value: number | string): number | undefined {
  if (typeof value === 'number') {
    return Number.isFinite(value) && value > 0 ? Math.floor(value) : undefined;
  }
  const match = /^\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)b?\s*$/i.exec(value);
  if (!match) return undefined;
  const power = 'bkmgt'.indexOf(match[2].toLowerCase() || 'b');
  const bytes = Math.floor(Number(match[1]) * 1024 ** power);
  return bytes > 0 ? bytes : undefined;
}

function toArgv(value: string | string[]): string[] {
  return typeof value === 'string' ? splitShellWords(value) : value;
}

/**
 * Splits a command string into words the way compose does (shlex): whitespace separates,
 * quotes group, backslash escapes outside single quotes. No expansion of any kind.
 */
export function splitShellWords(text: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (quote === "'") {
      if (char === "'") quote = undefined;
      else word += char;
    } else if (
      char === '\\' &&
      i + 1 < text.length &&
      (quote === undefined || '"\\$`'.includes(text[i + 1]))
    ) {
      word = (word ?? '') + text[++i];
    } else if (quote === '"') {
      if (char === '"') quote = undefined;
      else word += char;
    } else if (char === '"' || char === "'") {
      quote = char;
      word ??= '';
    } else if (/\s/.test(char)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else {
      word = (word ?? '') + char;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

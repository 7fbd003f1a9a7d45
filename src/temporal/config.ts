/**
 * `temporal-dev.yaml`: how Steward runs its embedded Temporal dev server.
 *
 * Three steps, as everywhere in Steward: a zod schema for the file's shape, normalisation to a
 * {@link TemporalDevConfig} (defaults filled, paths made absolute), and the rules zod cannot
 * express. {@link validateTemporalDevConfig} is pure; {@link loadTemporalDevConfig} reads the file.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';
import { ConfigError, ExitCode, StewardError, type ConfigIssue } from '../errors';
import { EVAL_SET_ATTRIBUTE } from '../workflows/search-attributes';

/** Search attribute types the dev server accepts (`--search-attribute NAME=TYPE`). */
export const searchAttributeTypes = [
  'Text',
  'Keyword',
  'Int',
  'Double',
  'Bool',
  'Datetime',
  'KeywordList',
] as const;
export type SearchAttributeKind = (typeof searchAttributeTypes)[number];

/** Search attributes Steward's own workflows set, registered whatever the file says. */
export const stewardSearchAttributes: Readonly<Record<string, SearchAttributeKind>> = {
  [EVAL_SET_ATTRIBUTE.name]: 'Keyword',
};

export type JsonValue = string | number | boolean | JsonValue[] | { [key: string]: JsonValue };

/** The embedded dev server's settings, normalised. */
export interface TemporalDevConfig {
  /** Address the gRPC frontend binds to (and that clients dial). @default '127.0.0.1' */
  ip: string;
  /** gRPC frontend port. @default 7233 */
  port: number;
  /** Web UI port, or `false` for a headless server. @default port + 1000 */
  uiPort: number | false;
  /** Namespace Steward uses; created at startup if missing. @default 'default' */
  namespace: string;
  /** Absolute path of the SQLite file holding the server's state. @default '<cwd>/.steward/temporal.db' */
  dbFilename: string;
  /** @default 'warn' */
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'never';
  /** @default 'text' */
  logFormat: 'text' | 'json';
  /** Search attributes to register, Steward's own included. */
  searchAttributes: Record<string, SearchAttributeKind>;
  /** Dynamic config overrides, key to JSON value. */
  dynamicConfig: Record<string, JsonValue>;
  /**
   * SQLite pragmas for the server's database. WAL with `synchronous=normal` keeps every committed
   * transaction across a crash of the server process (only an OS crash may lose the last ones)
   * and nearly triples Steward's sample throughput over SQLite's rollback journal.
   * @default { journal_mode: 'wal', synchronous: 'normal' }
   */
  sqlitePragmas: Record<string, string>;
}

export const DEFAULT_SQLITE_PRAGMAS: Readonly<Record<string, string>> = {
  journal_mode: 'wal',
  synchronous: 'normal',
};

const port = z.number().int().min(1).max(65535);
// The dev server rejects keys that are not identifiers; dynamic config keys are dotted.
const searchAttributeName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'not an identifier');
const dynamicConfigKey = z.string().regex(/^[A-Za-z_][A-Za-z0-9_.]*$/, 'not a dotted identifier');
const jsonValue: z.ZodType<JsonValue> = z.lazy(() =>
  z.union(
    [z.string(), z.number(), z.boolean(), z.array(jsonValue), z.record(z.string(), jsonValue)],
    { error: 'must be a string, number, boolean, list or map' },
  ),
);

// YAML turns a key whose entries are all commented out into null: read that as "none".
const emptyIfNull = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (value === null ? {} : value), schema);

const fileSchema = z.strictObject({
  ip: z.string().min(1).default('127.0.0.1'),
  port: port.default(7233),
  ui_port: z.union([port, z.literal(false)]).optional(),
  namespace: z.string().min(1).default('default'),
  db_filename: z.string().min(1).default('.steward/temporal.db'),
  log_level: z.enum(['debug', 'info', 'warn', 'error', 'never']).default('warn'),
  log_format: z.enum(['text', 'json']).default('text'),
  search_attributes: emptyIfNull(
    z.record(searchAttributeName, z.enum(searchAttributeTypes)).default({}),
  ),
  dynamic_config: emptyIfNull(z.record(dynamicConfigKey, jsonValue).default({})),
  sqlite_pragmas: emptyIfNull(
    z.record(z.string().regex(/^[a-z_]+$/, 'not a pragma name'), z.string().min(1)).default({}),
  ),
});

/** Result of validation: a config when there are no issues. */
export type TemporalDevConfigResult =
  { config: TemporalDevConfig; issues: [] } | { config?: undefined; issues: ConfigIssue[] };

/**
 * Validates a parsed `temporal-dev.yaml` document. Pure.
 *
 * @param raw the parsed YAML (`null` for an empty file)
 * @param cwd directory a relative `db_filename` is resolved against
 */
export function validateTemporalDevConfig(raw: unknown, cwd: string): TemporalDevConfigResult {
  const parsed = fileSchema.safeParse(raw ?? {});
  if (!parsed.success) return { issues: parsed.error.issues.flatMap((i) => toIssues(i, raw)) };
  const file = parsed.data;

  const issues: ConfigIssue[] = [];
  const uiPort = file.ui_port ?? file.port + 1000;
  if (uiPort === file.port) {
    issues.push({ path: 'ui_port', message: 'must differ from port', value: uiPort });
  }
  if (uiPort !== false && uiPort > 65535) {
    issues.push({
      path: 'port',
      message: 'leaves no room for the default ui_port (port + 1000); set ui_port',
      value: file.port,
    });
  }
  for (const [name, type] of Object.entries(stewardSearchAttributes)) {
    const given = file.search_attributes[name];
    if (given !== undefined && given !== type) {
      issues.push({
        path: `search_attributes.${name}`,
        message: `Steward's workflows need this to be ${type}`,
        value: given,
      });
    }
  }
  if (issues.length > 0) return { issues };

  return {
    config: {
      ip: file.ip,
      port: file.port,
      uiPort,
      namespace: file.namespace,
      dbFilename: path.resolve(cwd, file.db_filename),
      logLevel: file.log_level,
      logFormat: file.log_format,
      searchAttributes: { ...file.search_attributes, ...stewardSearchAttributes },
      dynamicConfig: file.dynamic_config,
      sqlitePragmas: { ...DEFAULT_SQLITE_PRAGMAS, ...file.sqlite_pragmas },
    },
    issues: [],
  };
}

/** The package root: the same from `src/temporal` (ts-jest, tsx) and `dist/temporal` (built). */
export const packageRoot = path.resolve(__dirname, '../..');

/** The `temporal-dev.yaml` shipped at the package root. */
export const defaultTemporalDevConfigFile = path.join(packageRoot, 'temporal-dev.yaml');

/**
 * Loads and validates the dev server config.
 *
 * @param file the file to read; when unset, `STEWARD_TEMPORAL_CONFIG`, else the package's own
 *   `temporal-dev.yaml` (built-in defaults if that is absent)
 * @param options.cwd resolves a relative file and `db_filename`. @default process.cwd()
 * @param options.env where `STEWARD_TEMPORAL_CONFIG` is read. @default process.env
 * @throws ConfigError naming the file, the key and the value of every problem
 */
export function loadTemporalDevConfig(
  file?: string,
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): TemporalDevConfig {
  const cwd = options.cwd ?? process.cwd();
  const chosen = file ?? ((options.env ?? process.env).STEWARD_TEMPORAL_CONFIG || undefined);
  const source = chosen === undefined ? defaultTemporalDevConfigFile : path.resolve(cwd, chosen);
  // The shipped file may be left out of an install; its values are the defaults anyway.
  const raw =
    chosen !== undefined || existsSync(source) ? parseYaml(readText(source), source) : null;
  const result = validateTemporalDevConfig(raw, cwd);
  if (result.config === undefined) {
    throw new ConfigError(result.issues.map((issue) => ({ file: source, ...issue })));
  }
  return result.config;
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new StewardError(
      `Cannot read the Temporal dev server config ${file}: ${(error as Error).message}`,
      (error as NodeJS.ErrnoException).code === 'ENOENT' ? ExitCode.usage : ExitCode.environment,
    );
  }
}

function parseYaml(text: string, file: string): unknown {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false });
  if (document.errors.length > 0) {
    throw new ConfigError(
      document.errors.map((error) => ({
        file,
        line: lineCounter.linePos(error.pos[0]).line,
        message: `invalid YAML: ${error.message}`,
      })),
    );
  }
  return document.toJS();
}

function toIssues(issue: z.core.$ZodIssue, raw: unknown): ConfigIssue[] {
  const at = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => ({
      path: [...at, key].join('.'),
      message: 'unknown key',
      value: valueAt(raw, [...at, key]),
    }));
  }
  // A bad record key is reported at the key itself.
  if (issue.code === 'invalid_key') {
    return issue.issues.map((inner) => ({
      path: at.join('.'),
      message: `invalid name: ${inner.message}`,
    }));
  }
  return [{ path: at.join('.'), message: issue.message, value: valueAt(raw, at) }];
}

function valueAt(raw: unknown, at: string[]): unknown {
  let value = raw;
  for (const key of at) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/**
 * A headless dev server on loopback whose state lives in `dir`: for tests and benchmarks that
 * need a server of their own.
 */
export function throwawayDevConfig(
  dir: string,
  port: number,
  dynamicConfig: Record<string, JsonValue> = {},
): TemporalDevConfig {
  return {
    ip: '127.0.0.1',
    port,
    uiPort: false,
    namespace: 'default',
    dbFilename: path.join(dir, 'temporal.db'),
    logLevel: 'warn',
    logFormat: 'text',
    searchAttributes: { ...stewardSearchAttributes },
    dynamicConfig,
    sqlitePragmas: { ...DEFAULT_SQLITE_PRAGMAS },
  };
}

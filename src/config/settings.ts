/**
 * Concurrency settings: where each knob comes from and what it resolves to (SPEC §2). Pure: the
 * caller reads the environment and `_steward.yaml` and passes them in.
 *
 * Precedence, per knob: CLI flag > `STEWARD_*` environment variable > `_steward.yaml` >
 * definition > default.
 */

import type { ConfigIssue } from '../errors';
import type { ConcurrencySettings } from '../definition/types';
import { knobShape, rampRangeProblem, stewardYamlSchema } from './schema';
import { issuesFromZod } from './validate';

/** The knobs, by their seed names. */
export const KNOBS = [
  'max_tasks',
  'max_samples',
  'max_sandboxes',
  'max_connections',
  'samples_ramp',
  'max_workers',
  'tend_interval',
] as const satisfies ReadonlyArray<keyof ConcurrencySettings>;
export type Knob = (typeof KNOBS)[number];

/** The settings file read from the directory Steward is launched in. */
export const STEWARD_YAML = '_steward.yaml';

/** `max_samples` -> `STEWARD_MAX_SAMPLES`. */
export function knobEnvVar(knob: Knob): string {
  return `STEWARD_${knob.toUpperCase()}`;
}

/** `max_samples` -> `--max-samples`. */
export function knobFlag(knob: Knob): string {
  return `--${knob.replaceAll('_', '-')}`;
}

/**
 * `STEWARD_*` variables that are not knobs but that Steward itself reads. Any other `STEWARD_*`
 * variable is taken for a misspelt knob and refused by name; add new ones here.
 */
export const NON_KNOB_ENV_VARS: readonly string[] = [
  'STEWARD_HOME',
  'STEWARD_LOG_LEVEL',
  'STEWARD_TEMPORAL_CONFIG',
  'STEWARD_WORKER_CONFIG',
  'STEWARD_DEFINITION',
];

/** Steward's defaults (SPEC §2). */
export const SETTINGS_DEFAULTS = {
  /** A task's setpoint when no ramp moves it, and where a ramp starts (clamped to its range). */
  samples: 50,
  samplesRamp: [50, 200] as const,
  rampStep: 20,
  connections: { min: 10, start: 20, max: 100 },
  tendIntervalSeconds: 60,
} as const;

/** Sample concurrency per task. */
export type SamplesSetting =
  /** `max_samples` set: honoured exactly, never moves. */
  | { type: 'pinned'; value: number }
  /** The default: the setpoint starts at `start` and moves by `step` within `[lo, hi]`. */
  | { type: 'ramp'; lo: number; hi: number; step: 20; start: number }
  /** `samples_ramp: false`: tasks stay at 50. */
  | { type: 'fixed'; value: 50 };

/** Model connections per provider account. */
export type ConnectionsSetting =
  /** `max_connections` set: no adaptive controller. */
  | { type: 'fixed'; n: number }
  /** The default: Inspect's adaptive controller. */
  | { type: 'adaptive'; min: 10; start: 20; max: 100 };

/** Settings after precedence and defaults. */
export interface ResolvedSettings {
  /** @default null (every task at once) */
  maxTasks: number | null;
  /** @default { type: 'ramp', lo: 50, hi: 200, step: 20, start: 50 } */
  samples: SamplesSetting;
  /** @default null (the sandbox provider's budget, if it reports one) */
  maxSandboxes: number | null;
  /** @default { type: 'adaptive', min: 10, start: 20, max: 100 } */
  connections: ConnectionsSetting;
  /** @default null (one worker process per task) */
  maxWorkers: number | null;
  /** @default 60000 */
  tendIntervalMs: number;
}

/** Where settings come from, highest precedence first. */
export interface SettingsSources {
  /** From the command line (or the workflow input), already typed. */
  flags?: ConcurrencySettings;
  /** The process environment; only `STEWARD_*` variables are looked at. */
  env?: Record<string, string | undefined>;
  /** `_steward.yaml` as parsed, not yet validated; `undefined` when there is none. */
  stewardYaml?: unknown;
  /** Names `_steward.yaml` in messages. @default "_steward.yaml" */
  stewardYamlFile?: string;
  /** The definition's knobs, already validated. */
  definition?: ConcurrencySettings;
}

export interface SettingsResult {
  /** Resolved from the valid values; a source with errors contributes its valid knobs only. */
  settings: ResolvedSettings;
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
}

type Origin = 'flag' | 'env' | 'file' | 'definition';

/** Resolves the knobs from every source, reporting every invalid value and unknown name. */
export function resolveSettings(sources: SettingsSources): SettingsResult {
  const yamlFile = sources.stewardYamlFile ?? STEWARD_YAML;
  const flags = checkSettings(sources.flags ?? {}, (path) => ({ path: flagPath(path) }));
  const env = settingsFromEnv(sources.env ?? {});
  const file = checkSettings(sources.stewardYaml ?? {}, (path) => ({ file: yamlFile, path }));
  const layers: Array<[Origin, ConcurrencySettings]> = [
    ['flag', flags.settings],
    ['env', env.settings],
    ['file', file.settings],
    ['definition', sources.definition ?? {}],
  ];

  const chosen: ConcurrencySettings = {};
  const origins: Partial<Record<Knob, Origin>> = {};
  for (const knob of KNOBS) {
    const layer = layers.find(([, settings]) => settings[knob] !== undefined);
    if (layer) {
      Object.assign(chosen, { [knob]: layer[1][knob] });
      origins[knob] = layer[0];
    }
  }

  const warnings: ConfigIssue[] = [];
  if (chosen.max_samples !== undefined && chosen.samples_ramp !== undefined) {
    const name = (knob: Knob) => describeOrigin(knob, origins[knob] as Origin, yamlFile);
    warnings.push({
      path: 'samples_ramp',
      message: `${name('samples_ramp')} has no effect: ${name('max_samples')} pins samples at ${chosen.max_samples}`,
    });
  }
  return {
    settings: applyDefaults(chosen),
    errors: [...flags.errors, ...env.errors, ...file.errors],
    warnings,
  };
}

function applyDefaults(s: ConcurrencySettings): ResolvedSettings {
  return {
    maxTasks: s.max_tasks ?? null,
    samples: samplesSetting(s),
    maxSandboxes: s.max_sandboxes ?? null,
    connections:
      s.max_connections === undefined
        ? { type: 'adaptive', ...SETTINGS_DEFAULTS.connections }
        : { type: 'fixed', n: s.max_connections },
    maxWorkers: s.max_workers ?? null,
    // Temporal timers are whole milliseconds; rounding up keeps any positive interval positive.
    tendIntervalMs: Math.ceil((s.tend_interval ?? SETTINGS_DEFAULTS.tendIntervalSeconds) * 1000),
  };
}

function samplesSetting(s: ConcurrencySettings): SamplesSetting {
  if (s.max_samples !== undefined) return { type: 'pinned', value: s.max_samples };
  if (s.samples_ramp === false) return { type: 'fixed', value: SETTINGS_DEFAULTS.samples };
  const [lo, hi] = s.samples_ramp ?? SETTINGS_DEFAULTS.samplesRamp;
  const start = Math.min(Math.max(SETTINGS_DEFAULTS.samples, lo), hi);
  return { type: 'ramp', lo, hi, step: SETTINGS_DEFAULTS.rampStep, start };
}

function describeOrigin(knob: Knob, origin: Origin, yamlFile: string): string {
  switch (origin) {
    case 'flag':
      return knobFlag(knob);
    case 'env':
      return knobEnvVar(knob);
    case 'file':
      return `${knob} in ${yamlFile}`;
    case 'definition':
      return `${knob} in the definition`;
  }
}

function flagPath(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  const [knob, ...rest] = path.split('.');
  const isKnob = (KNOBS as readonly string[]).includes(knob);
  return [isKnob ? knobFlag(knob as Knob) : knob, ...rest].join('.');
}

/** Validates an object of knobs (flags or `_steward.yaml`), keeping what is valid. */
function checkSettings(
  raw: unknown,
  locate: (path: string | undefined) => Pick<ConfigIssue, 'file' | 'path'>,
): { settings: ConcurrencySettings; errors: ConfigIssue[] } {
  // An empty `_steward.yaml` parses as null: no settings.
  if (raw === null) return { settings: {}, errors: [] };
  const parsed = stewardYamlSchema.safeParse(raw, { reportInput: true });
  const errors = parsed.success
    ? []
    : issuesFromZod(parsed.error).map((issue) => ({ ...issue, ...locate(issue.path) }));
  const settings = parsed.success ? parsed.data : validKnobs(raw);
  const ramp = settings.samples_ramp;
  const problem = ramp ? rampRangeProblem(ramp) : undefined;
  if (problem) {
    errors.push({ ...locate('samples_ramp'), message: problem, value: ramp });
    delete settings.samples_ramp;
  }
  return { settings, errors };
}

/** The knobs that are valid on their own, so one bad value does not hide the others. */
function validKnobs(raw: unknown): ConcurrencySettings {
  const settings: ConcurrencySettings = {};
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return settings;
  for (const knob of KNOBS) {
    const value = knobShape[knob].safeParse((raw as Record<string, unknown>)[knob]);
    if (value.success && value.data !== undefined) Object.assign(settings, { [knob]: value.data });
  }
  return settings;
}

// ---- environment ----------------------------------------------------------------------------

function settingsFromEnv(env: Record<string, string | undefined>): {
  settings: ConcurrencySettings;
  errors: ConfigIssue[];
} {
  const byVar = new Map(KNOBS.map((knob) => [knobEnvVar(knob), knob]));
  const settings: ConcurrencySettings = {};
  const errors: ConfigIssue[] = [];
  for (const [name, text] of Object.entries(env)) {
    if (!name.startsWith('STEWARD_') || NON_KNOB_ENV_VARS.includes(name)) continue;
    const knob = byVar.get(name);
    if (knob === undefined) {
      const known = KNOBS.map(knobEnvVar).join(', ');
      errors.push({ path: name, message: `unknown Steward setting; the settings are ${known}` });
      continue;
    }
    // `STEWARD_X= steward ...` is the shell's way to unset a variable for one command.
    if (text === undefined || text.trim() === '') continue;
    const parsed = parseKnobText(knob, text);
    if ('error' in parsed) errors.push({ path: name, message: parsed.error, value: text });
    else Object.assign(settings, { [knob]: parsed.value });
  }
  return { settings, errors };
}

const INTEGER = /^\d+$/;
const DECIMAL = /^\d+(\.\d+)?$/;
const RAMP = /^(?:\[\s*(\d+)\s*,\s*(\d+)\s*\]|(\d+)\s*,\s*(\d+))$/;

/**
 * Parses a knob's value as text (an environment variable or a command-line flag), strictly:
 * `12abc`, `1e3` or `0` are refused, not read as something else.
 *
 * `samples_ramp` takes `40,300`, `[40, 300]` or `false`.
 */
export function parseKnobText<K extends Knob>(
  knob: K,
  text: string,
): { value: NonNullable<ConcurrencySettings[K]> } | { error: string } {
  const trimmed = text.trim();
  const ok = (value: unknown) => ({ value: value as NonNullable<ConcurrencySettings[K]> });
  if (knob === 'samples_ramp') {
    if (trimmed === 'false') return ok(false);
    const match = RAMP.exec(trimmed);
    if (!match) return { error: 'expected "LO,HI", "[LO, HI]" or "false"' };
    const range: [number, number] = [Number(match[1] ?? match[3]), Number(match[2] ?? match[4])];
    if (range[0] < 1) return { error: 'lo must be at least 1' };
    return rampRangeProblem(range) ? { error: rampRangeProblem(range) as string } : ok(range);
  }
  if (knob === 'tend_interval') {
    const seconds = Number(trimmed);
    return DECIMAL.test(trimmed) && seconds > 0
      ? ok(seconds)
      : { error: 'expected a positive number of seconds' };
  }
  const n = Number(trimmed);
  return INTEGER.test(trimmed) && n >= 1 && Number.isSafeInteger(n)
    ? ok(n)
    : { error: 'expected a positive integer' };
}

/**
 * Concurrency settings: where each knob comes from and what it resolves to (SPEC §2).
 *
 * Precedence, per knob: CLI flag > `STEWARD_*` environment variable > `_steward.yaml` >
 * definition > default. `steward launch` applies the first three (they are its process's) and
 * carries the knobs it chose in the workflow input; planning then applies input > definition >
 * default, wherever it runs, and never reads a process's environment or files again.
 *
 * Pure, and light enough for workflow code: it imports zod and pure modules only (a lint rule
 * keeps it so). The caller reads the environment and `_steward.yaml` and passes them in.
 */

import type { ConfigIssue } from '../errors';
import { issuesFromZod } from './issues';
import {
  KNOBS,
  LIMITS,
  knobEnvVar,
  knobFlag,
  knobMetaOf,
  knobShape,
  knobsSchema,
  parseKnobText,
  rampRangeProblem,
  type ConcurrencySettings,
  type Knob,
  type SampleLimits,
} from './knobs';
import type { NotifyTarget } from './notify';

/** The settings file read from the directory Steward is launched in. */
export const STEWARD_YAML = '_steward.yaml';

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
  /** The eval set's sample limits: each one set replaces the tasks' own. @default {} */
  limits: SampleLimits;
  /** Webhooks told of the eval set's events; absent: none. */
  notify?: NotifyTarget[];
}

/** Where settings come from, highest precedence first. */
export interface SettingsSources {
  /** From the command line, already typed (see `settingsFromFlags`). */
  flags?: ConcurrencySettings;
  /** The process environment; only `STEWARD_*` variables are looked at. */
  env?: Record<string, string | undefined>;
  /** `_steward.yaml` as parsed, not yet validated; `undefined` when there is none. */
  stewardYaml?: unknown;
  /** Names `_steward.yaml` in messages. @default "_steward.yaml" */
  stewardYamlFile?: string;
  /**
   * The `settings` of a workflow input, as received: what the launch chose from its flags,
   * environment, `_steward.yaml` and definition. Planning uses it in place of all three.
   */
  input?: unknown;
  /** The definition's knobs, already validated. */
  definition?: ConcurrencySettings;
}

/** The layer a knob's value came from. */
export type SettingsOrigin = 'flag' | 'env' | 'file' | 'input' | 'definition';

export interface ChosenSettings {
  /** Each knob some source set, from the highest one; defaults are not filled in. */
  settings: ConcurrencySettings;
  origins: Partial<Record<Knob, SettingsOrigin>>;
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
}

export interface SettingsResult {
  /** Resolved from the valid values; a source with errors contributes its valid knobs only. */
  settings: ResolvedSettings;
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
}

/**
 * Applies precedence: for each knob, the value of the highest source that sets it, reporting
 * every invalid value and unknown name. This is what a launch carries to its workflow.
 */
export function chooseSettings(sources: SettingsSources): ChosenSettings {
  const yamlFile = sources.stewardYamlFile ?? STEWARD_YAML;
  const flags = checkSettings(sources.flags ?? {}, (path) => ({ path: flagPath(path) }));
  const env = settingsFromEnv(sources.env ?? {});
  const file = checkSettings(sources.stewardYaml ?? {}, (path) => ({ file: yamlFile, path }));
  const input = checkSettings(sources.input ?? {}, (path) => ({
    path: ['settings', path].filter((part) => part).join('.'),
  }));
  const layers: Array<[SettingsOrigin, ConcurrencySettings]> = [
    ['flag', flags.settings],
    ['env', env.settings],
    ['file', file.settings],
    ['input', input.settings],
    ['definition', sources.definition ?? {}],
  ];

  const chosen: Record<string, unknown> = {};
  const origins: Partial<Record<Knob, SettingsOrigin>> = {};
  for (const knob of KNOBS) {
    const layer = layers.find(([, settings]) => settings[knob] !== undefined);
    if (layer) {
      chosen[knob] = layer[1][knob];
      origins[knob] = layer[0];
    }
  }
  const settings = chosen as ConcurrencySettings;

  const warnings: ConfigIssue[] = [];
  if (settings.max_samples !== undefined && settings.samples_ramp !== undefined) {
    const name = (knob: Knob) => describeOrigin(knob, origins[knob] as SettingsOrigin, yamlFile);
    warnings.push({
      path: 'samples_ramp',
      message: `${name('samples_ramp')} has no effect: ${name('max_samples')} pins samples at ${settings.max_samples}`,
    });
  }
  return {
    settings,
    origins,
    errors: [...flags.errors, ...env.errors, ...file.errors, ...input.errors],
    warnings,
  };
}

/** {@link chooseSettings}, then Steward's defaults for what no source set. */
export function resolveSettings(sources: SettingsSources): SettingsResult {
  const { settings, errors, warnings } = chooseSettings(sources);
  return { settings: withDefaults(settings), errors, warnings };
}

/** The knobs as Steward runs them: each one set, else its default. */
export function withDefaults(s: ConcurrencySettings): ResolvedSettings {
  return {
    maxTasks: s.max_tasks ?? null,
    samples:
      s.max_samples === undefined
        ? samplesSettingForRange(s.samples_ramp ?? SETTINGS_DEFAULTS.samplesRamp)
        : { type: 'pinned', value: s.max_samples },
    maxSandboxes: s.max_sandboxes ?? null,
    connections:
      s.max_connections === undefined
        ? { type: 'adaptive', ...SETTINGS_DEFAULTS.connections }
        : { type: 'fixed', n: s.max_connections },
    maxWorkers: s.max_workers ?? null,
    // Temporal timers are whole milliseconds; rounding up keeps any positive interval positive.
    tendIntervalMs: Math.ceil((s.tend_interval ?? SETTINGS_DEFAULTS.tendIntervalSeconds) * 1000),
    limits: Object.fromEntries(
      LIMITS.filter((limit) => s[limit] !== undefined).map((limit) => [limit, s[limit]]),
    ),
    ...(s.notify ? { notify: s.notify } : {}),
  };
}

/**
 * The sample setting a `samples_ramp` value means, when `max_samples` does not pin samples: a
 * ramp over `[lo, hi]` starting at the default setpoint clamped into it, or (`false`) a fixed
 * setpoint. The one place the ramp's range rules live: launch, planning and a range changed on
 * a live run (`setSamplesRamp`) all go through it. The range must be usable: see
 * {@link rampRangeProblem}.
 */
export function samplesSettingForRange(range: readonly [number, number] | false): SamplesSetting {
  if (range === false) return { type: 'fixed', value: SETTINGS_DEFAULTS.samples };
  const [lo, hi] = range;
  const start = Math.min(Math.max(SETTINGS_DEFAULTS.samples, lo), hi);
  return { type: 'ramp', lo, hi, step: SETTINGS_DEFAULTS.rampStep, start };
}

function describeOrigin(knob: Knob, origin: SettingsOrigin, yamlFile: string): string {
  switch (origin) {
    case 'flag':
      return knobFlag(knob);
    case 'env':
      return knobEnvVar(knob);
    case 'file':
      return `${knob} in ${yamlFile}`;
    case 'input':
      return `settings.${knob} of the workflow input`;
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
  const parsed = knobsSchema.safeParse(raw, { reportInput: true });
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
    if ('error' in parsed) {
      const sensitive = knobMetaOf(knob).sensitive === true;
      errors.push({ path: name, message: parsed.error, ...(sensitive ? {} : { value: text }) });
    } else Object.assign(settings, { [knob]: parsed.value });
  }
  return { settings, errors };
}

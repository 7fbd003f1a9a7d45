/**
 * The knobs: the concurrency knobs (SPEC §2) and the per-sample limits, declared once: {@link knobsSchema} is the only list of them.
 * Everything else derives from it: the TypeScript type, the names (`max_samples`,
 * `STEWARD_MAX_SAMPLES`, `--max-samples`), the flags of `steward launch`, and the shape the
 * definition, `_steward.yaml` and the workflow input accept. Adding a knob is one entry here
 * (plus what it means, in `settings.ts`, and its row in README's table: a test checks both).
 *
 * Pure: zod and nothing else, because workflow code (Temporal's sandbox) imports it.
 */

import { z } from 'zod';
import { notifySchema, parseNotifyText } from './notify';

/** A knob's value parsed from text, or why it cannot be. */
export type KnobText<T> = { value: T } | { error: string };

/** What the command line and the environment need to know about a knob. */
export interface KnobMeta {
  /** The flag's argument in `--help`: `<n>`. */
  placeholder: string;
  /** The flag's `--help` text. */
  help: string;
  /** Reads the knob from text (a flag or an environment variable), strictly. */
  parse(text: string): KnobText<unknown>;
  /** A valid value, as text: used by tests to check that every knob takes one. */
  example: string;
  /** The value may hold a secret (a webhook's token): messages never echo it. */
  sensitive?: boolean;
}

/** Each knob's {@link KnobMeta}, keyed by its schema. */
const knobMeta = z.registry<KnobMeta>();

const positiveInt = z.number().int().min(1);

/** Why a ramp range cannot be used, or `undefined` when it can. */
export function rampRangeProblem(range: readonly [number, number]): string | undefined {
  return range[0] > range[1] ? 'lo must not exceed hi' : undefined;
}

/** `[lo, hi]` or `false`; `lo <= hi` is a rule, checked by {@link rampRangeProblem}. */
export const samplesRampSchema = z.union([z.literal(false), z.tuple([positiveInt, positiveInt])], {
  error: 'expected [lo, hi] or false',
});

/**
 * Checks a `samples_ramp` value from outside (a signal, an update, a workflow input): its shape
 * and its rules, with the words Steward uses everywhere else. Never throws.
 */
export function checkSamplesRamp(value: unknown): KnobText<[number, number] | false> {
  const parsed = samplesRampSchema.safeParse(value);
  if (!parsed.success)
    return { error: 'expected [lo, hi] of whole numbers of at least 1, or false' };
  const problem = parsed.data === false ? undefined : rampRangeProblem(parsed.data);
  return problem ? { error: problem } : { value: parsed.data };
}

const INTEGER = /^\d+$/;
const DECIMAL = /^\d+(\.\d+)?$/;
const RAMP = /^(?:\[\s*(\d+)\s*,\s*(\d+)\s*\]|(\d+)\s*,\s*(\d+))$/;

// Text is parsed strictly: `12abc`, `1e3` or `0` are refused, not read as something else.

function parseCount(text: string): KnobText<number> {
  const trimmed = text.trim();
  const n = Number(trimmed);
  return INTEGER.test(trimmed) && n >= 1 && Number.isSafeInteger(n)
    ? { value: n }
    : { error: 'expected a positive integer' };
}

/** A count that may be 0: `retry_on_error: 0` turns an eval set's tasks' retries off. */
function parseWhole(text: string): KnobText<number> {
  const trimmed = text.trim();
  const n = Number(trimmed);
  return INTEGER.test(trimmed) && Number.isSafeInteger(n)
    ? { value: n }
    : { error: 'expected a whole number' };
}

function parseSeconds(text: string): KnobText<number> {
  const trimmed = text.trim();
  const seconds = Number(trimmed);
  return DECIMAL.test(trimmed) && seconds > 0 && Number.isFinite(seconds)
    ? { value: seconds }
    : { error: 'expected a positive number of seconds' };
}

/** `40,300`, `[40, 300]` or `false`. */
function parseRange(text: string): KnobText<[number, number] | false> {
  const trimmed = text.trim();
  if (trimmed === 'false') return { value: false };
  const match = RAMP.exec(trimmed);
  if (!match) return { error: 'expected "LO,HI", "[LO, HI]" or "false"' };
  const range: [number, number] = [Number(match[1] ?? match[3]), Number(match[2] ?? match[4])];
  if (range[0] < 1) return { error: 'lo must be at least 1' };
  if (!range.every(Number.isSafeInteger)) return { error: 'expected whole numbers' };
  const problem = rampRangeProblem(range);
  return problem ? { error: problem } : { value: range };
}

function knob<T extends z.ZodType>(schema: T, meta: KnobMeta): z.ZodOptional<T> {
  const optional = schema.optional();
  knobMeta.add(optional as z.ZodType, meta);
  return optional;
}

const count = (help: string, example = '3'): KnobMeta => ({
  placeholder: '<n>',
  help,
  parse: parseCount,
  example,
});

const seconds = (help: string, example: string): KnobMeta => ({
  placeholder: '<seconds>',
  help,
  parse: parseSeconds,
  example,
});

/**
 * The per-sample limits and retries, with Inspect AI's names and meanings where Inspect has them.
 * A task sets them in its definition; set for the whole eval set (the definition's top level,
 * `_steward.yaml`, `STEWARD_*` or a flag), one replaces the tasks' own, as `eval_set`'s arguments
 * replace a task's in Inspect. A sample that reaches a limit stops and is scored on what it has
 * (`eval/limits.ts`); one that makes no progress for `stuck_after` is stuck (`eval/stuck.ts`); one
 * that fails is run again up to `retry_on_error` times (`eval/retries.ts`).
 */
export const limitsShape = {
  /** Seconds of wall clock from the start of the solvers. @default unlimited */
  time_limit: knob(
    z.number().positive(),
    seconds('stop a sample after this many seconds (wall clock)', '600'),
  ),
  /**
   * Seconds of working time: wall clock less the time the sample's model calls waited for a
   * connection slot or a rate-limit backoff. @default unlimited
   */
  working_limit: knob(
    z.number().positive(),
    seconds(
      'stop a sample after this many seconds of work (waits for the provider excluded)',
      '300',
    ),
  ),
  /** Messages in the sample's conversation. @default unlimited */
  message_limit: knob(positiveInt, count('stop a sample at this many messages', '50')),
  /** Tokens (input plus output) over the sample's model calls. @default unlimited */
  token_limit: knob(positiveInt, count('stop a sample after this many model tokens', '100000')),
  /**
   * Seconds without progress (a model call returning, a tool call starting or ending) after which
   * a sample is stuck: it is cancelled and run again once on a fresh sandbox, then fails with
   * `StewardSampleStuck`. Waits for a connection slot or a rate-limit backoff do not count.
   * @default 1800
   */
  stuck_after: knob(
    z.number().positive(),
    seconds('a sample without progress this long is stuck (run again once, then failed)', '900'),
  ),
  /**
   * Times a failed sample (solver, scorer or sandbox) is run again within the run, on a fresh
   * sandbox, before it counts as errored. A model error that is fatal by class is not. @default 0
   */
  retry_on_error: knob(z.number().int().min(0).max(100), {
    placeholder: '<n>',
    help: 'run a failed sample again up to this many times before it counts as errored',
    parse: parseWhole,
    example: '2',
  }),
};

export const sampleLimitsSchema = z.strictObject(limitsShape);

/** A sample's limits as written (snake_case, Inspect's names); unset means none. */
export type SampleLimits = z.infer<typeof sampleLimitsSchema>;

/**
 * What can stop a sample: a subset of Inspect's `EvalSampleLimitType` (the four limits above, and
 * `turn`, the agent's `max_turns`).
 */
export const sampleLimitTypeSchema = z.enum(['time', 'working', 'message', 'token', 'turn']);

/** The limits by their names, in declaration order. */
export const LIMITS = sampleLimitsSchema.keyof().options;

/**
 * The knobs, each optional: unset means Steward's default. Strict, so a misspelt knob in
 * `_steward.yaml` or a workflow input is refused by name.
 */
export const knobsSchema = z.strictObject({
  /** @default null: every task at once */
  max_tasks: knob(positiveInt, count('tasks run at once')),
  /** @default unset: the ramp moves each task's setpoint */
  max_samples: knob(positiveInt, count('samples in flight per task (pins it: no ramp)', '20')),
  /** @default Docker: 2 × the daemon's CPUs; none without sandboxes */
  max_sandboxes: knob(positiveInt, count('fleet-wide sandbox budget', '8')),
  /** @default adaptive, per provider account */
  max_connections: knob(
    positiveInt,
    count('fixed model connections per provider account (no adaptive controller)', '10'),
  ),
  /** @default [50, 200] */
  samples_ramp: knob(samplesRampSchema, {
    placeholder: '<range>',
    help: 'ramp range "LO,HI", or "false" for no ramp',
    parse: parseRange,
    example: '40,300',
  }),
  /** @default null: one worker process per task */
  max_workers: knob(positiveInt, count('worker processes to pack the task queues into', '2')),
  /** Seconds. @default 60 */
  tend_interval: knob(z.number().positive(), seconds('seconds between tends', '2.5')),
  /**
   * Webhooks told of the eval set's events (README "Notifications"): a URL or `{url, format}`,
   * or a list of them. @default none
   */
  notify: knob(notifySchema, {
    placeholder: '<urls>',
    help: 'webhooks to notify, comma-separated; prefix one with "slack:" for a Slack-compatible body',
    parse: parseNotifyText,
    example: 'https://hooks.example/steward,slack:${SLACK_WEBHOOK_URL}',
    sensitive: true,
  }),
  ...limitsShape,
});

/** Concurrency knobs as written (snake_case, the seed's names); unset means the default. */
export type ConcurrencySettings = z.infer<typeof knobsSchema>;
export type Knob = keyof ConcurrencySettings;

/** The knobs, by their seed names, in declaration order. */
export const KNOBS: readonly Knob[] = knobsSchema.keyof().options;

/** Each knob's schema, for schemas that embed the knobs (the definition's). */
export const knobShape = knobsSchema.shape;

/** What the command line and the environment need to know about `knob`. */
export function knobMetaOf(knob: Knob): KnobMeta {
  const meta = knobMeta.get(knobShape[knob]);
  // Every entry of knobsSchema is made by knob(), which registers it.
  if (!meta) throw new Error(`knob ${knob} is declared without its metadata`);
  return meta;
}

/** `max_samples` -> `STEWARD_MAX_SAMPLES`. */
export function knobEnvVar(knob: Knob): string {
  return `STEWARD_${knob.toUpperCase()}`;
}

/** `max_samples` -> `--max-samples`. */
export function knobFlag(knob: Knob): string {
  return `--${knob.replaceAll('_', '-')}`;
}

type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : S;

/** `max_samples` -> `maxSamples`: the attribute commander gives `--max-samples`. */
export function knobOption<K extends Knob>(knob: K): CamelCase<K> {
  return knob.replace(/_(.)/g, (_, c: string) => c.toUpperCase()) as CamelCase<K>;
}

/** The knobs as commander hands them over, parsed: `{ maxSamples: 20 }`. */
export type KnobFlags = { [K in Knob as CamelCase<K>]?: NonNullable<ConcurrencySettings[K]> };

/**
 * Parses a knob's value as text (an environment variable or a command-line flag), strictly.
 * `samples_ramp` takes `40,300`, `[40, 300]` or `false`.
 */
export function parseKnobText<K extends Knob>(
  knob: K,
  text: string,
): KnobText<NonNullable<ConcurrencySettings[K]>> {
  return knobMetaOf(knob).parse(text) as KnobText<NonNullable<ConcurrencySettings[K]>>;
}

/** The knobs given as flags, by their seed names; unset flags are left out. */
export function settingsFromFlags(flags: KnobFlags): ConcurrencySettings {
  const settings: Record<string, unknown> = {};
  for (const knob of KNOBS) {
    const value = (flags as Record<string, unknown>)[knobOption(knob)];
    if (value !== undefined) settings[knob] = value;
  }
  return settings as ConcurrencySettings;
}

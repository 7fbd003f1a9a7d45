/**
 * What each input of Steward's workflows must look like: start inputs, signals and updates.
 * Anyone who can reach the Temporal server can send them (the stock `temporal` CLI, ops tooling,
 * scripts), so a workflow parses them like user input before they touch its state; a payload
 * that does not parse is refused with a message that names the field and the value, and never
 * throws inside workflow code. Pure zod (this module is bundled into workflow code); the
 * TypeScript types of src/workflows/types.ts are the parsed shapes.
 */
import { z } from 'zod';
import {
  knobsSchema as knobs,
  rampRangeProblem,
  sampleLimitsSchema as sampleLimits,
  sampleLimitTypeSchema as sampleLimitType,
} from '../config/knobs';
import { notifySchema } from '../config/notify';
import { formatIssue } from '../errors';

/** Task and eval-set names: they end up in workflow ids and task queues. */
const name = z
  .string()
  .regex(/^[A-Za-z0-9_.-]+$/, { error: 'may only contain letters, digits, "_", "." and "-"' })
  .max(200);
const by = z.string().max(200).optional();
const count = z.number().int().min(0).max(1e9);
const positive = z.number().int().min(1).max(1e9);
const sha256 = z.string().regex(/^[0-9a-f]{64}$/, { error: 'expected 64 lowercase hex digits' });

export const holdRampArgsSchema = z.lazy(() =>
  z.strictObject({
    reason: z
      .string()
      .trim()
      .min(1, { error: 'must say why the climb stops' })
      .max(1_000, { error: 'at most 1000 characters' }),
    task: name.optional(),
    by,
  }),
);

export const resumeRampArgsSchema = z.lazy(() => z.strictObject({ task: name.optional(), by }));

export const pauseArgsSchema = z.lazy(() =>
  z.strictObject({
    reason: z
      .string()
      .trim()
      .min(1, { error: 'must say why the eval set pauses' })
      .max(1_000, { error: 'at most 1000 characters' }),
    by,
  }),
);

export const unpauseArgsSchema = z.lazy(() => z.strictObject({ by }));

/** A ramp range: `[lo, hi]` with 1 <= lo <= hi, or `false` for no ramp. */
export const samplesRampRangeSchema = z.lazy(() =>
  z
    .union([z.literal(false), z.tuple([positive, positive])], {
      error: 'expected [lo, hi] (whole numbers from 1) or false',
    })
    .superRefine((range, ctx) => {
      const problem = range === false ? undefined : rampRangeProblem(range);
      if (problem) ctx.addIssue({ code: 'custom', message: problem, input: range });
    }),
);

export const setSamplesRampArgsSchema = z.lazy(() =>
  z.strictObject({ range: samplesRampRangeSchema, by }),
);

export const workerReportSchema = z.lazy(() =>
  z.strictObject({
    account: z.string().min(1).max(1_000).optional(),
    tasks: z.array(name).max(10_000),
    pid: count,
    host: z.string().min(1).max(300).optional(),
    demand: count.optional(),
    leaving: z.boolean().optional(),
    limit: count,
    rateLimitEpisodes: count,
    cuts: count,
    retries: count,
    queuedShare: z.number().min(0).max(1).optional(),
    pushbackLevel: count.nullable().optional(),
    inFlight: count.optional(),
    pacing: z
      .strictObject({
        pacing: z.boolean(),
        binding: z.string().max(200).nullable(),
        spacingMs: z.number().min(0).max(1e9),
      })
      .optional(),
  }),
);

/** Bytes of memory: past a count's 1e9. */
const bytes = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

export const hostReportSchema = z.lazy(() =>
  z
    .strictObject({
      host: z.string().min(1).max(300),
      totalBytes: bytes.min(1),
      headroomBytes: bytes,
      lowestHeadroomBytes: bytes,
      fleetResidentBytes: bytes,
      processes: count,
    })
    .superRefine((r, ctx) => {
      if (r.lowestHeadroomBytes <= r.headroomBytes) return;
      ctx.addIssue({
        code: 'custom',
        // The headroom when it reported is part of the window the lowest covers.
        message: `above headroomBytes ${r.headroomBytes}`,
        path: ['lowestHeadroomBytes'],
        input: r.lowestHeadroomBytes,
      });
    }),
);

export const setLimitsSchema = z.lazy(() =>
  z.strictObject({
    setpoint: count,
    connectionLimit: count.nullable(),
  }),
);

export const sampleDoneSchema = z.lazy(() =>
  z.strictObject({
    index: count,
    ok: z.boolean(),
    error: z.string().max(10_000).optional(),
    errorType: z.string().max(200).optional(),
    limit: sampleLimitType.optional(),
  }),
);

export const sampleRetriedSchema = z.lazy(() =>
  z.strictObject({
    index: count,
    attempt: count,
    errorType: z.string().max(200).optional(),
  }),
);

/** The most reports one `samplesDone` signal carries (src/activities/report-batcher.ts). */
export const MAX_REPORTS_PER_SIGNAL = 1_000;

export const samplesDoneSchema = z.lazy(() =>
  z.strictObject({ reports: z.array(sampleDoneSchema).min(1).max(MAX_REPORTS_PER_SIGNAL) }),
);

/** The knobs a start input may carry: the same names and rules as `_steward.yaml`. */
const knobsSchema = z.lazy(() =>
  knobs.superRefine((value, ctx) => {
    const problem = value.samples_ramp ? rampRangeProblem(value.samples_ramp) : undefined;
    if (problem) {
      ctx.addIssue({
        code: 'custom',
        path: ['samples_ramp'],
        message: problem,
        input: value.samples_ramp,
      });
    }
  }),
);

/** What `steward launch`, a script or `temporal workflow start` gives the `evalSet` workflow. */
export const evalSetStartSchema = z.lazy(() =>
  z.strictObject({
    definition: z.string().min(1).max(4_096),
    definition_hash: sha256.optional(),
    log_dir: z.string().min(1).max(4_096).optional(),
    settings: knobsSchema.optional(),
  }),
);

export const evalTaskStartSchema = z.lazy(() =>
  z.looseObject({
    evalSet: name,
    task: name,
    definition: z.string().min(1),
    logDir: z.string().min(1),
    parentId: z.string().min(1),
    setpoint: count,
    limits: sampleLimits.optional(),
    carry: evalTaskCarrySchema.optional(),
  }),
);

export const sampleStartSchema = z.lazy(() =>
  z.looseObject({
    evalSet: name,
    task: name,
    definition: z.string().min(1),
    logDir: z.string().min(1),
    index: count,
    parentId: z.string().min(1),
    chain: z.string().min(1),
    limits: sampleLimits.optional(),
    inline: z.boolean().optional(),
    // One per failed attempt run again: `retry_on_error` (at most 100) and one stuck retry.
    retries: z
      .array(
        z.looseObject({
          error: z.string().max(10_000),
          error_type: z.string().max(200).optional(),
          failed_at: z.string(),
        }),
      )
      .max(101)
      .optional(),
  }),
);

/** Samples that share a workflow: as many as an admission puts together (see `startSamples`). */
export const sampleGroupSchema = z.lazy(() =>
  z.strictObject({ group: z.array(sampleStartSchema).min(1).max(1_000) }),
);

// The metrics a task names vary (src/eval/metrics.ts): the workflow reads none of them, so only
// the count it always has is checked.
const metricsSchema = z.lazy(() => z.looseObject({ samples_scored: count }));

const taskResultSchema = z.lazy(() =>
  z.looseObject({
    name,
    samples: count,
    completed: count,
    errored: count,
    resumed: count,
    metrics: metricsSchema.nullable(),
  }),
);

/** A task's word that it is ending. */
export const taskDoneSchema = z.lazy(() => z.strictObject({ task: name }));

// ---- what a run hands the next across continue-as-new --------------------------------------
// Only Steward writes a carry, but it arrives as a start input like any other, so it is checked
// as far as the workflow reads it: a forged one is refused rather than trusted.

const epochMs = z.number().finite();

const taskPlanSchema = z.lazy(() =>
  z.looseObject({
    name,
    // Plans made before worker slots name each task's queue.
    taskQueue: z.string().min(1).optional(),
    samples: count,
    model: z.string(),
    sandboxed: z.boolean(),
  }),
);

const taskStatusSchema = z.lazy(() =>
  z.looseObject({
    name,
    state: z.enum(['waiting', 'running', 'done']),
    taskQueue: z.string(),
    samples: count,
    completed: count,
    errored: count,
    in_flight: count,
    waiting: count,
    setpoint: count,
    resumed: count,
    saturations: count,
    runs: count,
    network_errors: count,
    limited: count.optional(),
    stuck: count.optional(),
    retries: count.optional(),
    connection_limit: count.nullable(),
    rate_limit_episodes: count,
    ramp_state: z.string(),
  }),
);

const wallSchema = z.lazy(() => z.looseObject({ level: count, probeAt: epochMs, waitMs: count }));

const windowSchema = z.lazy(() =>
  z.looseObject({
    rateLimitEpisodes: count,
    cuts: count,
    retries: count,
    lowestLimit: count.nullable(),
    queuedShare: z.number().min(0).max(1),
    pushbackLevel: count.nullable(),
  }),
);

const tendedTaskSchema = z.lazy(() =>
  z.looseObject({
    plan: taskPlanSchema,
    status: taskStatusSchema,
    ramp: z.looseObject({
      setpoint: count,
      connectionCeiling: count,
      connectionClamp: count.nullable(),
      pushbackWindows: count,
      wall: wallSchema.nullable().optional(),
    }),
    seen: z.looseObject({ saturations: count, errored: count, networkErrors: count }),
    workers: windowSchema,
  }),
);

const samplesModeSchema = z.lazy(() =>
  z.discriminatedUnion('type', [
    z.looseObject({ type: z.literal('pinned'), value: positive }),
    z.looseObject({
      type: z.literal('ramp'),
      lo: positive,
      hi: positive,
      step: positive,
      start: positive,
    }),
    z.looseObject({ type: z.literal('fixed'), value: positive }),
  ]),
);

const connectionsModeSchema = z.lazy(() =>
  z.discriminatedUnion('type', [
    z.looseObject({ type: z.literal('fixed'), n: positive }),
    z.looseObject({ type: z.literal('adaptive'), min: positive, start: positive, max: positive }),
  ]),
);

const holdSchema = z.lazy(() => z.looseObject({ reason: z.string(), since: epochMs, by: by }));

const historyEntrySchema = z.lazy(() =>
  z.looseObject({
    time: z.string(),
    task: z.string(),
    kind: z.string(),
    reason: z.string(),
  }),
);

const tendedAccountSchema = z.lazy(() =>
  z.looseObject({
    name: z.string().min(1),
    tasks: z.array(name),
    state: z.looseObject({
      ceiling: count,
      clamp: count.nullable(),
      pushbackWindows: count,
      wall: wallSchema.nullable().optional(),
    }),
    window: windowSchema,
    lastRateLimitEpisodes: count,
    lastLimit: count.nullable(),
    hosts: z.record(z.string(), z.looseObject({})),
    shares: z.record(z.string(), count).optional(),
    reportedBy: z.array(z.string()),
    tended: z.boolean().optional(),
    silent: z.array(z.string()).optional(),
  }),
);

const tenderStateSchema = z.lazy(() =>
  z.looseObject({
    settings: z.looseObject({
      samples: samplesModeSchema,
      connections: connectionsModeSchema,
      maxSandboxes: positive.nullable(),
    }),
    tasks: z.array(tendedTaskSchema),
    accounts: z.array(tendedAccountSchema).optional(),
    accountCeilingsSum: z.boolean().optional(),
    hosts: z
      .record(
        z.string(),
        z.looseObject({
          last: hostReportSchema,
          at: epochMs,
          windowLowestBytes: bytes.nullable(),
          silent: z.boolean(),
        }),
      )
      .optional(),
    holds: z.looseObject({
      global: holdSchema.nullable(),
      tasks: z.record(z.string(), holdSchema),
    }),
    pause: holdSchema.nullable().optional(),
    pausedWindow: z.boolean().optional(),
    history: z.array(historyEntrySchema),
    unsaved: z.array(historyEntrySchema).optional(),
  }),
);

const planSchema = z.lazy(() =>
  z.looseObject({
    name,
    definition: z.string().min(1),
    logDir: z.string().min(1),
    settings: z.looseObject({
      maxTasks: positive.nullable(),
      samples: samplesModeSchema,
      maxSandboxes: positive.nullable(),
      connections: connectionsModeSchema,
      maxWorkers: positive.nullable(),
      tendIntervalMs: positive,
      // Absent in plans made before sample limits existed.
      limits: sampleLimits.optional(),
      notify: notifySchema.optional(),
    }),
    tasks: z.array(taskPlanSchema).min(1),
    slots: positive.optional(),
  }),
);

export const evalSetCarrySchema = z.lazy(() =>
  z.looseObject({
    plan: planSchema,
    tender: tenderStateSchema,
    started: z.array(name),
    results: z.array(taskResultSchema),
    observedAt: epochMs.optional(),
    runs: positive,
    stalls: z
      .record(
        z.string(),
        z.looseObject({ done: count, quiet: count, since: epochMs, stalled: z.boolean() }),
      )
      .optional(),
    deliveries: z
      .array(
        z.looseObject({
          target: z.looseObject({ url: z.string(), format: z.enum(['json', 'slack']) }),
          event: z.looseObject({ kind: z.string(), eval_set: z.string(), time: z.string() }),
        }),
      )
      .optional(),
  }),
);

/**
 * What a task's run hands the next (`EvalTaskCarry`): its counts, and the samples not yet
 * admitted, in flight, and sharing a workflow, each a sample of the task; a group's members past
 * its first are in flight.
 */
export const evalTaskCarrySchema = z.lazy(() =>
  z
    .looseObject({
      total: count,
      pending: z.array(z.tuple([count, count])),
      inFlight: z.array(count),
      groups: z.array(z.array(count).min(1)).optional(),
      completed: count,
      errored: count,
      resumed: count,
      saturations: count,
      networkErrors: count,
      limited: count.optional(),
      stuck: count.optional(),
      retries: count.optional(),
      runs: positive,
    })
    .superRefine((carry, ctx) => {
      const outside = (index: number) => index >= carry.total;
      carry.pending.forEach(([start, end], i) => {
        if (start > end || end > carry.total) {
          ctx.addIssue({
            code: 'custom',
            path: ['pending', i],
            message: `expected a range of samples within [0, ${carry.total})`,
            input: [start, end],
          });
        }
      });
      const inFlight = new Set(carry.inFlight);
      const check = (path: (string | number)[], index: number, inGroup: boolean) => {
        if (outside(index) || (inGroup && !inFlight.has(index))) {
          ctx.addIssue({
            code: 'custom',
            path,
            message: inGroup
              ? 'expected a sample in flight'
              : `expected a sample below ${carry.total}`,
            input: index,
          });
        }
      };
      carry.inFlight.forEach((index, i) => check(['inFlight', i], index, false));
      // A group's first names its workflow, which runs until every member has: it may be done.
      carry.groups?.forEach((group, g) =>
        group.forEach((index, i) => check(['groups', g, i], index, i > 0)),
      );
    }),
);

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

/**
 * Parses `raw` against `schema`. On failure the message names what was refused and each problem
 * as `path: message (value)`, e.g. `setSamplesRamp: range: expected [lo, hi] ... ("bogus")`.
 */
export function parse<T>(schema: z.ZodType<T>, raw: unknown, what: string): Parsed<T> {
  const result = schema.safeParse(raw, { reportInput: true });
  if (result.success) return { ok: true, value: result.data };
  const problems = result.error.issues.map((issue) => {
    const path = issue.path.map(String).join('.');
    const unknownKeys = issue.code === 'unrecognized_keys' ? issue.keys : undefined;
    if (unknownKeys) {
      const keys = unknownKeys.map((key) => `"${key}"`).join(', ');
      return formatIssue({ path: path || undefined, message: `unknown key ${keys}` });
    }
    // zod's own prefix says nothing the message does not.
    const message = issue.message.replace(/^Invalid input: /, '');
    return formatIssue({ path: path || undefined, message, value: issue.input });
  });
  return { ok: false, message: `${what}: ${problems.join('; ')}` };
}

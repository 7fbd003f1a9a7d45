/**
 * One sample epoch, start to score: the solver chain, then the scorer. No I/O of its own; the
 * caller (a sample activity) supplies the model, heartbeat and cancellation in `ctx`.
 */

import type {
  GenerateConfig,
  Model,
  Sample,
  SampleContext,
  Score,
  TaskDefinition,
  TaskState,
} from '../definition/types';
import type { SampleLimits } from '../config/knobs';
import { SampleLimiter, limitHitOf, type SampleLimitHit } from './limits';
import { prepareSandbox } from './sample-sandbox';
import { initialState } from './solvers';

/** How a sample ended: its final state and score, and the limit that stopped it, if one did. */
export interface SampleRun {
  state: TaskState;
  score: Score;
  limit?: SampleLimitHit;
}

/** The part of a sample's own code that threw: its solver chain or its scorer. */
export type SampleStage = 'solver' | 'scorer';

const STAGE = Symbol.for('steward.sampleStage');

/**
 * Where a sample's error came from, when {@link runSample} saw it leave a solver or the scorer
 * (the error record's `failed_in`). The error itself is left as it was thrown.
 */
export function stageOf(err: unknown): SampleStage | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const stage = (err as { [STAGE]?: unknown })[STAGE];
  return stage === 'solver' || stage === 'scorer' ? stage : undefined;
}

function markStage(err: unknown, stage: SampleStage): unknown {
  // The first stage an error left wins: a scorer rethrowing a solver's error stays the solver's.
  if (typeof err === 'object' && err !== null && Object.isExtensible(err) && !(STAGE in err)) {
    Object.defineProperty(err, STAGE, { value: stage });
  }
  return err;
}

/**
 * Puts the sample's files and setup in its sandbox (when it has one), runs `task`'s solvers in
 * order on `sample` (stopping early once a solver marks the state completed), then its scorer
 * against the sample's targets. `limits` (see `limits.ts`) bound the solvers; a sample that
 * reaches one is scored on the state it had, as in Inspect. Errors propagate: classifying and
 * retrying them is the caller's business.
 */
export async function runSample(
  task: TaskDefinition,
  sample: Sample,
  epoch: number,
  ctx: SampleContext,
  limits: SampleLimits = task.limits ?? {},
  now: () => number = Date.now,
): Promise<SampleRun> {
  const scoped = scopeModel(ctx.model, sample, task.config);
  // The dataset's files and setup come before any solver, as in Inspect.
  if (ctx.sandbox && (sample.files !== undefined || sample.setup !== undefined)) {
    await prepareSandbox(sample, ctx.sandbox, { heartbeat: ctx.heartbeat });
  }
  let state = initialState(sample, epoch);
  const limiter = new SampleLimiter(limits, { now, signal: ctx.signal });
  const solverCtx: SampleContext = {
    ...ctx,
    model: limitedModel(scoped, limiter),
    signal: limiter.signal,
    progress: (next) => {
      limiter.checkMessages(next.messages.length);
      state = next;
    },
  };
  let limit: SampleLimitHit | undefined;
  try {
    for (const solve of task.solver) {
      if (state.completed) break;
      // Cancellation stops the chain between steps; a step itself watches the signal, and one
      // that does not is left behind when a limit or a cancellation fires.
      limiter.signal.throwIfAborted();
      state = await untilAborted(solve(state, solverCtx), limiter.signal);
      ctx.heartbeat();
    }
  } catch (err) {
    limit = limitHitOf(err) ?? limitHitOf(limiter.signal.reason);
    // A cancellation of the sample itself is not a limit, even if a limit fired meanwhile.
    if (limit === undefined || ctx.signal.aborted) throw markStage(err, 'solver');
    state = { ...state, usage: limiter.usage, completed: true };
  } finally {
    limiter.dispose();
  }
  ctx.signal.throwIfAborted();
  const targets = Array.isArray(sample.target) ? sample.target : [sample.target];
  // Scoring after a time limit gets half that limit again (Inspect's rule), so a scorer stuck on
  // whatever hung the solver cannot hold the sample for ever.
  const scoringSignal =
    limits.time_limit === undefined
      ? ctx.signal
      : AbortSignal.any([ctx.signal, AbortSignal.timeout((limits.time_limit * 1000) / 2)]);
  const score = await untilAborted(
    task.scorer(state, targets, { ...ctx, model: scoped, signal: scoringSignal }),
    scoringSignal,
  ).catch((err: unknown) => {
    throw markStage(err, 'scorer');
  });
  return { state, score, ...(limit ? { limit } : {}) };
}

/**
 * `work`, or the signal's reason as soon as it aborts: code that ignores the signal (a custom
 * solver's) is left to finish on its own, and its late failure is not reported.
 */
async function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason as Error);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  work.catch(() => undefined);
  aborted.catch(() => undefined);
  try {
    return await Promise.race([work, aborted]);
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}

/**
 * The model under the sample's limits: no call past `message_limit` or `token_limit`, every
 * call's usage counted, and its waits for the provider kept out of the working time.
 */
function limitedModel(model: Model, limiter: SampleLimiter): Model {
  return {
    name: model.name,
    generate: async (messages, options = {}) => {
      limiter.beforeCall(messages.length);
      const signal = options.signal
        ? AbortSignal.any([options.signal, limiter.signal])
        : limiter.signal;
      const output = await model.generate(messages, { ...options, signal, waiting: limiter });
      limiter.afterCall(output.usage);
      return output;
    },
  };
}

/**
 * The model as this sample sees it: the task's generate config under each call's own, and each
 * call numbered within the sample so scripted providers (mockllm) replay the same way on a
 * retry. The numbering lives here, outside any retrying layer, so a retried request keeps its
 * number, and custom solvers get it without doing anything.
 */
function scopeModel(model: Model, sample: Sample, taskConfig: GenerateConfig): Model {
  let calls = 0;
  return {
    name: model.name,
    generate: (messages, options = {}) =>
      model.generate(messages, {
        ...options,
        config: { ...taskConfig, ...definedFields(options.config ?? {}) },
        sample: options.sample ?? { sample, call: calls++ },
      }),
  };
}

/** A field set to `undefined` means "not set here", not "unset the task's value". */
function definedFields(config: GenerateConfig): GenerateConfig {
  return Object.fromEntries(Object.entries(config).filter(([, value]) => value !== undefined));
}

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
import { prepareSandbox } from './sample-sandbox';
import { initialState } from './solvers';

/**
 * Puts the sample's files and setup in its sandbox (when it has one), runs `task`'s solvers in
 * order on `sample` (stopping early once a solver marks the state completed), then its scorer
 * against the sample's targets. Errors propagate: classifying and retrying them is the caller's
 * business.
 */
export async function runSample(
  task: TaskDefinition,
  sample: Sample,
  epoch: number,
  ctx: SampleContext,
): Promise<{ state: TaskState; score: Score }> {
  const sampleCtx: SampleContext = { ...ctx, model: scopeModel(ctx.model, sample, task.config) };
  // The dataset's files and setup come before any solver, as in Inspect.
  if (ctx.sandbox && (sample.files !== undefined || sample.setup !== undefined)) {
    await prepareSandbox(sample, ctx.sandbox, { heartbeat: ctx.heartbeat });
  }
  let state = initialState(sample, epoch);
  for (const solve of task.solver) {
    if (state.completed) break;
    // Cancellation stops the chain between steps; a step itself watches ctx.signal.
    ctx.signal.throwIfAborted();
    state = await solve(state, sampleCtx);
    ctx.heartbeat();
  }
  ctx.signal.throwIfAborted();
  const targets = Array.isArray(sample.target) ? sample.target : [sample.target];
  const score = await task.scorer(state, targets, sampleCtx);
  return { state, score };
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

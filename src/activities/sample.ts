/**
 * The sample activity: load the sample, (sandbox up), solve, score, (sandbox down), record.
 * Heartbeats every second so a dead worker shows, each beat carrying the sample's progress; a
 * sample without progress for `stuck_after` is aborted as stuck (`eval/stuck.ts`).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type Dockerode from 'dockerode';
import type { SampleContext } from '../definition/types';
import { runSample as solveAndScore, stageOf } from '../eval/run-sample';
import { sampleAt } from '../definition/samples';
import { ErrorType } from '../errors';
import { effectiveLimits } from '../eval/limits';
import { runsAgain, type AttemptError } from '../eval/retries';
import { DEFAULT_STUCK_AFTER_S, ProgressWatch, watchedModel, watchedSandbox } from '../eval/stuck';
import type { SampleRecord } from '../logs/store';
import { reapSandboxes } from '../sandbox/cleanup';
import { withSandbox } from '../sandbox/docker';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../sandbox/image';
import type { SandboxOwner, SandboxSpec } from '../sandbox/types';
import { evalSetIdOfTask, type SampleDone, type SampleInput } from '../workflows/types';
import { findTask, type ActivityDeps } from './deps';
import { failOnDefinition, toFailure } from './errors';

/** How often a running sample tells Temporal it is alive (the heartbeat timeout is 10 s). */
const HEARTBEAT_MS = 1_000;

export function createSampleActivities(deps: ActivityDeps) {
  let busybox: Promise<unknown> | undefined;
  // Successes reach the task from here rather than from the sample workflow: that saves the
  // sample a workflow task and a signal command, the per-sample cost the server pays.
  const report = (parentId: string, done: SampleDone): Promise<void> => {
    if (!deps.reports) throw new Error('runSample needs a Temporal client to report to its task');
    return deps.reports.report(parentId, done);
  };

  return {
    async runSample(input: SampleInput): Promise<void> {
      const ctx = Context.current();
      const definition = await deps
        .definition({ logDir: input.logDir, hash: input.definitionHash, path: input.definition })
        .catch((err: unknown) => {
          throw failOnDefinition(err);
        });
      const task = findTask(definition, input.task);
      const { sample, epoch } = sampleAt(task, input.index);
      const store = deps.logStore(input.logDir);
      // The eval set's limits, carried from its launch, replace the task's own.
      const limits = effectiveLimits(task.limits, input.limits);
      const retries = input.retries ?? [];
      // An inline run (a local activity) counts its attempts afresh on the worker that took it
      // over from a lost one; the workflow says when that happened (and only for a local run).
      const attempt = ctx.info.attempt + (ctx.info.isLocal && input.lostRun ? 1 : 0);
      // Progress, not liveness, decides whether the sample is stuck; the beats carry it.
      const watch = new ProgressWatch(
        (limits.stuck_after ?? DEFAULT_STUCK_AFTER_S) * 1000,
        deps.now,
      );

      // Beats until the task has the report too: a signal to a busy server can take longer than
      // the heartbeat timeout, and timing out then would run the sample again for nothing. An
      // inline run does not beat: a local activity's heartbeat reaches no one (the SDK's core
      // refuses it, with a warning in the worker log each time), and its workflow task, which
      // the SDK keeps alive while it runs, is what tells Temporal its worker lives.
      const heartbeat = ctx.info.isLocal
        ? undefined
        : setInterval(() => ctx.heartbeat(watch.note()), HEARTBEAT_MS);
      try {
        // An earlier attempt may have recorded the result and died before reporting it.
        const record =
          (await store.readSample(task.name, sample.id, epoch)) ?? (await solveAndRecord());
        await report(input.parentId, {
          index: input.index,
          ok: true,
          ...(record.limit ? { limit: record.limit.type } : {}),
        });
      } finally {
        clearInterval(heartbeat);
        watch.dispose();
      }

      async function solveAndRecord(): Promise<SampleRecord> {
        const startedAt = new Date(deps.now()).toISOString();
        const signal = AbortSignal.any([ctx.cancellationSignal, watch.signal]);
        const earlier = retries.length > 0 ? { error_retries: retries } : {};
        try {
          const sampleCtx: SampleContext = {
            model: watchedModel(
              deps.model(task.model, task.modelArgs, {
                evalSetId: evalSetIdOfTask(input.parentId),
                tasks: [task.name],
              }),
              watch,
            ),
            heartbeat: () => watch.progress(),
            signal,
          };
          const owner = { evalSet: definition.name, task: task.name, sampleId: sample.id, epoch };
          const { state, score, limit } = task.sandbox
            ? await inSandbox(task.sandbox, owner, signal, (sandbox, sandboxSignal) =>
                solveAndScore(
                  task,
                  sample,
                  epoch,
                  { ...sampleCtx, sandbox: watchedSandbox(sandbox, watch), signal: sandboxSignal },
                  limits,
                ),
              )
            : await solveAndScore(task, sample, epoch, sampleCtx, limits);
          const record: SampleRecord = {
            version: 1,
            eval_set: definition.name,
            task: task.name,
            sample_id: sample.id,
            epoch,
            input: sample.input,
            target: sample.target,
            ...(sample.metadata !== undefined ? { metadata: sample.metadata } : {}),
            messages: state.messages,
            output: state.output?.completion ?? '',
            ...(state.choices !== undefined ? { choices: state.choices } : {}),
            score,
            scorer: task.scorerName,
            usage: state.usage,
            model: task.model,
            started_at: startedAt,
            completed_at: new Date(deps.now()).toISOString(),
            worker: deps.worker,
            attempt,
            ...earlier,
            ...(limit ? { limit } : {}),
          };
          await store.writeSample(record);
          return record;
        } catch (err) {
          // Cancelled (its sandbox is already removed): not a failure of the sample, which a
          // relaunch runs again. Thrown as the cancellation, so Temporal records it as one.
          if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;
          const failure = finalOnLastCapacityAttempt(
            toFailure(err, ErrorType.sample),
            ctx.info.attempt,
          );
          const failedAt = new Date(deps.now()).toISOString();
          await store
            .writeSampleError({
              version: 1,
              eval_set: definition.name,
              task: task.name,
              sample_id: sample.id,
              epoch,
              input: sample.input,
              target: sample.target,
              ...(sample.metadata !== undefined ? { metadata: sample.metadata } : {}),
              error: failure.message,
              error_type: failure.type ?? undefined,
              ...(stageOf(err) ? { failed_in: stageOf(err) } : {}),
              failed_at: failedAt,
              worker: deps.worker,
              attempt,
              ...earlier,
            })
            .catch(() => undefined);
          // Temporal retries what may heal in place (a crash, a capacity refusal); a failure of
          // the sample itself may run again as a new attempt, which its workflow starts.
          if (!failure.nonRetryable) throw failure;
          const failed: AttemptError = {
            error: failure.message.slice(0, 500),
            ...(failure.type ? { error_type: failure.type } : {}),
            failed_at: failedAt,
          };
          if (!runsAgain(failure.type ?? undefined, retries, limits.retry_on_error ?? 0)) {
            throw failure;
          }
          throw ApplicationFailure.create({
            message: failure.message,
            type: failure.type ?? undefined,
            nonRetryable: true,
            cause: failure.cause,
            details: [{ runsAgain: failed }],
          });
        }
      }
    },
  };

  /**
   * Runs `fn` in a fresh sandbox that is removed however `fn` ends (returns, throws, or the
   * activity is cancelled). What an earlier attempt of the same sample and epoch left behind (its
   * worker was killed mid-sample) is removed first, so a crash costs no address pool for long.
   */
  async function inSandbox<T>(
    spec: SandboxSpec,
    owner: SandboxOwner,
    signal: AbortSignal,
    fn: Parameters<typeof withSandbox<T>>[1],
  ): Promise<T> {
    const docker = deps.docker;
    if (!docker) throw new Error(`task ${owner.task} has a sandbox but this worker has no Docker`);
    await reapSandboxes(docker, owner);
    if (spec.services.some((service) => service.image === BUSYBOX_IMAGE)) {
      await ensureBusybox(docker);
    }
    return withSandbox({ docker, spec, ...owner, signal }, fn);
  }

  /**
   * Builds Steward's own busybox image once per process when a sandbox uses it: it is made
   * locally (no registry has it), and the examples and tests rely on it.
   */
  function ensureBusybox(docker: Dockerode): Promise<unknown> {
    busybox ??= ensureBusyboxImage(docker).catch((error: unknown) => {
      busybox = undefined;
      throw error;
    });
    return busybox;
  }
}

export type SampleActivities = ReturnType<typeof createSampleActivities>;

/** Attempts a capacity refusal (Docker out of networks) gets before it fails the sample. */
const CAPACITY_ATTEMPTS = 5;

/**
 * A capacity refusal is retryable: it may clear as other samples end and free their networks.
 * But the sample's retry budget (about 15 minutes) is for crashes and server restarts; a host
 * that stays out of networks should fail the sample within seconds, pointing at the fix.
 */
function finalOnLastCapacityAttempt(
  failure: ApplicationFailure,
  attempt: number,
): ApplicationFailure {
  if (failure.nonRetryable || attempt < CAPACITY_ATTEMPTS) return failure;
  return ApplicationFailure.create({
    message: failure.message,
    type: failure.type ?? undefined,
    nonRetryable: true,
    cause: failure.cause,
  });
}

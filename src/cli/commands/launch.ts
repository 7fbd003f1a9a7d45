/**
 * `steward launch <definition>`: validate, ensure Temporal, start or re-attach to the eval set,
 * run the worker fleet, show progress, and report.
 */
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import {
  CancelledFailure,
  TerminatedFailure,
  WorkflowFailedError,
  WorkflowIdReusePolicy,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import { loadStewardYaml } from '../../config/load';
import { settingsFromFlags, type KnobFlags } from '../../config/knobs';
import { chooseSettings, withDefaults, type ResolvedSettings } from '../../config/settings';
import { identityRefusals } from '../../definition/identity';
import { loadDefinitionFiles, loadSnapshot, writeSnapshot } from '../../loader/snapshot';
import { indicesWithKeys, sampleCount } from '../../definition/samples';
import type { EvalSetDefinition } from '../../definition/types';
import { ConfigError, ErrorType, ExitCode, StewardError, formatIssue } from '../../errors';
import { rescoreEndedTasks } from '../../logs/rescore';
import { checkLogDir, openLogStore, sampleKey } from '../../logs/store';
import { checkModelEnvironment } from '../../models';
import { connectClient, resolveTemporal, type TemporalTarget } from '../../temporal/connection';
import { evalSetTagging } from '../../temporal/search-attributes';
import { stewardHome } from '../../util/home';
import { watchLineage } from '../../util/lineage';
import { PACKAGE_ROOT } from '../../workers/bundle';
import type { WorkerSlot } from '../../workers/fleet';
import { expectedSlots, runSupervisor } from '../../workers/supervisor';
import { detachedLogFile, runningDetachedFleet } from '../../workers/detached';
import Dockerode from 'dockerode';
import { reapSandboxes } from '../../sandbox/cleanup';
import { resultAcrossOutages } from '../../client/result';
import { endLeftovers } from '../../client/leftovers';
import { innermostCause } from '../../client/status';
import { watchStewardYaml } from '../../client/steward-yaml-watch';
import {
  STEWARD_TASK_QUEUE,
  evalSetWorkflowId,
  type EvalSetInput,
  type EvalSetResult,
} from '../../workflows/types';
import type { evalSet } from '../../workflows';
import { confirm } from '../confirm';
import { createProgress, followProgress } from '../progress';
import { stuckMessage, watchStuck, type StuckWorkflow } from '../../client/stuck-watch';
import { createNotifyActivities } from '../../activities/notify';
import type { NotifyTarget } from '../../config/notify';
import type { NotifyEvent } from '../../workflows/notify';
import { checkDocker, sandboxDemand } from './docker';
import { thisHostCapacity } from '../../activities/deps';
import { memoryWarning, slotCount, type HostCapacity } from '../../core/slots';
import { peakSandboxDemand } from '../../sandbox/budget';
import { resultJson, resultTable } from '../table';
import { SMOKE_DEFAULTS, runSmoke, type SmokeReport } from './smoke';
import { smokeReportLines } from '../../core/smoke';

/** The knobs' flags (parsed by the command line), then the launch's own. */
export interface LaunchOptions extends KnobFlags {
  logDir?: string;
  json?: boolean;
  detach?: boolean;
  /** Write Docker's daemon.json fix without asking, when the preflight finds too few networks. */
  yes?: boolean;
  /** Run a smoke run first, and launch only if every task passes it. */
  smoke?: boolean;
  /** Run the smoke run only. */
  smokeOnly?: boolean;
  smokeSamples?: number;
  smokeTimeout?: number;
  /** Seconds a workflow of the eval set may stay stuck before the launch exits; 'off': never. */
  stuckTimeout?: number | 'off';
}

const PROGRESS_MS = 1_000;
/** How often the launch looks for workflows of its eval set that cannot make progress. */
const STUCK_CHECK_MS = 5_000;
const DEFAULT_STUCK_TIMEOUT_S = 600;
/** How long a stopped launch has to stop its fleet before it exits anyway. */
const STOP_DEADLINE_MS = 15_000;

export async function launchCommand(file: string, opts: LaunchOptions): Promise<number> {
  const say = (line: string): void => void process.stderr.write(`${line}\n`);
  const { definition, used } = await loadDefinitionFiles(path.resolve(file));
  // Resolved here, once: the workflow carries what this process chose, so planning never reads
  // the environment or `_steward.yaml` of whichever process happens to run it.
  const chosen = chooseSettings({
    flags: settingsFromFlags(opts),
    env: process.env,
    stewardYaml: await loadStewardYaml(process.cwd()),
    definition: definition.settings,
  });
  if (chosen.errors.length > 0) throw new ConfigError(chosen.errors);
  for (const warning of chosen.warnings) say(`warning: ${formatIssue(warning)}`);
  const settings = withDefaults(chosen.settings);
  checkModels(definition);
  const outgrows = fleetMemoryWarning(definition, settings);
  if (outgrows) say(`warning: ${outgrows}`);
  const docker = definition.tasks.some((t) => t.sandbox !== undefined)
    ? new Dockerode()
    : undefined;
  if (docker) {
    // Preflight: can the daemon give every sandbox the run may want at once its own network?
    const demand = await sandboxDemand(docker, settings, definition);
    say(demand.explanation);
    await checkDocker({ docker, demand: demand.value, yes: opts.yes ?? false, print: say });
  }
  const logDir = path.resolve(
    opts.logDir ?? definition.log_dir ?? path.join('logs', definition.name),
  );
  // Before Temporal, so a log dir that cannot be written fails in a second, with its reason.
  await checkLogDir(logDir);

  const temporal = await resolveTemporal(process.env, { onProgress: say });
  const client = await connectClient(temporal);
  const workflowId = evalSetWorkflowId(definition.name);

  let handle: WorkflowHandle<typeof evalSet>;
  const reattached = await isRunning(client, workflowId);
  if (!reattached) {
    // A task whose records in the log dir are another task's is refused before anything starts.
    const refusals = await identityRefusals(openLogStore(logDir), definition);
    if (refusals.length > 0) throw new StewardError(refusals.join('\n'), ExitCode.usage);
  }
  if (opts.smokeOnly || (opts.smoke && !reattached)) {
    const smoke = await runSmoke({
      client,
      temporal,
      definition,
      used,
      settings: chosen.settings,
      logDir,
      samples: opts.smokeSamples ?? SMOKE_DEFAULTS.samples,
      timeoutS: opts.smokeTimeout ?? SMOKE_DEFAULTS.timeoutS,
      docker,
      say,
    });
    const code = smokeOutcome(smoke, definition.name, opts, say);
    if (code !== ExitCode.ok || opts.smokeOnly) return code;
  } else if (opts.smoke) {
    say(`eval set ${definition.name} is already running: no smoke run before re-attaching`);
  }
  if (reattached) {
    say(`eval set ${definition.name} is already running: re-attaching`);
    handle = client.workflow.getHandle(workflowId);
  } else {
    // The eval set runs this snapshot, by its hash: later edits of the files change nothing.
    const hash = await writeSnapshot(used, logDir);
    const pinned = await loadSnapshot({ logDir, hash, origin: definition.source });
    const input: EvalSetInput = {
      definition: definition.source,
      definition_hash: hash,
      log_dir: logDir,
      settings: chosen.settings,
    };
    const { done, total } = await countCompleted(pinned, logDir);
    if (total > 0 && done === total) {
      say(
        `nothing to do: all ${total} samples of eval set ${definition.name} are already completed (${logDir})`,
      );
      const rescored = await rescoreEndedTasks(openLogStore(logDir), pinned.tasks);
      if (rescored.length > 0) {
        say(
          `scored again under the reducers and metrics the definition names: ${rescored.join(', ')}`,
        );
      }
      const summary = await openLogStore(logDir).readEvalSetSummary();
      if (summary) report(summary, opts.json);
      return ExitCode.ok;
    }
    // Sandboxes a crashed earlier run of this eval set left behind.
    if (docker) await reapSandboxes(docker, { evalSet: definition.name });
    if (done > 0)
      say(
        `resuming eval set ${definition.name}: ${done} of ${total} samples already completed will not be re-run`,
      );
    const { typedSearchAttributes, warning } = await evalSetTagging(
      client,
      temporal,
      definition.name,
    );
    if (warning) say(warning);
    handle = await client.workflow.start<typeof evalSet>('evalSet', {
      workflowId,
      taskQueue: STEWARD_TASK_QUEUE,
      args: [input],
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
      ...(typedSearchAttributes ? { typedSearchAttributes } : {}),
    });
    say(`started eval set ${definition.name} (workflow ${workflowId}), results in ${logDir}`);
  }

  if (opts.detach) {
    detachWorkers(definition.name);
    say(`running in the background: follow with \`steward status ${definition.name}\``);
    return ExitCode.ok;
  }
  // An edit of `_steward.yaml` steers the live run, unless a flag or variable wins over it.
  const rampOrigin = chosen.origins.samples_ramp;
  const rampFromFile = rampOrigin !== 'flag' && rampOrigin !== 'env';
  return watch(client, handle, temporal, {
    ...opts,
    rampFromFile,
    evalSet: definition.name,
    reattached,
    notify: settings.notify ?? [],
    // A run just started: its first workers start with the supervisor, not once it answers.
    ...(reattached
      ? {}
      : { expected: expectedSlots(workflowId, definition.name, definition.tasks, settings) }),
  });
}

/**
 * Tells the eval set's webhooks that one of its workflows is stuck: the workflow cannot tell them
 * itself (a stuck eval set runs no activity), so its launch does, once per webhook.
 */
async function tellStuck(
  evalSet: string,
  stuck: StuckWorkflow,
  targets: readonly NotifyTarget[],
  log: (line: string) => void,
): Promise<void> {
  const { notify } = createNotifyActivities({ env: process.env });
  const event: NotifyEvent = {
    kind: 'stuck',
    eval_set: evalSet,
    time: new Date().toISOString(),
    workflow_id: stuck.workflowId,
    attempt: stuck.attempt,
    error: stuck.error,
  };
  await Promise.all(
    targets.map((target) =>
      notify({ target, event }).catch((err: unknown) =>
        log(`steward: could not tell a webhook that the run is stuck: ${(err as Error).message}`),
      ),
    ),
  );
}

/** Says what the smoke run found; the exit code: ok only when every task passed. */
function smokeOutcome(
  smoke: SmokeReport,
  name: string,
  opts: LaunchOptions,
  say: (line: string) => void,
): number {
  if (smoke.interrupted) {
    say(`smoke run interrupted: eval set ${name} was not launched`);
    return 130;
  }
  const failed = smoke.verdicts.filter((v) => !v.passed).length;
  if (opts.json && (failed > 0 || opts.smokeOnly)) {
    process.stdout.write(
      `${JSON.stringify({ smoke: { eval_set: smoke.name, log_dir: smoke.logDir, tasks: smoke.verdicts } }, null, 2)}\n`,
    );
  }
  const lines = smokeReportLines(smoke.verdicts).join('\n');
  if (failed === 0) {
    say(
      `smoke run passed: every task completed its samples (${smoke.logDir})\n${lines}` +
        (opts.smokeOnly ? '' : `\nlaunching eval set ${name}`),
    );
    return ExitCode.ok;
  }
  say(
    `steward: smoke run failed: ${failed} of ${smoke.verdicts.length} task(s) would fail, so eval set ` +
      `${name} was not launched${opts.smokeOnly ? '' : ' (--smoke)'}; errors in ${smoke.logDir}/<task>/errors\n${lines}`,
  );
  return ExitCode.samplesFailed;
}

/** What stops a launch before its eval set ends: a signal, or the death of the process it ran under. */
type Interruption = 'SIGINT' | 'SIGTERM' | 'orphaned';

/** Why a launch stopped before its eval set ended, as it says so. */
const STOP_CAUSE: Record<Interruption | 'stopped', string> = {
  SIGINT: 'Ctrl-C',
  SIGTERM: 'SIGTERM',
  orphaned: 'the process it was started under is gone',
  stopped: 'its workers stopped',
};

async function watch(
  client: Client,
  handle: WorkflowHandle<typeof evalSet>,
  temporal: TemporalTarget,
  opts: LaunchOptions & {
    rampFromFile: boolean;
    evalSet: string;
    reattached: boolean;
    expected?: WorkerSlot[];
    notify: readonly NotifyTarget[];
  },
): Promise<number> {
  const stop = new AbortController();
  // An interruption settles the promise `interruption()` made last; a second one, the next.
  let interrupt: (why: Interruption) => void = () => undefined;
  const interruption = (): Promise<Interruption> => new Promise((resolve) => (interrupt = resolve));
  const interrupted = interruption();
  const onSigint = (): void => interrupt('SIGINT');
  const onSigterm = (): void => interrupt('SIGTERM');
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigterm);
  // The process this launch was started under died (SIGKILL included): the fleet it runs
  // must not outlive it unseen.
  const unwatchLineage = watchLineage(() => interrupt('orphaned'));
  // Once the launch stops, a further Ctrl-C ends it at once.
  const unlisten = (): void => {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigterm);
    unwatchLineage();
  };
  const supervisor = runSupervisor({
    client,
    temporal,
    evalSetIds: [handle.workflowId],
    stewardDir: stewardHome(process.env),
    signal: stop.signal,
    ...(opts.expected ? { expected: opts.expected } : {}),
  });
  // Lines printed while progress shows go through it, so they do not break its drawing.
  const progress = createProgress();
  const unwatch = opts.rampFromFile
    ? watchStewardYaml(process.cwd(), handle, (line) => progress.log(line))
    : () => undefined;
  const stopFollowing = followProgress(client, handle.workflowId, progress, PROGRESS_MS);
  const stuckTimeout = opts.stuckTimeout ?? DEFAULT_STUCK_TIMEOUT_S;
  const stuckWatch = watchStuck(client, handle.workflowId, {
    everyMs: STUCK_CHECK_MS,
    boundMs: stuckTimeout === 'off' ? null : stuckTimeout * 1000,
    onStuck: (stuck) => {
      progress.log(`steward: ${stuckMessage(handle.workflowId, stuck)}`);
      void tellStuck(opts.evalSet, stuck, opts.notify, (line) => progress.log(line));
    },
  });
  const gaveUp = stuckWatch.gaveUp.then((stuck) => ({ stuck }));

  try {
    // The fleet rides out a Temporal restart (its workers reconnect), and so does this wait.
    const result = resultAcrossOutages(handle, {
      onLost: (err) =>
        progress.log(
          `lost Temporal at ${temporal.address} (${innermostCause(err).message}); waiting for it to come back`,
        ),
      onBack: () => progress.log(`Temporal at ${temporal.address} answers again`),
    });
    // Its control worker failed or stopped: what was running goes on once a launch serves it.
    let fleetFailure: Error | undefined;
    const fleetStopped = supervisor.then(
      () => 'stopped' as const,
      (err: Error) => {
        fleetFailure = err;
        return 'stopped' as const;
      },
    );
    let outcome = await Promise.race([result, interrupted, fleetStopped, gaveUp]);
    if (typeof outcome === 'object' && 'stuck' in outcome) {
      progress.stop();
      process.stderr.write(
        `\nsteward: the launch gives up: ${outcome.stuck.workflowId} has not made progress for ` +
          `${stuckTimeout} s. Its workers stop; the eval set stays in Temporal as it is ` +
          '(--stuck-timeout off waits for ever).\n',
      );
      return ExitCode.stuck;
    }
    let cancelling = false;
    // Ctrl-C at a terminal asks whether to cancel the eval set; the fleet runs on meanwhile, and
    // through a confirmed cancellation, whose samples remove their sandboxes on it.
    if (outcome === 'SIGINT' && process.stdin.isTTY) {
      progress.stop();
      const again = interruption();
      const asking = new AbortController();
      void again.then(() => asking.abort());
      cancelling = await confirm(
        `\nCancel eval set ${opts.evalSet}? Its samples stop and their sandboxes are removed; ` +
          'results so far are kept, and launching again runs the rest. [y/N] ',
        process.stdin,
        process.stderr,
        asking.signal,
      );
      if (cancelling) {
        const requested = handle.cancel().then(
          () =>
            process.stderr.write(
              `cancelling eval set ${opts.evalSet}: waiting for its samples to stop and remove ` +
                'their sandboxes (Ctrl-C again stops waiting; the cancellation stays requested)\n',
            ),
          (err: Error) => {
            cancelling = false;
            process.stderr.write(
              `could not cancel eval set ${opts.evalSet}: ${innermostCause(err).message}\n`,
            );
          },
        );
        outcome = await Promise.race([requested.then(() => result), again, fleetStopped]);
      }
    }
    if (typeof outcome === 'string') {
      unlisten();
      // Stopping the fleet waits for its workers; it must not keep a stopped launch alive.
      setTimeout(() => process.exit(130), STOP_DEADLINE_MS).unref();
      progress.stop();
      const home = stewardHome(process.env);
      const detachedPid = opts.reattached ? runningDetachedFleet(home, opts.evalSet) : undefined;
      const why = fleetFailure ? `: ${fleetFailure.message}` : '';
      process.stderr.write(`\nsteward: the launch stops (${STOP_CAUSE[outcome]}${why})`);
      process.stderr.write(
        `\n${stoppedMessage({
          evalSet: opts.evalSet,
          reattached: opts.reattached,
          cancelling,
          detached:
            detachedPid === undefined
              ? undefined
              : { pid: detachedPid, log: detachedLogFile(home, opts.evalSet) },
        })}\n`,
      );
      return 130;
    }
    stopFollowing();
    progress.update({
      eval_set: outcome.eval_set,
      state: 'done',
      tasks: outcome.tasks.map((t) => ({
        name: t.name,
        state: 'done',
        taskQueue: '',
        samples: t.samples,
        completed: t.completed,
        errored: t.errored,
        in_flight: 0,
        waiting: 0,
        setpoint: 0,
        resumed: t.resumed,
        saturations: 0,
        runs: 0,
        network_errors: 0,
        connection_limit: null,
        rate_limit_episodes: 0,
        ramp_state: 'finished',
      })),
      ramp_history: [],
      holds: { global: null, tasks: {} },
    });
    progress.stop();
    report(outcome, opts.json);
    if (outcome.status === 'success') return ExitCode.ok;
    const failed = outcome.tasks.reduce((n, t) => n + t.samples - t.completed, 0);
    process.stderr.write(
      `steward: ${failed} sample(s) did not complete; their errors are in ${outcome.log_dir}/<task>/errors. ` +
        'Launch again to re-run only those.\n',
    );
    process.stderr.write(await sampleErrors(outcome));
    return ExitCode.samplesFailed;
  } catch (err) {
    progress.stop();
    if (err instanceof StewardError) throw err;
    // Whatever of it still runs without its owner ends before this launch's fleet stops.
    if (err instanceof WorkflowFailedError) await endLeftovers(client, handle.workflowId);
    if (err instanceof WorkflowFailedError && err.cause instanceof TerminatedFailure) {
      throw new StewardError(
        `eval set ${opts.evalSet} was terminated: its tasks were cancelled, with their samples, ` +
          `and their logs say so. Launch again to run what did not complete.`,
        ExitCode.samplesFailed,
      );
    }
    if (err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure) {
      throw new StewardError(
        `eval set ${opts.evalSet} was cancelled: its tasks cancelled their samples, and their logs ` +
          `say so. Launch again to run what did not complete.`,
        ExitCode.samplesFailed,
      );
    }
    const cause = innermostCause(err);
    const code =
      cause.type === ErrorType.logWrite || cause.type === ErrorType.snapshot
        ? ExitCode.environment
        : ExitCode.usage;
    throw new StewardError(`eval set failed: ${cause.message}`, code);
  } finally {
    unlisten();
    unwatch();
    stopFollowing();
    stuckWatch.stop();
    stop.abort();
    await supervisor.catch(() => undefined);
  }
}

/**
 * What a stopped launch says is left running and how to stop it. Stopping a launch stops its own
 * fleet; the eval set's workflow lives on in Temporal, and a fleet `launch --detach` started
 * before this launch re-attached goes on running its samples. A cancellation the user confirmed
 * before stopping stays requested: whichever workers serve the eval set next carry it out.
 */
export function stoppedMessage(stopped: {
  evalSet: string;
  reattached: boolean;
  cancelling?: boolean;
  detached?: { pid: number; log: string };
}): string {
  const { evalSet, detached } = stopped;
  if (stopped.cancelling)
    return (
      `stopped this launch's workers; the cancellation of eval set ${evalSet} stays requested in Temporal, ` +
      'and the workers of the next `steward launch` (or any serving it) finish it: its samples stop and remove their sandboxes.'
    );
  if (detached)
    return [
      `stopped this launch's workers, but eval set ${evalSet} keeps running: the workers \`steward launch --detach\` started (pid ${detached.pid}, log ${detached.log}) go on running its samples.`,
      `Follow it with \`steward status ${evalSet}\`; stop those workers with \`kill ${detached.pid}\` (the eval set keeps everything completed, and \`steward launch\` resumes it).`,
    ].join('\n');
  if (stopped.reattached)
    return [
      `stopped this launch's workers; eval set ${evalSet} stays running in Temporal, and any other \`steward launch\` or \`steward workers\` serving it keeps going.`,
      `\`steward status ${evalSet}\` shows whether workers still answer; run \`steward launch\` again to resume it here.`,
    ].join('\n');
  return 'stopped; the eval set keeps everything completed so far: run `steward launch` again to resume';
}

/**
 * Whether the eval set's workflow runs, from the server alone. No query: after a crash of the
 * launcher and its fleet no worker is left to answer one, and that is when re-attaching matters.
 */
async function isRunning(client: Client, workflowId: string): Promise<boolean> {
  try {
    const description = await client.workflow.getHandle(workflowId).describe();
    return description.status.name === 'RUNNING';
  } catch (err) {
    if ((err as Error).name === 'WorkflowNotFoundError') return false;
    throw err;
  }
}

/** How many failed samples' errors the end of a run shows; the rest are in the log dir. */
const ERRORS_SHOWN = 5;

/** The recorded errors of samples that did not complete, a few of them, one line each. */
async function sampleErrors(result: EvalSetResult): Promise<string> {
  const store = openLogStore(result.log_dir);
  const records = (
    await Promise.all(
      // Only a report: an unreadable record must not turn a finished run into a failure.
      result.tasks.map((task) => store.readSampleErrors(task.name).catch(() => [])),
    )
  ).flat();
  const lines = records
    .slice(0, ERRORS_SHOWN)
    .map((r) => `  ${r.task} sample ${JSON.stringify(r.sample_id)} epoch ${r.epoch}: ${r.error}\n`);
  const more = records.length - lines.length;
  return lines.join('') + (more > 0 ? `  ... and ${more} more\n` : '');
}

function report(result: EvalSetResult, json: boolean | undefined): void {
  if (json) process.stdout.write(`${JSON.stringify(resultJson(result), null, 2)}\n`);
  else {
    process.stdout.write(
      `\n${resultTable(result)}\n\nlog dir: ${result.log_dir}\n` +
        `view it with Inspect AI: inspect view --log-dir ${result.log_dir}\n`,
    );
  }
}

function checkModels(definition: EvalSetDefinition): void {
  const problems = [
    ...new Set(definition.tasks.map((t) => checkModelEnvironment(t.model, process.env))),
  ].filter((p): p is string => p !== undefined);
  // The definition passed validation, so what is left is the environment: a missing variable.
  if (problems.length > 0) throw new StewardError(problems.join('\n'), ExitCode.environment);
}

async function countCompleted(
  definition: EvalSetDefinition,
  logDir: string,
): Promise<{ done: number; total: number }> {
  const store = openLogStore(logDir);
  let done = 0;
  let total = 0;
  for (const task of definition.tasks) {
    done += indicesWithKeys(task, await store.completedKeys(task.name), sampleKey).length;
    total += sampleCount(task);
  }
  return { done, total };
}

/** Runs the fleet for this eval set in a background process that outlives this command. */
function detachWorkers(name: string): void {
  // With TEMPORAL_ADDRESS set nothing else has made STEWARD_HOME yet.
  const home = stewardHome(process.env);
  mkdirSync(home, { recursive: true });
  const log = openSync(detachedLogFile(home, name), 'a');
  const child = spawn(
    process.execPath,
    [path.join(PACKAGE_ROOT, 'bin', 'steward.js'), 'workers', name, '--until-done', '--detached'],
    {
      detached: true,
      stdio: ['ignore', log, log],
    },
  );
  child.unref();
}

/**
 * Why the run looks set to outgrow this host's memory (SPEC §2, gate 6), or undefined: every
 * worker slot it would start here, with the most samples its settings let run at once.
 */
export function fleetMemoryWarning(
  definition: EvalSetDefinition,
  settings: ResolvedSettings,
  host: HostCapacity = thisHostCapacity(),
): string | undefined {
  // Every sample counts here, sandboxed or not, and no sandbox budget cuts them.
  const tasks = definition.tasks.map((task) => ({ samples: sampleCount(task), sandboxed: true }));
  return memoryWarning({
    slots: slotCount(tasks.length, settings.maxWorkers, host),
    samplesAtOnce: peakSandboxDemand(settings, tasks, null),
    host,
  });
}

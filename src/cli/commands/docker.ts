/**
 * `steward docker check [definition] [--yes]`: can the Docker daemon give this run a network for
 * every sandbox it can want at once? If not, say both numbers and offer the daemon.json fix.
 * `steward launch` runs the same check ({@link checkDocker}) before it starts a sandboxed run.
 */
import { sampleCount } from '../../definition/samples';
import * as path from 'node:path';
import { createInterface } from 'node:readline/promises';
import Dockerode from 'dockerode';
import { loadStewardYaml } from '../../config/load';
import { resolveSettings, type ResolvedSettings } from '../../config/settings';
import { loadDefinition } from '../../loader/definition';
import type { EvalSetDefinition } from '../../definition/types';
import { dockerPreflight, offerPoolFix, type PreflightReport } from '../../docker/preflight';
import { ConfigError, ExitCode } from '../../errors';
import { defaultMaxSandboxes, peakSandboxDemand } from '../../sandbox/budget';
import { needsNetwork } from '../../sandbox/docker';

export interface DockerCheckOptions {
  /** Write the daemon.json fix without asking. */
  yes?: boolean;
}

/**
 * Checks the daemon against the peak sandbox demand of `definition` (or, without one, against the
 * sandbox budget alone). Exits 0 when the daemon has enough networks, 3 when it has not (whether
 * or not the fix was written: it takes effect only once Docker restarts).
 */
export async function dockerCheckCommand(
  definition: string | undefined,
  opts: DockerCheckOptions,
): Promise<number> {
  const docker = new Dockerode();
  const print = (text: string): void => void process.stdout.write(`${text}\n`);
  const loaded =
    definition === undefined ? undefined : await loadDefinition(path.resolve(definition));
  const { errors, settings } = resolveSettings({
    env: process.env,
    stewardYaml: await loadStewardYaml(process.cwd()),
    definition: loaded?.settings,
  });
  if (errors.length > 0) throw new ConfigError(errors);

  const demand = await sandboxDemand(docker, settings, loaded);
  print(demand.explanation);
  const { report } = await checkDocker({
    docker,
    demand: demand.value,
    yes: opts.yes ?? false,
    print,
  });
  return report.ok ? ExitCode.ok : ExitCode.environment;
}

/** The peak sandbox demand of a run, and a sentence saying where it comes from. */
export interface SandboxDemand {
  value: number;
  explanation: string;
}

/**
 * The most sandboxes a run can hold at once (see `peakSandboxDemand`). The budget is
 * `max_sandboxes` when set, else the daemon's default (2 × its CPUs). Without a definition, the
 * budget is the demand: the most sandboxes Steward would run on this daemon. Docker is asked for
 * its CPUs only when the budget matters.
 */
export async function sandboxDemand(
  docker: Dockerode,
  settings: ResolvedSettings,
  definition?: EvalSetDefinition,
): Promise<SandboxDemand> {
  // Address pools run out by networks, and only samples whose sandbox has one take one; the
  // budget caps every sandbox, so it caps these too.
  const tasks = (definition?.tasks ?? []).map((task) => ({
    samples: sampleCount(task),
    sandboxed: task.sandbox !== undefined && needsNetwork(task.sandbox),
  }));
  if (definition && !tasks.some((task) => task.sandboxed)) {
    const why = definition.tasks.some((task) => task.sandbox !== undefined)
      ? 'needs a network for its sandboxes (every service has network_mode set)'
      : 'has a sandbox';
    return { value: 0, explanation: `No task of eval set ${definition.name} ${why}.` };
  }
  const budget = settings.maxSandboxes ?? (await defaultMaxSandboxes(docker));
  const budgetText =
    settings.maxSandboxes === null
      ? `max_sandboxes unset: 2 × the daemon's ${budget / 2} CPUs = ${budget}`
      : `max_sandboxes ${budget}`;
  if (!definition) {
    return { value: budget, explanation: `Sandboxes at once: up to ${budget} (${budgetText}).` };
  }
  const value = peakSandboxDemand(settings, tasks, budget);
  const samples = settings.samples;
  const why =
    samples.type === 'pinned'
      ? `max_samples ${samples.value} per task, which the budget does not cut`
      : budgetText;
  return {
    value,
    explanation: `Eval set ${definition.name} can run up to ${value} sandboxed samples at once (${why}).`,
  };
}

/** Options of {@link checkDocker}. */
export interface CheckDockerOptions {
  docker: Dockerode;
  demand: number;
  /** Write the daemon.json fix without asking. */
  yes: boolean;
  print: (text: string) => void;
}

/**
 * Runs the preflight against `demand`, says how it stands, and when the daemon falls short offers
 * the daemon.json fix: asked at a terminal (default No), written with `yes`, else printed.
 */
export async function checkDocker(
  options: CheckDockerOptions,
): Promise<{ report: PreflightReport }> {
  const { docker, demand, print } = options;
  const report = await dockerPreflight({ docker, demand });
  if (!report.ok) {
    await offerPoolFix({
      report,
      isTTY: Boolean(process.stdin.isTTY && process.stdout.isTTY),
      yes: options.yes,
      prompt: ask,
      print,
    });
    return { report };
  }
  print(
    `Docker can create ${report.capacity} more networks (address pools: ${report.source}; ` +
      `${report.usedSubnets.length} subnets in use): enough for ${demand} sandboxes.`,
  );
  if (report.pending) {
    print(
      `${report.daemonJsonPath} sets address pools the running daemon has not loaded yet ` +
        `(${report.pending.capacity} networks once Docker restarts).`,
    );
  }
  return { report };
}

async function ask(question: string): Promise<string> {
  const prompt = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return await prompt.question(question);
  } finally {
    prompt.close();
  }
}

/**
 * The Docker sandbox provider: per sample, a compose-style project of its own network and
 * containers, labelled with eval set, task, sample and epoch, torn down when the sample ends.
 *
 * Every object carries `steward.managed=true` and the owner labels, so what a crashed process
 * left behind is found and removed by `reapSandboxes` (cleanup.ts).
 */

import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';

import { ApplicationFailure } from '@temporalio/common';
import type Docker from 'dockerode';

import { dockerUnreachable } from '../docker/preflight';
import { ErrorType } from '../errors';
import { execInContainer } from './exec';
import { readContainerFile, writeContainerFile } from './files';
import { ensureImage } from './image';
import {
  SandboxLabel,
  type DestroyResult,
  type ExecOptions,
  type ExecResult,
  type Sandbox,
  type SandboxOwner,
  type SandboxService,
  type SandboxServiceSpec,
  type SandboxSpec,
} from './types';

/** Arguments of {@link createSandbox}. */
export interface CreateSandboxArgs extends SandboxOwner {
  docker: Docker;
  spec: SandboxSpec;
}

/** What the daemon says when its address pools are used up (older and newer wording). */
const POOL_EXHAUSTED =
  /could not find an available, non-overlapping IPv4 address pool among the defaults|all predefined address pools have been fully subnetted/i;

/**
 * Creates and starts a sample's sandbox. On any failure what was created is removed before the
 * error is thrown. A daemon out of address pools gives a retryable `ApplicationFailure` of type
 * {@link ErrorType.networkPoolExhausted}; a default service that does not stay up, a
 * non-retryable one of type {@link ErrorType.config}.
 */
export async function createSandbox(args: CreateSandboxArgs): Promise<Sandbox> {
  const { docker, spec } = args;
  const main = spec.services.findIndex((service) => service.name === spec.defaultService);
  if (main < 0) {
    throw new Error(`sandbox spec names default service ${spec.defaultService}, which it lacks`);
  }
  try {
    // Pull before taking a network: a slow pull should not hold one of the host's few pools.
    for (const image of new Set(spec.services.map((service) => service.image))) {
      await ensureImage(docker, image);
    }
  } catch (error) {
    throw dockerUnreachable(docker, error) ?? error;
  }

  const project = projectName(args);
  const labels = ownerLabels(args);
  const created: { containers: Docker.Container[]; network?: Docker.Network } = { containers: [] };
  const teardown = (): Promise<DestroyResult> => removeProject(created.containers, created.network);
  try {
    if (needsNetwork(spec)) created.network = await createNetwork(docker, project, labels, args);
    for (const service of spec.services) {
      created.containers.push(
        await docker.createContainer(containerOptions(project, service, labels)),
      );
    }
    await Promise.all(created.containers.map((container) => container.start()));
    const handles = await Promise.all(
      spec.services.map((service, index) => openService(created.containers[index], service)),
    );
    await assertRunning(created.containers[main], spec.defaultService, project);
    const byName = new Map(handles.map((handle) => [handle.name, handle]));
    return new DockerSandbox(args, project, spec, byName, teardown);
  } catch (error) {
    await teardown();
    throw dockerUnreachable(docker, error) ?? error;
  }
}

/**
 * Runs `fn` with a fresh sandbox and always removes it: when `fn` returns or throws, when
 * `timeoutMs` passes, or when `signal` aborts. On timeout or abort the sandbox goes at once (its
 * commands fail) and the promise rejects with the signal's reason; `fn` gets the combined signal
 * so it can stop early.
 */
export async function withSandbox<T>(
  args: CreateSandboxArgs & { signal?: AbortSignal; timeoutMs?: number },
  fn: (sandbox: Sandbox, signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const signals = [
    args.signal,
    args.timeoutMs === undefined ? undefined : AbortSignal.timeout(args.timeoutMs),
  ];
  const signal = AbortSignal.any(signals.filter((s): s is AbortSignal => s !== undefined));
  signal.throwIfAborted();
  const sandbox = await createSandbox(args);
  let onAbort: (() => void) | undefined;
  try {
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    const work = fn(sandbox, signal);
    // If the abort wins, fn's own rejection (its sandbox vanished) is expected: do not report it.
    work.catch(() => undefined);
    return await Promise.race([work, aborted]);
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
    await sandbox.destroy();
  }
}

class DockerSandbox implements Sandbox {
  readonly name: string;
  readonly services: string[];
  private destroying?: Promise<DestroyResult>;

  constructor(
    readonly owner: SandboxOwner,
    readonly project: string,
    spec: SandboxSpec,
    private readonly byName: Map<string, ServiceHandle>,
    private readonly teardown: () => Promise<DestroyResult>,
  ) {
    this.services = spec.services.map((service) => service.name);
    this.name = spec.defaultService;
  }

  service(name: string): SandboxService {
    const handle = this.byName.get(name);
    if (!handle) {
      const known = this.services.join(', ');
      throw new Error(`sandbox ${this.project} has no service ${name} (it has ${known})`);
    }
    return handle;
  }

  exec(cmd: string[], options?: ExecOptions): Promise<ExecResult> {
    return this.service(this.name).exec(cmd, options);
  }

  writeFile(path: string, content: string | Buffer): Promise<void> {
    return this.service(this.name).writeFile(path, content);
  }

  readFile(path: string): Promise<string> {
    return this.service(this.name).readFile(path);
  }

  destroy(): Promise<DestroyResult> {
    this.destroying ??= this.teardown();
    return this.destroying;
  }
}

/** One started container, with the working dir relative paths resolve against. */
class ServiceHandle implements SandboxService {
  constructor(
    private readonly spec: SandboxServiceSpec,
    private readonly container: Docker.Container,
    private readonly workingDir: string,
  ) {}

  get name(): string {
    return this.spec.name;
  }

  exec(cmd: string[], options?: ExecOptions): Promise<ExecResult> {
    return execInContainer(this.container, cmd, options);
  }

  writeFile(path: string, content: string | Buffer): Promise<void> {
    return writeContainerFile(this.container, posix.resolve(this.workingDir, path), content);
  }

  readFile(path: string): Promise<string> {
    return readContainerFile(this.container, posix.resolve(this.workingDir, path));
  }
}

async function openService(
  container: Docker.Container,
  spec: SandboxServiceSpec,
): Promise<ServiceHandle> {
  const info = await container.inspect();
  return new ServiceHandle(spec, container, info.Config.WorkingDir || '/');
}

/**
 * How long the default service must keep running after its start. Inspected at once, a command
 * that exits at once (`true`) could still show as running on a busy host, and the sandbox was
 * handed out with no default service behind it.
 */
const START_GRACE_MS = 500;

async function assertRunning(
  container: Docker.Container,
  service: string,
  project: string,
): Promise<void> {
  const stop = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  // Docker answers the wait when the container stops; past the grace it is abandoned.
  await Promise.race([
    container.wait({ condition: 'not-running', abortSignal: stop.signal }).catch(() => undefined),
    new Promise((resolve) => (timer = setTimeout(resolve, START_GRACE_MS))),
  ]);
  clearTimeout(timer);
  stop.abort();
  const info = await container.inspect();
  if (info.State.Running) return;
  throw ApplicationFailure.create({
    type: ErrorType.config,
    nonRetryable: true,
    message:
      `sandbox service ${service} (${project}) exited right after starting (exit code ${info.State.ExitCode}` +
      `${info.State.Error ? `: ${info.State.Error}` : ''}): the default service must keep running, e.g. command: tail -f /dev/null`,
  });
}

async function createNetwork(
  docker: Docker,
  project: string,
  labels: Record<string, string>,
  owner: SandboxOwner,
): Promise<Docker.Network> {
  try {
    return await docker.createNetwork({
      Name: project,
      Driver: 'bridge',
      CheckDuplicate: true,
      Labels: labels,
    });
  } catch (error) {
    const message = (error as Error).message;
    if (!POOL_EXHAUSTED.test(message)) throw error;
    throw ApplicationFailure.create({
      type: ErrorType.networkPoolExhausted,
      message:
        `Docker has no address pool left for a network for sample ${owner.sampleId} of task ${owner.task}: ` +
        `every sandbox needs its own network and the daemon's pools are used up. ` +
        `Run \`steward docker check\` to see the limit and the daemon.json fix. (Docker said: ${message})`,
      cause: error as Error,
    });
  }
}

function containerOptions(
  project: string,
  service: SandboxServiceSpec,
  labels: Record<string, string>,
): Docker.ContainerCreateOptions {
  const networkMode = service.network_mode ?? project;
  return {
    name: `${project}-${service.name}`,
    Image: service.image,
    Hostname: service.name,
    Labels: { ...labels, [SandboxLabel.service]: service.name },
    Tty: false,
    OpenStdin: false,
    ...(service.command && { Cmd: service.command }),
    ...(service.entrypoint && { Entrypoint: service.entrypoint }),
    ...(service.environment && {
      Env: Object.entries(service.environment).map(([key, value]) => `${key}=${value}`),
    }),
    ...(service.working_dir && { WorkingDir: service.working_dir }),
    ...(service.user && { User: service.user }),
    HostConfig: {
      NetworkMode: networkMode,
      ...(service.mem_limit && { Memory: service.mem_limit }),
      ...(service.cpus && { NanoCpus: Math.round(service.cpus * 1e9) }),
      ...(service.init !== undefined && { Init: service.init }),
    },
    ...(service.network_mode === undefined && {
      NetworkingConfig: { EndpointsConfig: { [project]: { Aliases: [service.name] } } },
    }),
  };
}

/** Removes containers, then the network, retrying each a few times; never rejects. */
async function removeProject(
  containers: readonly Docker.Container[],
  network: Docker.Network | undefined,
): Promise<DestroyResult> {
  const errors: string[] = [];
  await Promise.all(
    containers.map((container) =>
      retryRemoval(() => container.remove({ force: true, v: true })).catch((error: Error) =>
        errors.push(`container ${container.id}: ${error.message}`),
      ),
    ),
  );
  if (network) {
    await retryRemoval(() => network.remove()).catch((error: Error) =>
      errors.push(`network ${network.id}: ${error.message}`),
    );
  }
  return { complete: errors.length === 0, errors };
}

/**
 * Runs a removal until it succeeds or the object is gone (404). Retries cover the daemon's
 * transient refusals: "removal already in progress" (409) and a network whose endpoints are
 * still being released.
 */
export async function retryRemoval(remove: () => Promise<unknown>, attempts = 4): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await remove();
      return;
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 404) return;
      if (attempt >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** (attempt - 1)));
    }
  }
}

/** Labels every object of the sandbox carries. */
export function ownerLabels(owner: SandboxOwner): Record<string, string> {
  return {
    [SandboxLabel.managed]: 'true',
    [SandboxLabel.evalSet]: owner.evalSet,
    [SandboxLabel.task]: owner.task,
    [SandboxLabel.sample]: String(owner.sampleId),
    [SandboxLabel.epoch]: String(owner.epoch),
  };
}

/**
 * `steward-<eval set>-<task>-<sample>-e<epoch>-<random>`, each part cut to a readable length.
 * The random tail keeps a retried sample from colliding with what its previous attempt left.
 */
function projectName(owner: SandboxOwner): string {
  const part = (value: string | number, max: number): string =>
    String(value)
      .toLowerCase()
      .replace(/[^a-z0-9_.-]+/g, '-')
      .replace(/^[-.]+|[-.]+$/g, '')
      .slice(0, max) || 'x';
  return [
    'steward',
    part(owner.evalSet, 24),
    part(owner.task, 24),
    part(owner.sampleId, 16),
    `e${owner.epoch}`,
    randomBytes(3).toString('hex'),
  ].join('-');
}

/** Whether a sample of `spec` gets a network of its own: some service keeps the default mode. */
export function needsNetwork(spec: SandboxSpec): boolean {
  return spec.services.some((service) => service.network_mode === undefined);
}

/**
 * The sandbox contract: what a sample's solver sees of its container(s), and how a task describes
 * them. The Docker provider is in `docker.ts`; compose files are read by `compose.ts`.
 */

/** Labels on every container and network Steward creates, so leftovers can be found and reaped. */
export const SandboxLabel = {
  /** Always `"true"`: marks the object as Steward's. */
  managed: 'steward.managed',
  evalSet: 'steward.eval_set',
  task: 'steward.task',
  sample: 'steward.sample',
  epoch: 'steward.epoch',
  /** Containers only: the compose service the container runs. */
  service: 'steward.service',
} as const;

/** One service of a sandbox, with compose's field names (snake_case, as written in the file). */
export interface SandboxServiceSpec {
  name: string;
  image: string;
  /** The container's command; unset keeps the image's CMD. */
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  working_dir?: string;
  user?: string;
  /**
   * `none`: no network at all; `host`/`bridge`: Docker's networks of that name.
   * Unset: the sandbox's own network, where services reach each other by name.
   */
  network_mode?: 'none' | 'host' | 'bridge';
  /** Bytes. */
  mem_limit?: number;
  cpus?: number;
  /** Run Docker's init as PID 1 (reaps zombies, forwards signals). */
  init?: boolean;
}

/** A sandbox as a task describes it, normalised. */
export interface SandboxSpec {
  services: SandboxServiceSpec[];
  /** Name of the service `Sandbox.exec` and friends act on. */
  defaultService: string;
}

/** Which sample a sandbox belongs to (also its labels). */
export interface SandboxOwner {
  evalSet: string;
  task: string;
  sampleId: string | number;
  epoch: number;
}

/** Options of {@link SandboxService.exec}. */
export interface ExecOptions {
  /** Kill the command after this long and report `timedOut`. Unset: no limit. */
  timeoutMs?: number;
  /** Sent to the command's standard input, which is then closed. */
  stdin?: string | Buffer;
  /**
   * Bytes kept of each of stdout and stderr; the rest is read and dropped (`truncated`).
   * @default 10 MiB
   */
  maxOutputBytes?: number;
  /** User (name or uid[:gid]) to run as. @default the service's user */
  user?: string;
  /** Working directory. @default the service's working_dir */
  cwd?: string;
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** Kills the command (and what it started) and rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface ExecResult {
  /** The command's exit code; `null` when it was killed for the timeout before it reported one. */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  /** Some output went past `maxOutputBytes` and was dropped. */
  truncated: boolean;
  timedOut: boolean;
}

/** One running service of a sandbox. */
export interface SandboxService {
  readonly name: string;
  /** Runs `cmd` (no shell: use `['sh', '-c', '...']` for one). A non-zero exit is a result, not an error. */
  exec(cmd: string[], options?: ExecOptions): Promise<ExecResult>;
  /** Writes a file, creating missing parent directories. Relative paths are against the working dir. */
  writeFile(path: string, content: string | Buffer): Promise<void>;
  /** Reads a file as UTF-8 text. */
  readFile(path: string): Promise<string>;
}

/** What {@link Sandbox.destroy} managed to remove. */
export interface DestroyResult {
  /** Everything is gone. */
  complete: boolean;
  /** What could not be removed after retries (a later reap will). */
  errors: string[];
}

/** A sample's sandbox: its default service, the others by name, and the way to tear it down. */
export interface Sandbox extends SandboxService {
  readonly owner: SandboxOwner;
  /** Docker project name, prefix of its containers' and network's names. */
  readonly project: string;
  /** Service names, default first. */
  readonly services: string[];
  /** The service called `name`; throws if there is none. */
  service(name: string): SandboxService;
  /** Removes the containers and the network. Idempotent, never rejects. */
  destroy(): Promise<DestroyResult>;
}

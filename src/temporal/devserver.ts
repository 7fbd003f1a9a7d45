/**
 * The embedded Temporal server: the CLI's dev server on SQLite, started on demand, detached so it
 * outlives the `steward` that started it, and reused by every later one.
 *
 * Its files live in the steward dir: `temporal.log` (its output), `temporal.pid`, and
 * `temporal.lock`, held while one process starts it so that racing `steward`s start one server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection, isGrpcServiceError } from '@temporalio/client';
import { openConnection } from './open-connection';
import { ExitCode, StewardError } from '../errors';
import { findTemporalBinary } from './binary';
import type { SearchAttributeKind, TemporalDevConfig } from './config';
import {
  isAlive,
  isDevServerProcess,
  logTail,
  readPid,
  removePidFile,
  sizeOf,
  waitForExit,
  watchExit,
} from './processes';
import { withStartLock } from './start-lock';

export interface DevServerOptions {
  /** Holds the server's log, pid file and start lock; created if missing. */
  stewardDir: string;
  /** Told about slow steps worth a line to the user: building the CLI, starting the server. */
  onProgress?: (message: string) => void;
  /** How long a starting server may take to answer. @default 60_000 */
  startTimeoutMs?: number;
  /** The `temporal` executable. @default found or built by findTemporalBinary */
  binary?: string;
}

/** Where to reach the dev server, and whether this call started it. */
export interface DevServerEndpoint {
  /** `host:port` of the gRPC frontend. */
  address: string;
  namespace: string;
  /** `false` when a server already answered (or another process won the race to start one). */
  started: boolean;
}

const pollIntervalMs = 250;
const probeTimeoutMs = 2_000;
const stopTimeoutMs = 10_000;
const grpcNotFound = 5;
// The wire values of temporal.api.enums.v1.IndexedValueType.
const indexedValueType: Record<SearchAttributeKind, number> = {
  Text: 1,
  Keyword: 2,
  Int: 3,
  Double: 4,
  Bool: 5,
  Datetime: 6,
  KeywordList: 7,
};

/** The files a dev server keeps in a steward dir. */
export function devServerFiles(stewardDir: string): { log: string; pid: string; lock: string } {
  return {
    log: path.join(stewardDir, 'temporal.log'),
    pid: path.join(stewardDir, 'temporal.pid'),
    lock: path.join(stewardDir, 'temporal.lock'),
  };
}

/** The `host:port` clients dial; a wildcard bind is dialled on loopback. */
export function devServerAddress(config: TemporalDevConfig): string {
  const host = dialHost(config);
  return host.includes(':') ? `[${host}]:${config.port}` : `${host}:${config.port}`;
}

/** The `temporal` arguments that run a dev server with this config. */
export function devServerArgs(config: TemporalDevConfig): string[] {
  const args = ['server', 'start-dev', '--ip', config.ip, '--port', String(config.port)];
  args.push('--db-filename', config.dbFilename);
  args.push('--log-level', config.logLevel, '--log-format', config.logFormat);
  args.push(...(config.uiPort === false ? ['--headless'] : ['--ui-port', String(config.uiPort)]));
  // "default" always exists; naming it again would be harmless but noisy.
  if (config.namespace !== 'default') args.push('--namespace', config.namespace);
  for (const [name, kind] of Object.entries(config.searchAttributes)) {
    args.push('--search-attribute', `${name}=${kind}`);
  }
  for (const [key, value] of Object.entries(config.dynamicConfig)) {
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  }
  for (const [pragma, value] of Object.entries(config.sqlitePragmas)) {
    args.push('--sqlite-pragma', `${pragma}=${value}`);
  }
  return args;
}

/**
 * Reuses the dev server answering at the config's address, or starts one that outlives this
 * process. Either way the config's search attributes are registered on it before this returns.
 *
 * @throws StewardError (environment) if the server cannot be started or does not answer in time
 *   (with the tail of its log), or a running one lacks the namespace
 */
export async function ensureDevServer(
  config: TemporalDevConfig,
  options: DevServerOptions,
): Promise<DevServerEndpoint> {
  const address = devServerAddress(config);
  let started = false;
  const state = await probe(config);
  if (state === 'no-namespace') throw missingNamespace(config);
  if (state === 'unavailable') {
    const binary = options.binary ?? (await findTemporalBinary(options));
    const files = devServerFiles(options.stewardDir);
    await prepareDirs(config, options.stewardDir);
    const timeoutMs = options.startTimeoutMs ?? 60_000;
    const deadline = Date.now() + timeoutMs;
    const isUp = async () => (await probe(config)) === 'ready';
    started = await withStartLock(files.lock, deadline, isUp, async () => {
      // The previous holder may have just started it.
      if (await isUp()) return false;
      if (await earlierServerAnswers(config, options.stewardDir, deadline)) return false;
      options.onProgress?.(`Starting the Temporal dev server at ${address} (log: ${files.log})...`);
      return startDetached(binary, config, files, timeoutMs);
    });
  }
  await registerSearchAttributes(config);
  return { address, namespace: config.namespace, started };
}

/**
 * Runs the dev server in the foreground (`steward server`) with its output on ours, until it
 * exits; SIGINT, SIGTERM and SIGHUP are passed on to it. It holds the start lock until it
 * answers, so a `steward` starting meanwhile waits for it and reuses it.
 *
 * @returns the server's exit code (128 + the signal's number if a signal ended it)
 * @throws StewardError (environment) if a server already answers at the config's address
 */
export async function runDevServerForeground(
  config: TemporalDevConfig,
  options: DevServerOptions,
): Promise<number> {
  if ((await probe(config)) !== 'unavailable') throw alreadyAnswers(config);
  const binary = options.binary ?? (await findTemporalBinary(options));
  const files = devServerFiles(options.stewardDir);
  await prepareDirs(config, options.stewardDir);
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  const isUp = async () => (await probe(config)) === 'ready';

  const server: { child?: ChildProcess; exited?: ReturnType<typeof watchExit> } = {};
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  const forward = (signal: NodeJS.Signals) => server.child?.kill(signal);
  try {
    const startedHere = await withStartLock(files.lock, deadline, isUp, async () => {
      if (await isUp()) return false;
      if (await earlierServerAnswers(config, options.stewardDir, deadline)) return false;
      // Its own process group: a terminal's Ctrl-C reaches us alone, and we pass it on once (a
      // second interrupt would cut the server's graceful shutdown short).
      const child = spawn(binary, devServerArgs(config), {
        detached: true,
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      server.child = child;
      server.exited = watchExit(child);
      for (const signal of signals) process.on(signal, forward);
      if (child.pid !== undefined) await writeFile(files.pid, `${child.pid}\n`);
      if (await waitUntilReady(config, deadline, server.exited.reason)) {
        await registerSearchAttributes(config).catch((error: Error) =>
          options.onProgress?.(`Warning: ${error.message}`),
        );
      }
      return true;
    });
    if (!startedHere || server.exited === undefined) throw alreadyAnswers(config);
    return await server.exited.code;
  } finally {
    for (const signal of signals) process.off(signal, forward);
    await removePidFile(files.pid, server.child?.pid);
  }
}

/**
 * Stops the dev server whose pid is in the steward dir: SIGTERM, then SIGKILL if it lingers.
 *
 * @returns whether a server was running
 */
export async function stopDevServer(stewardDir: string): Promise<boolean> {
  const pidFile = devServerFiles(stewardDir).pid;
  const pid = await readPid(pidFile);
  if (pid === undefined) return false;
  // A stale pid file may name a process that has nothing to do with us.
  const running = isAlive(pid) && (await isDevServerProcess(pid));
  if (running) {
    process.kill(pid, 'SIGTERM');
    if (!(await waitForExit(pid, stopTimeoutMs))) {
      process.kill(pid, 'SIGKILL');
      await waitForExit(pid, stopTimeoutMs);
    }
  }
  await rm(pidFile, { force: true });
  return running;
}

type ServerState = 'ready' | 'no-namespace' | 'unavailable';

/** A real check: the namespace is described over gRPC, not just a port found open. */
async function probe(config: TemporalDevConfig): Promise<ServerState> {
  // Refused at once when nothing listens, where a gRPC connect would retry until its deadline.
  if (!(await portOpen(dialHost(config), config.port))) return 'unavailable';
  let connection: Connection;
  try {
    connection = await openConnection({
      address: devServerAddress(config),
      connectTimeout: probeTimeoutMs,
    });
  } catch {
    return 'unavailable';
  }
  try {
    await connection.withDeadline(Date.now() + probeTimeoutMs, () =>
      connection.workflowService.describeNamespace({ namespace: config.namespace }),
    );
    return 'ready';
  } catch (error) {
    return isGrpcServiceError(error) && error.code === grpcNotFound
      ? 'no-namespace'
      : 'unavailable';
  } finally {
    await connection.close();
  }
}

function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: probeTimeoutMs });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}

/**
 * Registers the config's search attributes that the server lacks. The dev server registers them
 * only when it creates a namespace, so one added to the config later, or a server someone
 * started by hand, would otherwise miss them.
 */
async function registerSearchAttributes(config: TemporalDevConfig): Promise<void> {
  const address = devServerAddress(config);
  // Not a probe: the server answered a moment ago, and a busy one may take a while.
  const connection = await openConnection({ address, connectTimeout: 10_000 });
  try {
    const { namespace } = config;
    const { customAttributes } = await connection.operatorService.listSearchAttributes({
      namespace,
    });
    const missing: Record<string, number> = {};
    for (const [name, kind] of Object.entries(config.searchAttributes)) {
      const existing = customAttributes[name];
      if (existing === undefined) missing[name] = indexedValueType[kind];
      else if (existing !== indexedValueType[kind]) {
        throw new StewardError(
          `The Temporal server at ${address} has search attribute ${name} with another type ` +
            `than the ${kind} that temporal-dev.yaml asks for; a type cannot be changed.`,
          ExitCode.environment,
        );
      }
    }
    if (Object.keys(missing).length > 0) {
      await connection.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: missing,
      });
    }
  } finally {
    await connection.close();
  }
}

/**
 * Spawns the server in its own session with output to the log, and waits until it answers.
 *
 * @returns `true` once it answers; `false` if it died because another process's server holds
 *   the port (a race across steward dirs), which then serves us just as well
 */
async function startDetached(
  binary: string,
  config: TemporalDevConfig,
  files: ReturnType<typeof devServerFiles>,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  const logStart = await sizeOf(files.log);
  const log = openSync(files.log, 'a');
  let child: ChildProcess;
  try {
    child = spawn(binary, devServerArgs(config), { detached: true, stdio: ['ignore', log, log] });
  } finally {
    closeSync(log);
  }
  child.unref();
  const exited = watchExit(child);
  try {
    if (child.pid !== undefined) await writeFile(files.pid, `${child.pid}\n`);
    if (await waitUntilReady(config, deadline, exited.reason)) return true;
    const reason = exited.reason();
    if (reason === undefined) child.kill('SIGKILL');
    await removePidFile(files.pid, child.pid);
    if ((await probe(config)) === 'ready') return false;
    const what =
      reason === undefined
        ? `did not answer within ${timeoutMs / 1000} s`
        : `exited during startup (${reason})`;
    throw new StewardError(
      `The Temporal dev server ${what}. The end of ${files.log}:\n` +
        (await logTail(files.log, logStart, 30)),
      ExitCode.environment,
    );
  } finally {
    child.removeAllListeners();
  }
}

/** Polls until the server answers (`true`), it exits, or the deadline passes (`false`). */
async function waitUntilReady(
  config: TemporalDevConfig,
  deadline: number,
  exitReason: () => string | undefined,
): Promise<boolean> {
  for (;;) {
    if (exitReason() !== undefined) return false;
    if ((await probe(config)) === 'ready') return true;
    if (Date.now() > deadline) return false;
    await sleep(pollIntervalMs);
  }
}

/**
 * Whether a server this steward dir started earlier answers after all: one that is alive and
 * listens at our address is only slow (a busy machine), so it gets until the deadline. One alive
 * elsewhere (its port changed in the config since) or hung holds the same SQLite file, which a
 * second server must not open.
 *
 * @returns `false` when no server from this steward dir is alive
 */
async function earlierServerAnswers(
  config: TemporalDevConfig,
  stewardDir: string,
  deadline: number,
): Promise<boolean> {
  const pid = await readPid(devServerFiles(stewardDir).pid);
  if (pid === undefined || !isAlive(pid) || !(await isDevServerProcess(pid))) return false;
  const exited = () => (isAlive(pid) ? undefined : 'exited');
  if (await portOpen(dialHost(config), config.port)) {
    if (await waitUntilReady(config, deadline, exited)) return true;
  }
  throw new StewardError(
    `The Temporal dev server started from ${stewardDir} (pid ${pid}) is running but does not ` +
      `answer at ${devServerAddress(config)}; was temporal-dev.yaml changed since? Stop it ` +
      `(kill ${pid}) and try again.`,
    ExitCode.environment,
  );
}

async function prepareDirs(config: TemporalDevConfig, stewardDir: string): Promise<void> {
  await mkdir(stewardDir, { recursive: true });
  // The dev server creates the database file, not the directories above it.
  await mkdir(path.dirname(config.dbFilename), { recursive: true });
}

function alreadyAnswers(config: TemporalDevConfig): StewardError {
  return new StewardError(
    `A Temporal server already answers at ${devServerAddress(config)}; steward uses it as it is. ` +
      'Stop it first to run one here.',
    ExitCode.environment,
  );
}

function missingNamespace(config: TemporalDevConfig): StewardError {
  const address = devServerAddress(config);
  return new StewardError(
    `The Temporal server at ${address} has no namespace "${config.namespace}". Create it ` +
      `(temporal operator namespace create --address ${address} --namespace ${config.namespace}) ` +
      'or change namespace in temporal-dev.yaml.',
    ExitCode.environment,
  );
}

function dialHost(config: TemporalDevConfig): string {
  if (config.ip === '0.0.0.0') return '127.0.0.1';
  if (config.ip === '::') return '::1';
  return config.ip;
}

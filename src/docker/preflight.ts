/**
 * The Docker check `steward launch` and `steward docker check` run: can the daemon create as many
 * networks as the run can want sandboxes at once, and if not, offer the daemon.json fix.
 *
 * {@link dockerPreflight} reads the world (daemon info, networks, daemon.json) and computes;
 * {@link offerPoolFix} talks to the user and, only with consent, writes the file.
 */

import { existsSync } from 'node:fs';
import * as os from 'node:os';
import { isDeepStrictEqual } from 'node:util';

import type Docker from 'dockerode';

import {
  capacity,
  parseAddressPools,
  RECOMMENDED_POOLS,
  BUILT_IN_POOLS,
  type AddressPool,
} from '../core/pools';
import { ExitCode, StewardError } from '../errors';
import {
  daemonJsonPath as defaultDaemonJsonPath,
  mergeAddressPools,
  POOLS_KEY,
  readDaemonJson,
  writeDaemonJson,
} from './daemon-json';
import {
  detectDockerHost,
  restartHint,
  type DockerHostFacts,
  type RestartHint,
} from './restart-hint';

/** Where the pools in force were read from. */
export type PoolSource = 'docker info' | 'daemon.json' | 'built-in';

/** The daemon.json change that would lift the limit. */
export interface PoolFix {
  /** The snippet to merge into daemon.json. */
  daemonJson: { [POOLS_KEY]: AddressPool[] };
  /** Networks the daemon could create after the change and a restart. */
  capacity: number;
}

export interface PreflightReport {
  /** How many more networks (hence sandboxes) the daemon can create now. */
  capacity: number;
  /** How many sandboxes the run can want at once. */
  demand: number;
  ok: boolean;
  /** The address pools in force. */
  pools: AddressPool[];
  source: PoolSource;
  /** Subnets held by existing networks (any network, not only Steward's). */
  usedSubnets: string[];
  daemonJsonPath: string;
  /**
   * daemon.json already sets pools the running daemon has not loaded (it was edited but not
   * restarted), with the capacity they would give.
   */
  pending?: { pools: AddressPool[]; capacity: number };
  /** Present when the run wants more than the daemon gives and the fix would give more. */
  fix?: PoolFix;
  restartHint: RestartHint;
}

/** Options of {@link dockerPreflight}. */
export interface PreflightOptions {
  docker: Docker;
  demand: number;
  /** @default the path for the detected install, e.g. `/etc/docker/daemon.json` */
  daemonJsonPath?: string;
  /** Overrides for the host facts, which default to this process's platform and environment. */
  host?: Partial<Omit<DockerHostFacts, 'info'>>;
}

/**
 * Reads the daemon (its pools from `docker info`, else daemon.json, else the built-in ones) and
 * every network's subnets, and says how many more networks fit against the run's demand.
 * Throws a {@link StewardError} with {@link ExitCode.environment} when Docker is unreachable.
 */
export async function dockerPreflight(options: PreflightOptions): Promise<PreflightReport> {
  const { docker, demand } = options;
  const [info, networks] = await Promise.all([
    docker.info() as Promise<DaemonInfo>,
    docker.listNetworks(),
  ]).catch((error: unknown) => {
    throw dockerUnreachable(docker, error) ?? error;
  });
  const facts: DockerHostFacts = {
    platform: process.platform,
    osRelease: os.release(),
    env: process.env,
    hasSystemd: existsSync('/run/systemd/system'),
    ...options.host,
    info,
  };
  const kind = detectDockerHost(facts);
  const file =
    options.daemonJsonPath ?? defaultDaemonJsonPath(kind, { home: os.homedir(), env: facts.env });
  const config = await readDaemonJson(file).then(
    (json) => json.config,
    // An unreadable file cannot tell us the pools; the daemon's own answer still can.
    () => ({}) as Record<string, unknown>,
  );

  const usedSubnets = networks.flatMap(
    (network) =>
      network.IPAM?.Config?.flatMap((entry) => (entry.Subnet ? [entry.Subnet] : [])) ?? [],
  );
  const infoPools = parseAddressPools(info.DefaultAddressPools ?? []).pools;
  const filePools = parseAddressPools(config[POOLS_KEY] ?? []).pools;
  const { pools, source } = poolsInForce(infoPools, filePools, info.ServerVersion);
  const available = capacity(pools, usedSubnets);

  const pending =
    filePools.length > 0 && source !== 'daemon.json' && !isDeepStrictEqual(filePools, pools)
      ? { pools: filePools, capacity: capacity(filePools, usedSubnets) }
      : undefined;
  const ok = available >= demand;
  let fix: PoolFix | undefined;
  if (!ok && !(pending && pending.capacity >= demand)) {
    const merged = mergeAddressPools(config, RECOMMENDED_POOLS)[POOLS_KEY];
    const fixCapacity = capacity(parseAddressPools(merged).pools, usedSubnets);
    if (fixCapacity > available) {
      fix = {
        daemonJson: { [POOLS_KEY]: RECOMMENDED_POOLS.map((pool) => ({ ...pool })) },
        capacity: fixCapacity,
      };
    }
  }
  return {
    capacity: available,
    demand,
    ok,
    pools,
    source,
    usedSubnets,
    daemonJsonPath: file,
    pending,
    fix,
    restartHint: restartHint(kind),
  };
}

/** The fields of `docker info` we read. */
interface DaemonInfo {
  ServerVersion?: string;
  OperatingSystem?: string;
  SecurityOptions?: string[];
  DefaultAddressPools?: unknown;
}

/**
 * The running daemon is the authority: since Engine 20.10 `docker info` lists configured pools,
 * so a daemon of that age listing none runs the built-in ones whatever daemon.json now says
 * (it may have been edited since the last restart). Older daemons cannot tell: trust the file.
 */
function poolsInForce(
  infoPools: AddressPool[],
  filePools: AddressPool[],
  serverVersion: string | undefined,
): { pools: AddressPool[]; source: PoolSource } {
  if (infoPools.length > 0) return { pools: infoPools, source: 'docker info' };
  const major = Number(/^(\d+)\./.exec(serverVersion ?? '')?.[1] ?? 0);
  if (filePools.length > 0 && major < 20) return { pools: filePools, source: 'daemon.json' };
  return { pools: [...BUILT_IN_POOLS], source: 'built-in' };
}

/**
 * A clear error when `error` says the daemon cannot be reached, else `undefined`.
 * Used by everything that talks to Docker so "Docker is down" reads the same everywhere.
 */
export function dockerUnreachable(docker: Docker, error: unknown): StewardError | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const endpoint = describeEndpoint(docker);
  if (
    code === 'ENOENT' ||
    code === 'ECONNREFUSED' ||
    code === 'EHOSTUNREACH' ||
    code === 'ETIMEDOUT'
  ) {
    return new StewardError(
      `Docker is not running (cannot reach ${endpoint}): start it and retry`,
      ExitCode.environment,
    );
  }
  if (code === 'EACCES' || code === 'EPERM') {
    return new StewardError(
      `Docker refused access to ${endpoint} (permission denied): add your user to the docker group or use rootless Docker`,
      ExitCode.environment,
    );
  }
  return undefined;
}

function describeEndpoint(docker: Docker): string {
  const modem = docker.modem as {
    socketPath?: unknown;
    host?: string;
    port?: string | number;
    protocol?: string;
  };
  if (typeof modem.socketPath === 'string') return modem.socketPath;
  if (modem.host) {
    return `${modem.protocol ?? 'http'}://${modem.host}${modem.port ? `:${modem.port}` : ''}`;
  }
  // docker-modem resolves the default socket lazily; this is where it looks first.
  return '/var/run/docker.sock';
}

/** What {@link offerPoolFix} did. */
export type PoolFixOutcome =
  | { action: 'not-needed' }
  /** daemon.json already has enough pools; only a restart is missing. */
  | { action: 'restart-pending' }
  /** The recommended pools would not give more than the daemon has now. */
  | { action: 'no-fix' }
  | { action: 'printed'; reason: 'no-tty' | 'declined' | 'write-failed'; error?: string }
  | { action: 'written'; path: string; backupPath?: string }
  /** The file already held the fix (nothing written). */
  | { action: 'unchanged'; path: string };

/** Options of {@link offerPoolFix}. */
export interface OfferPoolFixOptions {
  report: PreflightReport;
  /** Whether a user is at a terminal to answer. */
  isTTY: boolean;
  /** `--yes`: write without asking. */
  yes: boolean;
  /** Asks a question and resolves with the answer as typed. */
  prompt: (question: string) => Promise<string>;
  /** Prints one line (or block) for the user. */
  print: (text: string) => void;
  /** @default Date.now */
  now?: () => number;
}

/**
 * When the run wants more sandboxes than the daemon can give: says both numbers, then writes the
 * fix into daemon.json with `--yes` or a "y" at the prompt (declining is the default), and
 * otherwise prints the JSON and the file to put it in. Never restarts the daemon; prints how.
 */
export async function offerPoolFix(options: OfferPoolFixOptions): Promise<PoolFixOutcome> {
  const { report, print } = options;
  if (report.ok) return { action: 'not-needed' };
  const hint = formatRestartHint(report.restartHint);

  print(
    `This run can want ${report.demand} sandboxes at once, each on its own network, but Docker can ` +
      `create only ${report.capacity} more networks (address pools: ${report.source}; ` +
      `${report.usedSubnets.length} subnets already in use).`,
  );
  if (report.pending && report.pending.capacity >= report.demand) {
    print(
      `${report.daemonJsonPath} already sets address pools for ${report.pending.capacity} networks, ` +
        `but the running daemon has not loaded them. ${hint}`,
    );
    return { action: 'restart-pending' };
  }
  if (!report.fix) {
    print(
      `Steward's recommended pools would not give more networks than that. Lower max_sandboxes, ` +
        `remove unused networks (docker network prune), or carve finer pools in ${report.daemonJsonPath}.`,
    );
    return { action: 'no-fix' };
  }

  const snippet = JSON.stringify(report.fix.daemonJson, null, 2);
  print(`The same address ranges carved finer give ${report.fix.capacity} networks:\n${snippet}`);
  const manual = (): void =>
    print(`To apply it, merge that into ${report.daemonJsonPath}, then restart Docker. ${hint}`);

  if (!options.yes) {
    if (!options.isTTY) {
      manual();
      return { action: 'printed', reason: 'no-tty' };
    }
    const answer = await options.prompt(
      `Write it into ${report.daemonJsonPath} (other settings kept, a backup made first)? [y/N] `,
    );
    if (!/^\s*y(es)?\s*$/i.test(answer)) {
      manual();
      return { action: 'printed', reason: 'declined' };
    }
  }

  try {
    // Re-read: the file may have changed since the check, and its other keys must survive.
    const current = await readDaemonJson(report.daemonJsonPath);
    const merged = mergeAddressPools(current.config, report.fix.daemonJson[POOLS_KEY]);
    const written = await writeDaemonJson(report.daemonJsonPath, merged, {
      now: options.now ?? Date.now,
    });
    if (!written.changed) {
      print(`${report.daemonJsonPath} already holds these pools. ${hint}`);
      return { action: 'unchanged', path: report.daemonJsonPath };
    }
    print(
      `Wrote ${report.daemonJsonPath}${written.backupPath ? ` (previous file saved as ${written.backupPath})` : ''}. ` +
        `Docker reads it only when restarted. ${hint}`,
    );
    return { action: 'written', path: report.daemonJsonPath, backupPath: written.backupPath };
  } catch (error) {
    const message = (error as Error).message;
    print(`Could not write ${report.daemonJsonPath}: ${message}`);
    manual();
    return { action: 'printed', reason: 'write-failed', error: message };
  }
}

function formatRestartHint(hint: RestartHint): string {
  return hint.command ? `${hint.text}\n  ${hint.command}` : hint.text;
}

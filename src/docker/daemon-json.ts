/**
 * Reading and writing the Docker daemon's `daemon.json`. Steward only ever edits the file (with a
 * backup) and never signals or restarts the daemon: the new pools apply when the user restarts it.
 */

import { randomBytes } from 'node:crypto';
import { constants, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { isDeepStrictEqual } from 'node:util';

import { cidrsOverlap, parseAddressPools, type AddressPool } from '../core/pools';
import { ExitCode, StewardError } from '../errors';
import type { DockerHostKind } from './restart-hint';

/** The `daemon.json` key holding the address pools. */
export const POOLS_KEY = 'default-address-pools';

/** A parsed `daemon.json`: its top-level object, or `{}` when there is no file. */
export interface DaemonJson {
  path: string;
  exists: boolean;
  config: Record<string, unknown>;
}

/** What {@link writeDaemonJson} did. */
export interface DaemonJsonWrite {
  /** False when the file already said exactly this (nothing written, no backup). */
  changed: boolean;
  /** Where the previous file was copied, when there was one and it changed. */
  backupPath?: string;
}

/**
 * Where the daemon of this kind of install reads its configuration.
 * Rootless: `$XDG_CONFIG_HOME/docker/daemon.json` (default `~/.config/docker/daemon.json`);
 * Docker Desktop: `~/.docker/daemon.json` (also editable in Settings > Docker Engine);
 * Windows service: `%ProgramData%\docker\config\daemon.json`; otherwise `/etc/docker/daemon.json`.
 */
export function daemonJsonPath(
  kind: DockerHostKind,
  where: { home: string; env: Record<string, string | undefined> },
): string {
  switch (kind) {
    case 'rootless':
      return path.join(
        where.env.XDG_CONFIG_HOME || path.join(where.home, '.config'),
        'docker',
        'daemon.json',
      );
    case 'docker-desktop-mac':
    case 'docker-desktop-windows':
    case 'docker-desktop-linux':
      return path.join(where.home, '.docker', 'daemon.json');
    case 'windows-service':
      return path.win32.join(
        where.env.ProgramData || 'C:\\ProgramData',
        'docker',
        'config',
        'daemon.json',
      );
    default:
      return '/etc/docker/daemon.json';
  }
}

/** Reads `daemon.json`. A missing file is an empty config; a file that is not a JSON object is an error naming it. */
export async function readDaemonJson(file: string): Promise<DaemonJson> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      return { path: file, exists: false, config: {} };
    }
    throw new StewardError(
      `${file}: cannot read (${(error as Error).message})`,
      ExitCode.environment,
    );
  }
  // The daemon accepts an empty file as "no settings".
  if (text.trim() === '') return { path: file, exists: true, config: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new StewardError(
      `${file}: not valid JSON (${(error as Error).message})`,
      ExitCode.environment,
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new StewardError(`${file}: must hold a JSON object`, ExitCode.environment);
  }
  return { path: file, exists: true, config: parsed as Record<string, unknown> };
}

/**
 * `existing` with `pools` added to its `default-address-pools`: every other key is kept, the
 * existing pools that do not overlap the new ones are kept ahead of them (the user chose those
 * ranges), and the ones they overlap are replaced. Merging twice gives the same result.
 */
export function mergeAddressPools(
  existing: Record<string, unknown>,
  pools: readonly AddressPool[],
): Record<string, unknown> {
  const current = Array.isArray(existing[POOLS_KEY]) ? (existing[POOLS_KEY] as unknown[]) : [];
  const kept = current.filter((entry) => {
    const { pools: parsed } = parseAddressPools([entry]);
    // Entries we cannot read (IPv6, malformed) are the user's business: keep them as written.
    if (parsed.length === 0) return true;
    return !pools.some((pool) => cidrsOverlap(pool.base, parsed[0].base));
  });
  return { ...existing, [POOLS_KEY]: [...kept, ...pools.map((pool) => ({ ...pool }))] };
}

/**
 * Writes `config` to `file` atomically (a temp file in the same directory, then a rename), after
 * copying a previous file to `daemon.json.steward-backup-<timestamp>`. Writes nothing, and makes no
 * backup, when the file already holds an equal object.
 */
export async function writeDaemonJson(
  file: string,
  config: Record<string, unknown>,
  options: { now: () => number },
): Promise<DaemonJsonWrite> {
  const previous = await readExisting(file);
  if (previous && isDeepStrictEqual(previous.parsed, config)) return { changed: false };

  const dir = path.dirname(file);
  await fs.mkdir(dir, { recursive: true });
  let backupPath: string | undefined;
  if (previous) {
    const stamp = new Date(options.now()).toISOString().replace(/[:.]/g, '-');
    backupPath = `${file}.steward-backup-${stamp}`;
    await fs.copyFile(file, backupPath, constants.COPYFILE_EXCL);
  }

  const temp = path.join(
    dir,
    `.${path.basename(file)}.steward-${process.pid}-${randomBytes(4).toString('hex')}.tmp`,
  );
  try {
    const handle = await fs.open(temp, 'wx', previous?.mode ?? 0o644);
    try {
      await handle.writeFile(`${JSON.stringify(config, null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, file);
  } catch (error) {
    await fs.rm(temp, { force: true });
    throw error;
  }
  return { changed: true, backupPath };
}

async function readExisting(file: string): Promise<{ parsed: unknown; mode: number } | undefined> {
  let text: string;
  let mode: number;
  try {
    [text, mode] = await Promise.all([
      fs.readFile(file, 'utf8'),
      fs.stat(file).then((stat) => stat.mode & 0o7777),
    ]);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    return { parsed: text.trim() === '' ? {} : JSON.parse(text), mode };
  } catch {
    // Unparseable: never equal to what we write, so it gets a backup and is replaced.
    return { parsed: undefined, mode };
  }
}

/**
 * The eval set's definition, pinned by content. At launch the definition and every file it uses
 * (datasets, sandbox compose files, and for a module definition each local module it imports)
 * are copied into `<log_dir>/.steward/definitions/<sha256>/`, keeping their layout, and the
 * workflow carries the hash. Every process loads the definition from there and checks the hash,
 * so editing a file never changes a running eval set, and any process that can read the log dir
 * (which every worker writes anyway) runs the same definition, wherever it was launched from.
 *
 * The hash and the layout are pure; the reading, writing and loading are the I/O around them.
 */
import { createHash, randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { Module } from 'node:module';
import * as path from 'node:path';
import { ErrorType, ExitCode, StewardError } from '../errors';
import { writeFailureReason } from '../logs/store';
import { loadDefinition, type LoadOptions } from './definition';
import { smokeDefinition, type SmokeCut } from '../definition/smoke';
import type { EvalSetDefinition } from '../definition/types';

/** Where snapshots live, under the log dir. */
export const SNAPSHOTS_DIR = path.join('.steward', 'definitions');
/** The snapshot's own record (hashed with the files): which file is the definition. */
export const MANIFEST_FILE = '.steward-snapshot.json';
/** Files the definition names by absolute path go here, under their absolute path. */
const ABSOLUTE_DIR = '.steward-absolute';

export interface SnapshotFile {
  /** Relative, `/`-separated. */
  path: string;
  content: Buffer;
}

export interface SnapshotManifest {
  version: 1;
  /** The definition's path inside the snapshot. */
  definition: string;
  /** Files the definition names by absolute path: that path -> the file's path in the snapshot. */
  absolute: Record<string, string>;
  /** A smoke run's cut of the definition (src/definition/smoke.ts); absent for a real run. */
  smoke?: SmokeCut;
}

/** What a snapshot is found by: the log dir it lives in and its hash. */
export interface SnapshotRef {
  logDir: string;
  hash: string;
  /** The definition's original path: named in messages, and where imports missing from the snapshot (packages) resolve. */
  origin?: string;
}

/** The files a definition used while it loaded, by absolute path. */
export interface UsedFiles {
  definition: string;
  /** Named relative to the definition, or imported by a module: they keep their layout. */
  relative: string[];
  /** Named by absolute path. */
  absolute: string[];
}

/** A snapshot that cannot be found or does not match its hash; never fixed by retrying. */
export class SnapshotError extends StewardError {
  readonly type = ErrorType.snapshot;
  constructor(message: string) {
    super(message, ExitCode.environment);
  }
}

// ---- pure -------------------------------------------------------------------------------------

/**
 * sha256 over the (relative path, content) pairs sorted by path. Each part is length-prefixed,
 * so no two different sets of files hash the same input.
 */
export function snapshotHash(files: readonly SnapshotFile[]): string {
  const hash = createHash('sha256');
  const sorted = [...files].sort((a, b) => compare(a.path, b.path));
  for (const file of sorted) {
    const name = Buffer.from(file.path, 'utf8');
    hash.update(`${name.length}:`);
    hash.update(name);
    hash.update(`${file.content.length}:`);
    hash.update(file.content);
  }
  return hash.digest('hex');
}

export function isSnapshotHash(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{64}$/.test(value);
}

export function snapshotDir(logDir: string, hash: string): string {
  return path.join(logDir, SNAPSHOTS_DIR, hash);
}

/**
 * Where each used file goes in the snapshot: files named relatively keep their layout under the
 * nearest directory that holds them all and the definition, so relative references (and
 * relative imports) resolve inside the snapshot as they did outside; files named by absolute
 * path go under their own path, and the manifest maps them.
 */
export function snapshotLayout(
  used: UsedFiles,
  smoke?: SmokeCut,
): {
  entries: { source: string; path: string }[];
  manifest: SnapshotManifest;
} {
  const root = commonDir([path.dirname(used.definition), ...used.relative.map(path.dirname)]);
  const placed = new Map<string, string>();
  const place = (source: string, at: string): string => {
    const existing = placed.get(source);
    if (existing !== undefined) return existing;
    placed.set(source, at);
    return at;
  };
  const definition = place(used.definition, toPosix(path.relative(root, used.definition)));
  for (const file of used.relative) place(file, toPosix(path.relative(root, file)));
  const absolute: Record<string, string> = {};
  for (const file of used.absolute) {
    absolute[file] = place(file, `${ABSOLUTE_DIR}/${toPosix(file).replace(/^\/+/, '')}`);
  }
  return {
    entries: [...placed].map(([source, at]) => ({ source, path: at })),
    manifest: { version: 1, definition, absolute, ...(smoke ? { smoke } : {}) },
  };
}

function commonDir(dirs: string[]): string {
  let common = dirs[0];
  for (const dir of dirs.slice(1)) {
    while (common !== path.dirname(common) && path.relative(common, dir).startsWith('..')) {
      common = path.dirname(common);
    }
  }
  return common;
}

function toPosix(file: string): string {
  return file.split(path.sep).join('/');
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// ---- taking a snapshot ------------------------------------------------------------------------

/**
 * Loads the definition at `file` (every problem is reported against the user's own files) and
 * notes every file it used: what {@link writeSnapshot} copies.
 */
export async function loadDefinitionFiles(
  file: string,
  options: LoadOptions = {},
): Promise<{ definition: EvalSetDefinition; used: UsedFiles }> {
  const source = path.resolve(file);
  const used: UsedFiles = { definition: source, relative: [], absolute: [] };
  const definition = await loadDefinition(source, {
    ...options,
    locate(ref, baseDir) {
      const located = path.resolve(baseDir, ref);
      (path.isAbsolute(ref) ? used.absolute : used.relative).push(located);
      return located;
    },
    onModuleFiles: (files) => used.relative.push(...files.filter((f) => f !== source)),
  });
  // A sample's `files` or `setup` value is looked up as a path and is text when no such file
  // exists (Inspect's rule); only what exists was used. A directory is used through its files.
  const isFile = async (file: string) =>
    (await fs.stat(file).catch(() => undefined))?.isFile() === true;
  const existing = async (files: string[]) => {
    const found = await Promise.all(files.map(isFile));
    return files.filter((_, i) => found[i]);
  };
  used.relative = await existing(used.relative);
  used.absolute = await existing(used.absolute);
  return { definition, used };
}

/**
 * Copies the definition and the files it used into `<logDir>/.steward/definitions/<hash>/`
 * (kept if it is there already: the same hash is the same content).
 *
 * @param smoke a smoke run's cut: recorded in the manifest, so it is part of the hash, and
 *   applied by every {@link loadSnapshot}.
 * @returns the hash.
 */
export async function writeSnapshot(
  used: UsedFiles,
  logDir: string,
  smoke?: SmokeCut,
): Promise<string> {
  const { entries, manifest } = snapshotLayout(used, smoke);
  const files: SnapshotFile[] = [
    ...(await Promise.all(
      entries.map(async (entry) => ({
        path: entry.path,
        content: await fs.readFile(entry.source),
      })),
    )),
    { path: MANIFEST_FILE, content: Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`) },
  ];
  const hash = snapshotHash(files);
  await writeFiles(snapshotDir(logDir, hash), files);
  return hash;
}

/**
 * {@link loadDefinitionFiles}, {@link writeSnapshot}, then {@link loadSnapshot}: what it returns
 * is what the eval set will run (a file edited between the reads shows up here, not mid-run).
 *
 * @param logDir the log dir, or how to choose it once the definition is read (its `log_dir`).
 */
export async function snapshotDefinition(
  file: string,
  logDir: string | ((definition: EvalSetDefinition) => string),
  options: LoadOptions = {},
): Promise<{ hash: string; logDir: string; definition: EvalSetDefinition }> {
  const { definition: original, used } = await loadDefinitionFiles(file, options);
  const dir = typeof logDir === 'string' ? logDir : logDir(original);
  const hash = await writeSnapshot(used, dir);
  const definition = await loadSnapshot({ logDir: dir, hash, origin: used.definition }, options);
  return { hash, logDir: dir, definition };
}

/** Writes the files into a temporary directory beside `target`, then renames it into place. */
async function writeFiles(target: string, files: SnapshotFile[]): Promise<void> {
  if (await isDirectory(target)) return;
  const tmp = path.join(path.dirname(target), `.tmp-${randomUUID()}`);
  try {
    for (const file of files) {
      const at = path.join(tmp, ...file.path.split('/'));
      await fs.mkdir(path.dirname(at), { recursive: true });
      await fs.writeFile(at, file.content);
    }
    await fs.rename(tmp, target).catch(async (err: unknown) => {
      // Another launch wrote the same snapshot first: the same content, so either will do.
      if (!(await isDirectory(target))) throw err;
    });
  } catch (err) {
    const error = new StewardError(
      `cannot write the definition's snapshot to ${target}: ${await writeFailureReason(target, err)}`,
      ExitCode.environment,
    );
    throw Object.assign(error, { type: ErrorType.logWrite });
  } finally {
    await fs.rm(tmp, { recursive: true, force: true }).catch(() => undefined);
  }
}

async function isDirectory(dir: string): Promise<boolean> {
  return (await fs.stat(dir).catch(() => undefined))?.isDirectory() ?? false;
}

// ---- loading a snapshot -----------------------------------------------------------------------

/**
 * Loads the definition a snapshot holds, after checking that its files still hash to `hash`.
 *
 * @throws SnapshotError when the snapshot is missing or was changed; ConfigError when the
 *   definition in it does not load.
 */
export async function loadSnapshot(
  ref: SnapshotRef,
  options: LoadOptions = {},
): Promise<EvalSetDefinition> {
  if (!isSnapshotHash(ref.hash)) {
    throw new SnapshotError(
      `definition hash ${JSON.stringify(ref.hash)} is not a sha256 (64 hex digits)`,
    );
  }
  const dir = snapshotDir(ref.logDir, ref.hash);
  const files = await readTree(dir).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    throw new SnapshotError(
      `the definition's snapshot ${dir} does not exist: ` +
        'the log dir must be the one the eval set was launched with, readable by every worker',
    );
  });
  const actual = snapshotHash(files);
  if (actual !== ref.hash) {
    throw new SnapshotError(
      `the definition's snapshot ${dir} does not match its hash: its files were changed after ` +
        'launch (remove that directory and launch again to take a new snapshot)',
    );
  }
  const manifest = JSON.parse(
    files.find((f) => f.path === MANIFEST_FILE)?.content.toString() ?? 'null',
  ) as SnapshotManifest | null;
  if (manifest?.version !== 1) {
    throw new SnapshotError(`the definition's snapshot ${dir} has no readable ${MANIFEST_FILE}`);
  }
  const smoke = manifest.smoke;
  if (
    smoke !== undefined &&
    (typeof smoke?.name !== 'string' || !Number.isInteger(smoke.samples) || smoke.samples < 1)
  ) {
    throw new SnapshotError(`the definition's snapshot ${dir} has an unreadable smoke cut`);
  }
  const entry = path.join(dir, ...manifest.definition.split('/'));
  snapshotOrigins.set(
    dir,
    ref.origin === undefined ? undefined : rootOf(ref.origin, manifest.definition),
  );
  installImportFallback();
  const definition = await loadDefinition(entry, {
    ...options,
    locate: (reference, baseDir) =>
      path.isAbsolute(reference)
        ? // A directory a sample's `files` names is not in the manifest, its files are: they sit
          // under it in the same layout.
          path.join(
            dir,
            ...(
              manifest.absolute[reference] ??
              `${ABSOLUTE_DIR}/${toPosix(reference).replace(/^\/+/, '')}`
            ).split('/'),
          )
        : path.join(baseDir, reference),
  });
  // A definition's `log_dir` is relative to where it was written, not to the snapshot.
  const { log_dir: _logDir, ...pinned } = definition;
  const loaded = { ...pinned, source: ref.origin ?? entry };
  return manifest.smoke ? smokeDefinition(loaded, manifest.smoke) : loaded;
}

/** Every file under `dir`, with its `/`-separated path relative to `dir`. */
async function readTree(dir: string): Promise<SnapshotFile[]> {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true });
  const files = entries.filter((entry) => !entry.isDirectory());
  return Promise.all(
    files.map(async (entry) => {
      const file = path.join(entry.parentPath, entry.name);
      return { path: toPosix(path.relative(dir, file)), content: await fs.readFile(file) };
    }),
  );
}

/** The directory that held the snapshot's root, from the definition's original path. */
function rootOf(origin: string, definition: string): string | undefined {
  const suffix = path.join(...definition.split('/'));
  const resolved = path.resolve(origin);
  if (!resolved.endsWith(`${path.sep}${suffix}`)) return undefined;
  return resolved.slice(0, -suffix.length - 1);
}

// ---- imports a module definition's snapshot does not hold -----------------------------------

/** Snapshot directory -> the directory its files were copied from, when known. */
const snapshotOrigins = new Map<string, string | undefined>();
let fallbackInstalled = false;

type ResolveFilename = (
  request: string,
  parent: { filename?: string | null } | undefined,
  isMain: boolean,
  options?: unknown,
) => string;

/**
 * Packages (node_modules) and Steward itself are not copied into a snapshot. A module loaded from
 * one resolves what the snapshot lacks as its original would have: from where it was copied
 * from, then `steward` as the Steward running it, then from this process's directory.
 */
function installImportFallback(): void {
  if (fallbackInstalled) return;
  fallbackInstalled = true;
  const modules = Module as unknown as { _resolveFilename: ResolveFilename };
  const resolve = modules._resolveFilename;
  modules._resolveFilename = function (this: unknown, request, parent, isMain, options) {
    try {
      return resolve.call(this, request, parent, isMain, options);
    } catch (err) {
      const filename = parent?.filename?.replace(/\?.*$/, '');
      const snapshot = filename && [...snapshotOrigins.keys()].find((d) => isInside(filename, d));
      if (!snapshot || (err as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw err;
      const origin = snapshotOrigins.get(snapshot);
      const originDir =
        origin === undefined
          ? undefined
          : path.dirname(path.join(origin, path.relative(snapshot, filename)));
      const candidates: (() => string)[] = [
        ...(originDir === undefined
          ? []
          : [() => require.resolve(request, { paths: [originDir] })]),
        ...(request === 'steward' ? [() => require.resolve('./index')] : []),
        () => require.resolve(request, { paths: [process.cwd()] }),
      ];
      for (const candidate of candidates) {
        try {
          return candidate();
        } catch {
          // the next place
        }
      }
      throw err;
    }
  };
}

function isInside(file: string, dir: string): boolean {
  const relative = path.relative(dir, file);
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative);
}

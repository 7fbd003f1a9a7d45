/**
 * Finds the `temporal` CLI, building it with Go, or else downloading the official release, the
 * first time it is nowhere to be found.
 *
 * No npm package ships the dev server, and `@temporalio/testing` downloads it at run time, which
 * fails offline. Where Go is installed the CLI is built from the Go module proxy (reachable where
 * only package registries are, as in CI); elsewhere the release archive is downloaded and checked
 * (./release.ts). Either result is cached under the package's `.tools/bin`.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ExitCode, StewardError } from '../errors';
import { packageRoot } from './config';
import {
  defaultReleaseBaseUrl,
  downloadRelease,
  releaseArchive,
  releaseArchiveName,
  releaseBaseUrlEnv,
  temporalReleaseVersion,
} from './release';

/** The CLI release Steward builds: the newest whose go.mod has no `replace`, so Go can build it from the module proxy. */
export const temporalCliVersion = 'v1.5.1';
export const temporalCliPackage = 'github.com/temporalio/cli/cmd/temporal';
/**
 * The SQLite driver the dev server is built with. v1.5.1 pins modernc.org/sqlite v1.34.1, whose
 * connections stay broken (SQLITE_INTERRUPT on every later query) once an overloaded server
 * cancels a request: 20 tasks × 1,000 samples wedged it for good. v1.44.3 has the fix (the
 * driver Temporal itself moved to).
 */
export const sqliteDriver = 'modernc.org/sqlite@v1.44.3';
/** What a cached `.tools/bin/temporal` was built from; another recipe means build again. */
export const buildRecipe = `${temporalCliPackage}@${temporalCliVersion} with ${sqliteDriver}`;

export interface FindTemporalBinaryOptions {
  /** Told about the one-time build or download, in one line. */
  onProgress?: (message: string) => void;
  /** Where `PATH` and {@link releaseBaseUrlEnv} come from. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Holds `.tools/bin`, where a built or downloaded CLI is kept. @default the Steward package root */
  root?: string;
  /** Which release a download fetches. @default process.platform */
  platform?: NodeJS.Platform;
  /** @default process.arch */
  arch?: string;
}

/**
 * The `temporal` executable: the one on `PATH`, else `<root>/.tools/bin/temporal` if its recipe
 * is {@link buildRecipe} or this platform's release archive, else one built there now with Go if
 * Go is on `PATH`, else one downloaded there now from the official release.
 *
 * A failed Go build is not followed by a download: a machine with Go may have no route to the
 * release (CI reaches only package registries), and the build's error is the one to fix.
 *
 * @throws StewardError (environment) when the build or the download fails or no release fits this
 * platform, (usage) when {@link releaseBaseUrlEnv} is not a URL
 */
export async function findTemporalBinary(options: FindTemporalBinaryOptions = {}): Promise<string> {
  const env = options.env ?? process.env;
  const platform = options.platform ?? process.platform;
  const arch = options.arch ?? process.arch;
  const onPath = await findOnPath('temporal', env);
  if (onPath !== undefined) return onPath;

  const binDir = path.join(options.root ?? packageRoot, '.tools', 'bin');
  const cached = path.join(binDir, 'temporal');
  const stamp = path.join(binDir, 'temporal.recipe');
  // The first line says what the binary is; a download's recipe goes on with where it came from.
  const madeFrom = (await readFile(stamp, 'utf8').catch(() => '')).split('\n')[0].trim();
  const usable = [buildRecipe, releaseArchiveName(platform, arch)];
  if ((await isExecutable(cached)) && usable.includes(madeFrom)) return cached;

  const go = await findOnPath('go', env);
  if (go !== undefined) {
    options.onProgress?.(
      `Building the Temporal CLI ${temporalCliVersion} with Go (one time, a few minutes)...`,
    );
    await buildInto(go, binDir, env);
    await writeFile(stamp, `${buildRecipe}\n`);
    return cached;
  }

  const archive = releaseArchive(platform, arch, env[releaseBaseUrlEnv] || defaultReleaseBaseUrl);
  options.onProgress?.(
    `Go is not on PATH, so downloading the Temporal CLI ${temporalReleaseVersion} from ` +
      `${archive.url} into ${cached} (one time)...`,
  );
  await downloadRelease(archive, binDir);
  return cached;
}

/**
 * Builds in a scratch module beside the target (the CLI and the SQLite driver as its
 * requirements), then renames: a concurrent `steward` never sees a half-written binary, and two
 * builds racing both end with a whole one.
 */
async function buildInto(go: string, binDir: string, env: NodeJS.ProcessEnv): Promise<void> {
  await mkdir(binDir, { recursive: true });
  const scratch = await mkdtemp(path.join(binDir, '.build-'));
  try {
    const output = path.join(scratch, 'temporal');
    const steps = [
      ['mod', 'init', 'steward.local/temporal-build'],
      ['get', `${temporalCliPackage}@${temporalCliVersion}`, sqliteDriver],
      ['build', '-o', output, temporalCliPackage],
    ];
    for (const args of steps) {
      const step = await run(go, args, { ...env, GOFLAGS: '-mod=mod' }, scratch);
      if (step.failure !== undefined) {
        throw new StewardError(
          `Building the Temporal CLI failed: go ${args.join(' ')} ${step.failure}. Its last output:\n` +
            tail(step.output, 20),
          ExitCode.environment,
        );
      }
    }
    await rename(output, path.join(binDir, 'temporal'));
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ failure?: string; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer) => (output += chunk.toString());
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', (error) => resolve({ failure: `could not run (${error.message})`, output }));
    child.on('close', (code, signal) => {
      if (code === 0) resolve({ output });
      else
        resolve({
          failure: code === null ? `was killed (${signal})` : `exited with ${code}`,
          output,
        });
    });
  });
}

function tail(text: string, lines: number): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

async function findOnPath(name: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, name);
    if (await isExecutable(candidate)) return candidate;
  }
  return undefined;
}

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

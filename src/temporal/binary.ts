/**
 * Finds the `temporal` CLI, building it with Go the first time if it is nowhere to be found.
 *
 * No npm package ships the dev server, and `@temporalio/testing` downloads it at run time, which
 * fails offline. Building from the Go module proxy needs only Go, and the result is cached under
 * the package's `.tools/bin`.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ExitCode, StewardError } from '../errors';
import { packageRoot } from './config';

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
  /** Told about the one-time build, which takes minutes. */
  onProgress?: (message: string) => void;
  /** Where `PATH` comes from. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Holds `.tools/bin`, where a built CLI is kept. @default the Steward package root */
  root?: string;
}

/**
 * The `temporal` executable: the one on `PATH`, else `<root>/.tools/bin/temporal` if it was built
 * from {@link buildRecipe}, else one built there now with Go.
 *
 * @throws StewardError (environment) when it has to be built and Go is missing or the build fails
 */
export async function findTemporalBinary(options: FindTemporalBinaryOptions = {}): Promise<string> {
  const env = options.env ?? process.env;
  const onPath = await findOnPath('temporal', env);
  if (onPath !== undefined) return onPath;

  const binDir = path.join(options.root ?? packageRoot, '.tools', 'bin');
  const cached = path.join(binDir, 'temporal');
  const stamp = path.join(binDir, 'temporal.recipe');
  const builtFrom = await readFile(stamp, 'utf8').catch(() => undefined);
  if ((await isExecutable(cached)) && builtFrom?.trim() === buildRecipe) return cached;

  const go = await findOnPath('go', env);
  if (go === undefined) {
    throw new StewardError(
      'The Temporal CLI is not installed and Go is not on PATH to build it. Install Go ' +
        `(https://go.dev/dl/), or the Temporal CLI (https://docs.temporal.io/cli), or set ` +
        'TEMPORAL_ADDRESS to use a Temporal server you already run.',
      ExitCode.environment,
    );
  }
  options.onProgress?.(
    `Building the Temporal CLI ${temporalCliVersion} with Go (one time, a few minutes)...`,
  );
  await buildInto(go, binDir, env);
  await writeFile(stamp, `${buildRecipe}\n`);
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

/**
 * Downloads the Temporal CLI's official release archive for this machine, for machines with
 * neither `temporal` nor Go. Temporal publishes each release with goreleaser:
 * `temporal_cli_<version>_<os>_<arch>.tar.gz` beside a `checksums.txt` of sha256 sums, under
 * `https://github.com/temporalio/cli/releases/download/v<version>/`. The archive is checked
 * against that file before anything is extracted from it.
 *
 * (`@temporalio/testing` asks https://temporal.download for an archive URL and trusts what it
 * gets over HTTPS; the published checksums are the stronger check, so they are the one used here.)
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { chmod, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream } from 'node:stream/web';
import { createGunzip } from 'node:zlib';
import * as tar from 'tar-stream';
import { ExitCode, StewardError } from '../errors';

/**
 * The release downloaded: the first line whose dev server carries modernc.org/sqlite v1.44.3,
 * the driver release that fixes the SQLITE_INTERRUPT wedge (the Go build patches v1.5.1 with it;
 * a download cannot be patched). Newest patch of that line when this was written.
 */
export const temporalReleaseVersion = '1.8.2';

/** Names a mirror laid out like GitHub's `releases/download` (folders `v<version>/`). */
export const releaseBaseUrlEnv = 'STEWARD_TEMPORAL_DOWNLOAD_URL';
export const defaultReleaseBaseUrl = 'https://github.com/temporalio/cli/releases/download';

/** Node's names to the release's. Temporal also builds Windows, which Steward does not run on. */
const releaseOs: Partial<Record<NodeJS.Platform, string>> = { linux: 'linux', darwin: 'darwin' };
const releaseArch: Partial<Record<string, string>> = { x64: 'amd64', arm64: 'arm64' };

export interface ReleaseArchive {
  /** `temporal_cli_<version>_<os>_<arch>.tar.gz`; also the identity in a cached binary's recipe. */
  name: string;
  url: string;
  checksumsUrl: string;
}

/** The archive name for this platform, or undefined where no release fits. */
export function releaseArchiveName(platform: NodeJS.Platform, arch: string): string | undefined {
  const os = releaseOs[platform];
  const goArch = releaseArch[arch];
  if (os === undefined || goArch === undefined) return undefined;
  return `temporal_cli_${temporalReleaseVersion}_${os}_${goArch}.tar.gz`;
}

/**
 * Where this platform's archive and its checksums are, under `baseUrl`.
 *
 * @throws StewardError (environment) where no release fits the platform, (usage) for a base URL
 * that is not one
 */
export function releaseArchive(
  platform: NodeJS.Platform,
  arch: string,
  baseUrl: string,
): ReleaseArchive {
  const name = releaseArchiveName(platform, arch);
  if (name === undefined) {
    throw new StewardError(
      `Neither the Temporal CLI nor Go is on PATH, and Steward downloads the CLI's release only ` +
        `for linux and darwin on x64 and arm64, not for ${platform}/${arch}. ${installHint}`,
      ExitCode.environment,
    );
  }
  let base: URL;
  try {
    base = new URL(baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
  } catch {
    throw new StewardError(`${releaseBaseUrlEnv} is not a URL (${baseUrl})`, ExitCode.usage);
  }
  const folder = new URL(`v${temporalReleaseVersion}/`, base);
  return {
    name,
    url: new URL(name, folder).href,
    checksumsUrl: new URL('checksums.txt', folder).href,
  };
}

/**
 * Downloads `archive`, checks its sha256 against the release's checksums, and puts its `temporal`
 * at `<binDir>/temporal` (executable) with a recipe at `<binDir>/temporal.recipe` naming the
 * archive, where it came from and its checksum. Everything is written in a scratch folder and
 * renamed into place, so a crash or a concurrent `steward` never sees a half binary; on any
 * failure the scratch folder, download included, is deleted.
 *
 * @throws StewardError (environment) when a download fails, the checksum does not match or the
 * archive has no `temporal` in it
 */
export async function downloadRelease(archive: ReleaseArchive, binDir: string): Promise<void> {
  await mkdir(binDir, { recursive: true });
  const scratch = await mkdtemp(path.join(binDir, '.download-'));
  try {
    const expected = checksumOf(archive, await (await get(archive.checksumsUrl)).text());
    const saved = path.join(scratch, archive.name);
    const actual = await save(archive.url, saved);
    if (actual !== expected) {
      throw new StewardError(
        `The Temporal CLI archive from ${archive.url} does not match its published checksum ` +
          `(sha256 ${actual}; ${archive.checksumsUrl} says ${expected}), so it was refused and ` +
          'deleted. Try again; if it persists, the download is being corrupted or tampered with.',
        ExitCode.environment,
      );
    }
    const binary = path.join(scratch, 'temporal');
    if (!(await extractTemporal(saved, binary))) {
      throw new StewardError(
        `The Temporal CLI archive from ${archive.url} has no \`temporal\` executable in it.`,
        ExitCode.environment,
      );
    }
    // The mode given at creation is cut by the umask.
    await chmod(binary, 0o755);
    await rename(binary, path.join(binDir, 'temporal'));
    const recipe = path.join(scratch, 'temporal.recipe');
    await writeFile(recipe, `${archive.name}\nfrom ${archive.url}\nsha256 ${actual}\n`);
    await rename(recipe, path.join(binDir, 'temporal.recipe'));
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

const installHint =
  'Install Go (https://go.dev/dl/) to build it, or the Temporal CLI ' +
  '(https://docs.temporal.io/cli), or set TEMPORAL_ADDRESS to use a Temporal server you ' +
  'already run.';

function downloadFailed(url: string, why: string): StewardError {
  return new StewardError(
    `Downloading the Temporal CLI failed: ${url} ${why}. Behind a mirror of the release, set ` +
      `${releaseBaseUrlEnv}. ${installHint}`,
    ExitCode.environment,
  );
}

async function get(url: string): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(url);
  } catch (error) {
    // fetch says only "fetch failed"; the reason (DNS, refused, TLS) is its cause. Not
    // `instanceof Error`: undici's errors come from another realm under Jest.
    throw downloadFailed(url, `could not be fetched (${reason(error)})`);
  }
  if (!response.ok || response.body === null) {
    await response.body?.cancel();
    throw downloadFailed(url, `answered ${response.status} ${response.statusText}`.trimEnd());
  }
  return response;
}

function reason(error: unknown): string {
  const { message, cause } = (error ?? {}) as { message?: unknown; cause?: { message?: unknown } };
  if (typeof cause?.message === 'string') return cause.message;
  return typeof message === 'string' ? message : String(error);
}

/** The sha256 `checksums.txt` gives for the archive (goreleaser's `<hex>  <name>` lines). */
function checksumOf(archive: ReleaseArchive, checksums: string): string {
  for (const line of checksums.split('\n')) {
    const match = /^([0-9a-fA-F]{64})\s+\*?(\S+)\s*$/.exec(line);
    if (match?.[2] === archive.name) return match[1].toLowerCase();
  }
  throw new StewardError(
    `${archive.checksumsUrl} lists no checksum for ${archive.name}, so the download cannot be ` +
      `checked. ${installHint}`,
    ExitCode.environment,
  );
}

/** Streams `url` to `file`, returning its sha256. */
async function save(url: string, file: string): Promise<string> {
  const response = await get(url);
  const hash = createHash('sha256');
  try {
    await pipeline(
      Readable.fromWeb(response.body as ReadableStream<Uint8Array>),
      async function* (chunks: AsyncIterable<Buffer>) {
        for await (const chunk of chunks) {
          hash.update(chunk);
          yield chunk;
        }
      },
      createWriteStream(file),
    );
  } catch (error) {
    throw downloadFailed(url, `broke off mid-download (${reason(error)})`);
  }
  return hash.digest('hex');
}

/** Writes the archive's top-level `temporal` file to `output`; false when there is none. */
async function extractTemporal(archive: string, output: string): Promise<boolean> {
  let found = false;
  const extract = tar.extract();
  extract.on('entry', (header, stream, next) => {
    if (!found && header.type === 'file' && path.posix.normalize(header.name) === 'temporal') {
      found = true;
      void pipeline(stream, createWriteStream(output, { mode: 0o755 })).then(
        () => next(),
        (error: unknown) => next(error),
      );
    } else {
      stream.on('end', () => next());
      stream.resume();
    }
  });
  try {
    await pipeline(createReadStream(archive), createGunzip(), extract);
  } catch (error) {
    throw new StewardError(
      `The Temporal CLI archive ${path.basename(archive)} could not be unpacked ` +
        `(${reason(error)}).`,
      ExitCode.environment,
    );
  }
  return found;
}

/**
 * The Temporal CLI for machines with neither `temporal` nor Go: the official release archive,
 * downloaded over real HTTP from a local server laid out like GitHub's releases, checked against
 * its checksums file. Lookups are injected (PATH, platform, the release URL), so the machine's own
 * `temporal` and Go are never seen.
 */
import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import {
  access,
  chmod,
  constants,
  mkdir,
  readdir,
  readFile,
  rm,
  writeFile,
} from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import * as tar from 'tar-stream';
import { ExitCode, StewardError } from '../src/errors';
import { buildRecipe, findTemporalBinary } from '../src/temporal/binary';
import {
  defaultReleaseBaseUrl,
  releaseArchive,
  releaseArchiveName,
  releaseBaseUrlEnv,
  temporalReleaseVersion,
} from '../src/temporal/release';

const scratch = path.join(os.tmpdir(), `steward-download-${randomUUID().slice(0, 8)}`);
const version = temporalReleaseVersion;
const archiveName = `temporal_cli_${version}_linux_amd64.tar.gz`;
const platform = { platform: 'linux', arch: 'x64' } as const;

async function freshDir(name: string): Promise<string> {
  const dir = path.join(scratch, `${name}-${randomUUID().slice(0, 8)}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

/** A release archive as goreleaser makes it: LICENSE and `temporal` at the top level. */
async function releaseTarGz(script: string): Promise<Buffer> {
  const pack = tar.pack();
  pack.entry({ name: 'LICENSE', mode: 0o644 }, 'MIT\n');
  pack.entry({ name: 'temporal', mode: 0o755 }, `#!/bin/sh\n${script}\n`);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return gzipSync(Buffer.concat(chunks));
}

function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** A file's body, or a handler that answers for it. */
type Asset = Buffer | string | ((res: http.ServerResponse) => void);

/** Serves `files` by path and records every request path. */
interface ReleaseServer {
  url: string;
  files: Map<string, Asset>;
  requests: string[];
  close(): Promise<void>;
}

async function releaseServer(): Promise<ReleaseServer> {
  const files = new Map<string, Asset>();
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    const body = files.get(req.url ?? '');
    if (body === undefined) {
      res.writeHead(404, 'Not Found').end('no such asset');
      return;
    }
    if (typeof body === 'function') {
      body(res);
      return;
    }
    res.writeHead(200, { 'content-length': Buffer.byteLength(body) }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mirror/releases/download`,
    files,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

let server: ReleaseServer;
let archive: Buffer;
const folder = `/mirror/releases/download/v${version}`;

beforeAll(async () => {
  server = await releaseServer();
  archive = await releaseTarGz(`echo "temporal version ${version} (from the test archive)"`);
});
afterAll(async () => {
  await server.close();
  await rm(scratch, { recursive: true, force: true });
});

beforeEach(() => {
  server.files.clear();
  server.requests.length = 0;
});

/** Publishes the archive with a checksums file like goreleaser's (other platforms listed too). */
function publish(checksum = sha256(archive)): void {
  server.files.set(`${folder}/${archiveName}`, archive);
  server.files.set(
    `${folder}/checksums.txt`,
    [
      `${sha256('darwin')}  temporal_cli_${version}_darwin_arm64.tar.gz`,
      `${checksum}  ${archiveName}`,
      `${sha256('windows')}  temporal_cli_${version}_windows_amd64.zip`,
      '',
    ].join('\n'),
  );
}

async function executable(file: string, script: string): Promise<string> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `#!/bin/sh\n${script}\n`);
  await chmod(file, 0o755);
  return file;
}

/** A machine with nothing on PATH but what `bin` holds, the release served locally. */
async function machine(): Promise<{ dir: string; root: string; env: NodeJS.ProcessEnv }> {
  const dir = await freshDir('machine');
  await mkdir(path.join(dir, 'bin'));
  const env = { PATH: path.join(dir, 'bin'), [releaseBaseUrlEnv]: server.url };
  return { dir, root: path.join(dir, 'root'), env };
}

async function failure(promise: Promise<unknown>): Promise<StewardError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StewardError);
  expect((error as StewardError).exitCode).toBe(ExitCode.environment);
  return error as StewardError;
}

describe('downloading the Temporal CLI release', () => {
  it('downloads, checks, extracts and caches it, saying what and where in one line', async () => {
    const { root, env } = await machine();
    const progress: string[] = [];
    const onProgress = (m: string) => progress.push(m);
    publish();

    const binary = await findTemporalBinary({ env, root, ...platform, onProgress });

    const binDir = path.join(root, '.tools', 'bin');
    expect(binary).toBe(path.join(binDir, 'temporal'));
    await access(binary, constants.X_OK);
    const { stdout } = await promisify(execFile)(binary, ['--version']);
    expect(stdout).toBe(`temporal version ${version} (from the test archive)\n`);
    expect(progress).toEqual([
      `Go is not on PATH, so downloading the Temporal CLI ${version} from ` +
        `${server.url}/v${version}/${archiveName} into ${binary} (one time)...`,
    ]);
    // Checksums first, so nothing unverifiable is fetched; then the archive, once.
    expect(server.requests).toEqual([`${folder}/checksums.txt`, `${folder}/${archiveName}`]);
    // No scratch folder or archive left; the recipe names the archive, its source and checksum.
    expect((await readdir(binDir)).sort()).toEqual(['temporal', 'temporal.recipe']);
    expect(await readFile(path.join(binDir, 'temporal.recipe'), 'utf8')).toBe(
      `${archiveName}\nfrom ${server.url}/v${version}/${archiveName}\nsha256 ${sha256(archive)}\n`,
    );

    // Cached: the second call, even with Go now on PATH, neither downloads nor builds.
    await executable(path.join(env.PATH!, 'go'), 'echo "go must not run" >&2; exit 1');
    expect(await findTemporalBinary({ env, root, ...platform, onProgress })).toBe(binary);
    expect(server.requests).toHaveLength(2);
    expect(progress).toHaveLength(1);
  });

  it('refuses an archive whose checksum does not match, leaving nothing behind', async () => {
    const { root, env } = await machine();
    const published = sha256('another archive');
    publish(published);

    const error = await failure(findTemporalBinary({ env, root, ...platform }));

    expect(error.message).toContain(`${server.url}/v${version}/${archiveName}`);
    expect(error.message).toContain(
      `does not match its published checksum (sha256 ${sha256(archive)}; ` +
        `${server.url}/v${version}/checksums.txt says ${published}), so it was refused and deleted`,
    );
    expect(await readdir(path.join(root, '.tools', 'bin'))).toEqual([]);
  });

  it('says which URL answered 404 when the archive is missing, leaving nothing behind', async () => {
    const { root, env } = await machine();
    publish();
    server.files.delete(`${folder}/${archiveName}`);

    const error = await failure(findTemporalBinary({ env, root, ...platform }));

    expect(error.message).toMatch(
      new RegExp(
        `^Downloading the Temporal CLI failed: ${escape(server.url)}/v${escape(version)}/` +
          `${escape(archiveName)} answered 404 Not Found\\. .*${releaseBaseUrlEnv}.*Install Go`,
      ),
    );
    expect(await readdir(path.join(root, '.tools', 'bin'))).toEqual([]);
  });

  it('says why when the mirror cannot be reached at all, and what else to do', async () => {
    const { root } = await machine();
    const closed = await releaseServer();
    await closed.close();
    const env = { PATH: path.join(root, 'none'), [releaseBaseUrlEnv]: closed.url };

    const error = await failure(findTemporalBinary({ env, root, ...platform }));

    expect(error.message).toContain(
      `Downloading the Temporal CLI failed: ${closed.url}/v${version}/checksums.txt could not be ` +
        'fetched (connect ECONNREFUSED',
    );
    expect(error.message).toMatch(/Install Go .*Temporal CLI .*TEMPORAL_ADDRESS/);
    expect(await readdir(path.join(root, '.tools', 'bin'))).toEqual([]);
  });

  it('says so when the archive breaks off mid-download, leaving nothing behind', async () => {
    const { root, env } = await machine();
    publish();
    server.files.set(`${folder}/${archiveName}`, (res) => {
      res.writeHead(200, { 'content-length': archive.length });
      res.write(archive.subarray(0, 100), () => res.destroy());
    });

    const error = await failure(findTemporalBinary({ env, root, ...platform }));

    expect(error.message).toContain(
      `Downloading the Temporal CLI failed: ${server.url}/v${version}/${archiveName} broke off ` +
        'mid-download (',
    );
    expect(await readdir(path.join(root, '.tools', 'bin'))).toEqual([]);
  });

  it('refuses an archive the checksums file does not list', async () => {
    const { root, env } = await machine();
    publish();
    server.files.set(`${folder}/checksums.txt`, `${sha256('x')}  temporal_cli_other.tar.gz\n`);

    const error = await failure(findTemporalBinary({ env, root, ...platform }));

    expect(error.message).toContain(`checksums.txt lists no checksum for ${archiveName}`);
    expect(server.requests).toEqual([`${folder}/checksums.txt`]);
    expect(await readdir(path.join(root, '.tools', 'bin'))).toEqual([]);
  });

  it('refuses an archive with no temporal in it', async () => {
    const { root, env } = await machine();
    const pack = tar.pack();
    pack.entry({ name: 'LICENSE' }, 'MIT\n');
    pack.finalize();
    const chunks: Buffer[] = [];
    for await (const chunk of pack) chunks.push(chunk as Buffer);
    archive = gzipSync(Buffer.concat(chunks));
    try {
      publish();
      const error = await failure(findTemporalBinary({ env, root, ...platform }));
      expect(error.message).toContain('has no `temporal` executable in it');
      expect(await readdir(path.join(root, '.tools', 'bin'))).toEqual([]);
    } finally {
      archive = await releaseTarGz(`echo "temporal version ${version} (from the test archive)"`);
    }
  });

  it('says so plainly on a platform without a release, downloading nothing', async () => {
    const { root, env } = await machine();
    publish();
    const error = await failure(
      findTemporalBinary({ env, root, platform: 'freebsd', arch: 'x64' }),
    );
    expect(error.message).toMatch(
      /^Neither the Temporal CLI nor Go is on PATH, and Steward downloads .* only for linux and darwin on x64 and arm64, not for freebsd\/x64\. Install Go/,
    );
    expect(server.requests).toEqual([]);
  });
});

describe('choosing where the Temporal CLI comes from', () => {
  it('takes the one on PATH, without building or downloading', async () => {
    const { dir, root, env } = await machine();
    publish();
    const onPath = await executable(path.join(dir, 'bin', 'temporal'), 'exit 0');
    await executable(path.join(dir, 'bin', 'go'), 'echo "go must not run" >&2; exit 1');
    expect(await findTemporalBinary({ env, root, ...platform })).toBe(onPath);
    expect(server.requests).toEqual([]);
  });

  it('builds with Go when Go is on PATH, never downloading', async () => {
    const { dir, root, env } = await machine();
    publish();
    const record = path.join(dir, 'go-args');
    await executable(
      path.join(dir, 'bin', 'go'),
      [
        `echo "$1" >> ${record}`,
        'if [ "$1" = build ]; then printf \'#!/bin/sh\\n\' > "$3"; /bin/chmod +x "$3"; fi',
      ].join('\n'),
    );
    const progress: string[] = [];

    const binary = await findTemporalBinary({
      env,
      root,
      ...platform,
      onProgress: (m) => progress.push(m),
    });

    expect(binary).toBe(path.join(root, '.tools', 'bin', 'temporal'));
    expect(await readFile(record, 'utf8')).toBe('mod\nget\nbuild\n');
    expect(progress).toEqual([expect.stringMatching(/^Building the Temporal CLI .* with Go/)]);
    expect(await readFile(path.join(root, '.tools', 'bin', 'temporal.recipe'), 'utf8')).toBe(
      `${buildRecipe}\n`,
    );
    expect(server.requests).toEqual([]);
  });

  it('downloads over a cached binary of another recipe or platform', async () => {
    const { root, env } = await machine();
    publish();
    const binDir = path.join(root, '.tools', 'bin');
    await executable(path.join(binDir, 'temporal'), 'echo stale');
    const otherArch = releaseArchiveName('linux', 'arm64')!;
    await writeFile(path.join(binDir, 'temporal.recipe'), `${otherArch}\nfrom elsewhere\n`);

    await findTemporalBinary({ env, root, ...platform });

    expect(server.requests).toEqual([`${folder}/checksums.txt`, `${folder}/${archiveName}`]);
    const recipe = await readFile(path.join(binDir, 'temporal.recipe'), 'utf8');
    expect(recipe.split('\n')[0]).toBe(archiveName);
  });

  it('lays out URLs as the official GitHub release does, under a mirror too', () => {
    expect(defaultReleaseBaseUrl).toBe('https://github.com/temporalio/cli/releases/download');
    expect(releaseArchive('darwin', 'arm64', defaultReleaseBaseUrl)).toEqual({
      name: `temporal_cli_${version}_darwin_arm64.tar.gz`,
      url: `https://github.com/temporalio/cli/releases/download/v${version}/temporal_cli_${version}_darwin_arm64.tar.gz`,
      checksumsUrl: `https://github.com/temporalio/cli/releases/download/v${version}/checksums.txt`,
    });
    expect(releaseArchive('linux', 'x64', 'https://mirror.example/temporal/').url).toBe(
      `https://mirror.example/temporal/v${version}/${archiveName}`,
    );
    expect(releaseArchiveName('linux', 'arm64')).toBe(`temporal_cli_${version}_linux_arm64.tar.gz`);
    expect(releaseArchiveName('win32', 'x64')).toBeUndefined();
    expect(releaseArchiveName('linux', 'ia32')).toBeUndefined();
    expect(() => releaseArchive('linux', 'x64', 'not a url')).toThrow(
      `${releaseBaseUrlEnv} is not a URL (not a url)`,
    );
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

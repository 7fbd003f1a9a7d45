/**
 * Images for sandboxes: make sure a service's image is on the daemon (pulling it if not), and
 * build `steward-busybox`, a tiny self-contained image made from the host's static busybox, for
 * hosts with no registry (CI, air-gapped machines, tests).
 */

import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { promisify } from 'node:util';

import type Docker from 'dockerode';
import * as tar from 'tar-stream';

import { dockerUnreachable } from '../docker/preflight';
import { ExitCode, StewardError } from '../errors';

/** The busybox image {@link ensureBusyboxImage} builds by default. */
export const BUSYBOX_IMAGE = 'steward-busybox:latest';

/** Debian's `busybox-static`: statically linked, so it runs in an image with nothing else. */
const BUSYBOX_BINARY = '/bin/busybox';

/** Whether the daemon has `image` locally. */
export async function hasImage(docker: Docker, image: string): Promise<boolean> {
  try {
    await docker.getImage(image).inspect();
    return true;
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) return false;
    throw dockerUnreachable(docker, error) ?? error;
  }
}

/** Makes sure `image` is on the daemon, pulling it when missing. */
export async function ensureImage(docker: Docker, image: string): Promise<void> {
  if (await hasImage(docker, image)) return;
  try {
    const stream = await docker.pull(image);
    await new Promise<void>((resolve, reject) =>
      docker.modem.followProgress(stream, (error) => (error ? reject(error) : resolve())),
    );
  } catch (error) {
    throw new StewardError(
      `sandbox image ${image} is not on the Docker daemon and could not be pulled: ${(error as Error).message}`,
      ExitCode.environment,
    );
  }
}

/**
 * Builds `tag` from the host's `/bin/busybox` (Debian package `busybox-static`) with a symlink per
 * applet, unless the daemon already has it. Its default command keeps a container alive
 * (`tail -f /dev/null`), so it serves as a sandbox image as is.
 * Returns whether it built the image.
 */
export async function ensureBusyboxImage(
  docker: Docker,
  tag: string = BUSYBOX_IMAGE,
): Promise<boolean> {
  if (await hasImage(docker, tag)) return false;
  const binary = await fs.readFile(BUSYBOX_BINARY).catch((error: Error) => {
    throw new StewardError(
      `cannot build ${tag}: ${BUSYBOX_BINARY} is missing (install busybox-static): ${error.message}`,
      ExitCode.environment,
    );
  });
  const { stdout } = await promisify(execFile)(BUSYBOX_BINARY, ['--list-full']);
  const applets = stdout.split('\n').filter((line) => line && line !== 'bin/busybox');

  const pack = tar.pack();
  const add = (header: tar.Headers, content?: Buffer): void => {
    pack.entry({ uid: 0, gid: 0, mtime: new Date(0), ...header }, content);
  };
  const dirs = new Set([
    'bin',
    'sbin',
    'usr',
    'usr/bin',
    'usr/sbin',
    'etc',
    'root',
    'dev',
    'proc',
    'sys',
  ]);
  for (const applet of applets) dirs.add(applet.split('/').slice(0, -1).join('/'));
  for (const dir of [...dirs].filter(Boolean).sort())
    add({ name: dir, type: 'directory', mode: 0o755 });
  add({ name: 'tmp', type: 'directory', mode: 0o1777 });
  add({ name: 'bin/busybox', type: 'file', mode: 0o755 }, binary);
  for (const applet of applets)
    add({ name: applet, type: 'symlink', linkname: '/bin/busybox', mode: 0o777 });
  // A passwd and group so `user:` and `id` work with names, as in any base image.
  add(
    { name: 'etc/passwd', type: 'file', mode: 0o644 },
    Buffer.from(
      'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n',
    ),
  );
  add(
    { name: 'etc/group', type: 'file', mode: 0o644 },
    Buffer.from('root:x:0:\nnogroup:x:65534:\n'),
  );
  pack.finalize();

  const { repo, tag: version } = splitTag(tag);
  const progress = await docker.importImage(pack, {
    repo,
    tag: version,
    changes: ['CMD ["tail", "-f", "/dev/null"]', 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin'],
  });
  await new Promise<void>((resolve, reject) =>
    docker.modem.followProgress(progress, (error, output: Array<{ error?: string }>) => {
      const failed = error?.message ?? output.find((line) => line.error)?.error;
      if (failed) reject(new StewardError(`cannot import ${tag}: ${failed}`, ExitCode.environment));
      else resolve();
    }),
  );
  return true;
}

/** `registry:5000/name:tag` into its repository and tag (`latest` when none). */
function splitTag(image: string): { repo: string; tag: string } {
  const colon = image.lastIndexOf(':');
  if (colon > image.lastIndexOf('/')) {
    return { repo: image.slice(0, colon), tag: image.slice(colon + 1) };
  }
  return { repo: image, tag: 'latest' };
}

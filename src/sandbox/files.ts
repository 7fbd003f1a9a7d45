/**
 * Files in and out of a container through the Engine API's archive endpoints (what `docker cp`
 * uses): no shell or tools needed in the image.
 */

import { posix } from 'node:path';
import type { Readable } from 'node:stream';

import type Docker from 'dockerode';
import * as tar from 'tar-stream';

/** Largest file {@link readContainerFile} returns: a guard against reading a disk image into memory. */
export const MAX_READ_BYTES = 100 * 1024 * 1024;

/** Symlinks followed before giving up (a loop, most likely). */
const MAX_LINK_HOPS = 8;

/**
 * Writes `content` to the absolute `file` in `container`. The daemon creates missing parent
 * directories; the file belongs to the container's user, mode 0644.
 */
export async function writeContainerFile(
  container: Docker.Container,
  file: string,
  content: string | Buffer,
): Promise<void> {
  const pack = tar.pack();
  const body = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  pack.entry({ name: file.replace(/^\/+/, ''), mode: 0o644, mtime: new Date() }, body);
  pack.finalize();
  // Extracting at `/` with the full path as the entry name is what lets the daemon create the
  // parent directories; `copyUIDGID` hands the file to the container's user.
  await container.putArchive(await collect(pack), { path: '/', copyUIDGID: 'true' });
}

/** Reads the absolute `file` from `container` as UTF-8, following symlinks. */
export async function readContainerFile(
  container: Docker.Container,
  file: string,
): Promise<string> {
  let target = file;
  for (let hop = 0; hop <= MAX_LINK_HOPS; hop++) {
    const entry = await readEntry(container, target);
    if (entry.type === 'file') return entry.content.toString('utf8');
    if (entry.type === 'directory') throw new Error(`sandbox: ${file} is a directory, not a file`);
    if (entry.type !== 'symlink' || !entry.linkname) {
      throw new Error(`sandbox: ${file} is not a regular file`);
    }
    target = posix.resolve(posix.dirname(target), entry.linkname);
  }
  throw new Error(`sandbox: ${file}: too many levels of symbolic links`);
}

async function readEntry(
  container: Docker.Container,
  file: string,
): Promise<{ type: tar.Headers['type']; linkname?: string | null; content: Buffer }> {
  let archive: NodeJS.ReadableStream;
  try {
    archive = await container.getArchive({ path: file });
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) {
      throw new Error(`sandbox: no such file: ${file}`, { cause: error });
    }
    throw error;
  }
  return new Promise((resolve, reject) => {
    const extract = tar.extract();
    let found = false;
    extract.on('entry', (header, stream, next) => {
      if (found) {
        // Only the first entry is the file asked for (a directory would bring its contents).
        stream.resume();
        stream.on('end', next);
        return;
      }
      found = true;
      if (header.type !== 'file') {
        resolve({ type: header.type, linkname: header.linkname, content: Buffer.alloc(0) });
        stream.resume();
        stream.on('end', next);
        return;
      }
      if ((header.size ?? 0) > MAX_READ_BYTES) {
        reject(
          new Error(
            `sandbox: ${file} is ${header.size} bytes, more than the ${MAX_READ_BYTES} a read may return`,
          ),
        );
        extract.destroy();
        return;
      }
      collect(stream).then((content) => {
        resolve({ type: 'file', content });
        next();
      }, reject);
    });
    extract.on('finish', () => {
      if (!found) reject(new Error(`sandbox: no such file: ${file}`));
    });
    extract.on('error', reject);
    archive.on('error', reject);
    archive.pipe(extract);
  });
}

function collect(stream: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

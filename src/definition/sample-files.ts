/**
 * A sample's `files` and `setup`, read as Inspect reads them: a value that names a file (or, for
 * `files`, a directory) relative to the dataset is that file's contents; a `data:` URL is its
 * decoded bytes; anything else is the text itself. They are read once, when the dataset loads:
 * the sample then carries bytes, so every worker and every retry writes the same thing.
 */

import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';

/** What a value names on disk; `undefined` when it names nothing there (it is then text). */
export type FileLookup = (
  ref: string,
) =>
  | { type: 'file'; content: Buffer }
  | { type: 'directory'; files: Array<{ path: string; content: Buffer }> }
  | undefined;

/** A lookup that finds nothing: every value is a `data:` URL or text. */
export const NO_FILES: FileLookup = () => undefined;

/**
 * Looks values up relative to `baseDir`, through `locate` (which a snapshot uses to record and
 * redirect the files a definition uses). Errors other than "no such file" are thrown: a file
 * that exists but cannot be read must not quietly become its own name as text.
 */
export function diskLookup(
  baseDir: string,
  locate: (ref: string, baseDir: string) => string = (ref, dir) => path.resolve(dir, ref),
): FileLookup {
  return (ref) => {
    // An empty value is empty contents, never the dataset's own directory (Inspect's rule too).
    if (ref === '' || ref.includes('\0')) return undefined;
    const located = locate(ref, baseDir);
    const stat = statOrUndefined(located);
    if (stat === undefined) return undefined;
    if (!stat.isDirectory()) return { type: 'file', content: readFileSync(located) };
    const entries = readdirSync(located, { recursive: true, withFileTypes: true });
    const files = entries
      .filter((entry) => !entry.isDirectory())
      .map((entry) => {
        const relative = path.relative(located, path.join(entry.parentPath, entry.name));
        const posix = relative.split(path.sep).join('/');
        return { path: posix, content: readFileSync(locate(`${ref}/${posix}`, baseDir)) };
      })
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return { type: 'directory', files };
  };
}

function statOrUndefined(file: string): ReturnType<typeof statSync> | undefined {
  try {
    return statSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // Text that merely looks like a path: not there, too long to be one, or through a file.
    if (code === 'ENOENT' || code === 'ENAMETOOLONG' || code === 'ENOTDIR') return undefined;
    throw error;
  }
}

/**
 * A sample's `files` as sandbox path -> bytes (base64). A directory becomes one entry per file
 * under its sandbox path.
 *
 * @throws Error naming the entry that cannot be read.
 */
export function readSampleFiles(
  files: Record<string, string>,
  lookup: FileLookup,
): Record<string, string> {
  const read: Record<string, string> = {};
  for (const [target, value] of Object.entries(files)) {
    const found = readValue(value, lookup, `files["${target}"]`);
    if (found.type === 'directory') {
      for (const file of found.files) {
        read[`${target.replace(/\/+$/, '')}/${file.path}`] = file.content.toString('base64');
      }
    } else read[target] = found.content.toString('base64');
  }
  return read;
}

/** A sample's `setup` script as text. @throws Error when it names a directory or cannot be read. */
export function readSetup(setup: string, lookup: FileLookup): string {
  const found = readValue(setup, lookup, 'setup');
  if (found.type === 'directory') {
    throw new Error(`setup: ${setup} is a directory; expected a script or a file holding one`);
  }
  return found.content.toString('utf8');
}

function readValue(
  value: string,
  lookup: FileLookup,
  where: string,
): NonNullable<ReturnType<FileLookup>> {
  if (/^data:/i.test(value)) return { type: 'file', content: decodeDataUrl(value, where) };
  if (/^https?:\/\//i.test(value)) {
    throw new Error(
      `${where}: URLs are not fetched (${value}); save the file beside the dataset and name it`,
    );
  }
  let found: ReturnType<FileLookup>;
  try {
    found = lookup(value);
  } catch (error) {
    throw new Error(`${where}: cannot read ${value}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return found ?? { type: 'file', content: Buffer.from(value, 'utf8') };
}

/** `data:[<media type>][;base64],<data>` (RFC 2397). */
export function decodeDataUrl(url: string, where = 'data URL'): Buffer {
  const comma = url.indexOf(',');
  if (comma < 0) throw new Error(`${where}: a data: URL needs a comma before its data`);
  const header = url.slice(5, comma);
  const data = url.slice(comma + 1);
  if (/;base64$/i.test(header)) return Buffer.from(data, 'base64');
  try {
    return Buffer.from(decodeURIComponent(data), 'utf8');
  } catch {
    throw new Error(`${where}: the data: URL's text is not valid percent-encoding`);
  }
}

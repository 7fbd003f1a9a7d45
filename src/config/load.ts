/**
 * Reading configuration files: the I/O half of configuration, kept apart from validation (which
 * is pure, in `validate.ts` and `settings.ts`). Every failure is a {@link ConfigError} naming the
 * file, and the line for YAML syntax errors.
 */

import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { ConfigError } from '../errors';
import { STEWARD_YAML } from './settings';

/**
 * Reads a text file, or explains why it cannot be read.
 *
 * @param what what the file is for, in messages: `dataset file not found`.
 * @throws ConfigError naming `file`.
 */
export async function readTextFile(file: string, what: string): Promise<string> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (error) {
    const target = await danglingLinkTarget(file, error as NodeJS.ErrnoException);
    const message =
      target === undefined
        ? unreadableReason(what, error as NodeJS.ErrnoException)
        : `${what} not found: it is a symbolic link to ${target}, which does not exist`;
    throw new ConfigError([{ file, message }]);
  }
}

/** Where `file` points, when it is a symbolic link to nothing (a moved or unmounted target). */
async function danglingLinkTarget(
  file: string,
  error: NodeJS.ErrnoException,
): Promise<string | undefined> {
  if (error.code !== 'ENOENT') return undefined;
  return fs.readlink(file).catch(() => undefined);
}

function unreadableReason(what: string, error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case 'ENOENT':
      return `${what} not found`;
    case 'EACCES':
    case 'EPERM':
      return `cannot read ${what}: permission denied`;
    case 'EISDIR':
      return `cannot read ${what}: it is a directory`;
    default:
      return `cannot read ${what}: ${error.message}`;
  }
}

/**
 * Parses one YAML document. An empty document is `null`.
 *
 * @throws ConfigError with every syntax error at its line (and column).
 */
export function parseYaml(text: string, file: string): unknown {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      doc.errors.map((error) => {
        const { line, col } = lineCounter.linePos(error.pos[0]);
        // ConfigIssue has no column field, so the column goes in the message.
        return { file, line, message: `invalid YAML at column ${col}: ${error.message}` };
      }),
    );
  }
  return doc.toJS();
}

/**
 * Reads `_steward.yaml` from `dir`, parsed but not validated (`resolveSettings` does that).
 *
 * @returns `undefined` when the directory has no `_steward.yaml`.
 * @throws ConfigError when it exists but cannot be read or is not valid YAML.
 */
export async function loadStewardYaml(dir: string): Promise<unknown> {
  const file = path.join(dir, STEWARD_YAML);
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError([
      { file, message: unreadableReason(STEWARD_YAML, error as NodeJS.ErrnoException) },
    ]);
  }
  return parseYaml(text, file);
}

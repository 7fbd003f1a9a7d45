/**
 * Writes Inspect AI logs into a log dir, from Steward's records there: one `.eval` per task and
 * the eval set's `eval-set.json`. Each file is written to a temporary file in the same directory
 * and renamed into place, so a reader (`inspect view` polling a running set) never sees half a
 * file and a crash never leaves one.
 *
 * One owner: a task's `.eval` is written by its task's activities only (src/activities/task.ts),
 * which its workflow calls one at a time, or by `steward logs export` on a log dir at rest.
 */
import { createWriteStream, promises as fs, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ZipFile } from 'yazl';
import type { TaskIdentity } from '../../definition/identity';
import { logWriteError, type LogStore } from '../store';
import type { Scoring } from '../../core/reducers';
import {
  buildInspectLog,
  evalSetManifest,
  inspectJson,
  type InspectLog,
  type InspectStatus,
} from './build';

const PACKAGE_ROOT = path.resolve(__dirname, '..', '..', '..');

let stewardVersion: string | undefined;
function version(): string {
  stewardVersion ??= (
    JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }
  ).version;
  return stewardVersion;
}

export interface WrittenLog {
  file: string;
  status: InspectStatus;
  samples: number;
}

/**
 * (Re)writes a task's `.eval` from its records. `ended`: the task has ended and its summary is
 * written, so the log is final (`success` or `error`); otherwise it is `started`, with the
 * samples recorded so far. Nothing is written for a task that has not run (no `task.json`).
 */
export async function writeTaskInspectLog(
  store: LogStore,
  task: string,
  options: { ended: boolean; sampleIds?: Array<string | number>; scoring?: Scoring },
): Promise<WrittenLog | undefined> {
  const identity = await store.readTaskIdentity(task);
  if (!identity) return undefined;
  const [samples, errors, summary] = await Promise.all([
    store.readSamples(task),
    store.readSampleErrors(task),
    options.ended ? store.readTaskSummary(task) : Promise.resolve(undefined),
  ]);
  const log = buildInspectLog({
    identity,
    samples,
    errors,
    summary,
    sampleIds: options.sampleIds,
    scoring: options.scoring,
    stewardVersion: version(),
  });
  const file = path.join(store.dir, log.fileName);
  await writeZip(file, log);
  return { file, status: log.status, samples: samples.length + errors.length };
}

/** Writes `<log_dir>/eval-set.json` for the eval set's tasks, in the definition's order. */
export async function writeEvalSetManifest(
  dir: string,
  evalSet: string,
  tasks: Array<{ name: string; identity: TaskIdentity }>,
): Promise<string> {
  const file = path.join(dir, 'eval-set.json');
  await replaceFile(file, async (tmp) => {
    await fs.writeFile(tmp, `${JSON.stringify(evalSetManifest(evalSet, tasks), null, 2)}\n`);
  });
  return file;
}

/**
 * One entry at a time: each is serialised when the zip reaches it and compressed by one deflate
 * stream. (`addBuffer` starts a deflate for every entry at once, each holding its own zlib state
 * and its serialised copy until written: for 2,000 samples that was 300 to 400 MiB of the worker's
 * memory at each rewrite.)
 */
async function writeZip(file: string, log: InspectLog): Promise<void> {
  await replaceFile(file, async (tmp) => {
    const zip = new ZipFile();
    for (const entry of log.entries) {
      zip.addReadStreamLazy(entry.name, { compress: true }, (open) =>
        open(null, Readable.from([Buffer.from(inspectJson(entry.json))])),
      );
    }
    zip.end();
    await pipeline(zip.outputStream, createWriteStream(tmp));
  });
}

/** Writes through `write(tmp)` to a temporary file beside `file`, then renames it into place. */
async function replaceFile(file: string, write: (tmp: string) => Promise<void>): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomUUID()}.tmp`);
  try {
    await fs.mkdir(path.dirname(file), { recursive: true });
    await write(tmp);
    // On disk before it takes the name: a crash after the rename never leaves an empty file.
    const handle = await fs.open(tmp, 'r+');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true }).catch(() => undefined);
    throw await logWriteError(file, err);
  }
}

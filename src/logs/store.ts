/**
 * Results on disk, behind one writer interface. The format (documented in docs/log-format.md):
 *
 *   <log_dir>/evalset.json                      the eval set's summary
 *   <log_dir>/<task>/summary.json               the task's summary and metrics
 *   <log_dir>/<task>/task.json                  the task's identity, recorded when it first ran
 *   <log_dir>/<task>/samples/<id>.e<epoch>.json  one completed sample, written exactly once
 *   <log_dir>/<task>/errors/<id>.e<epoch>.json   the latest failure of a sample not yet completed
 *   <log_dir>/ramp-history.jsonl                every ramp move, hold and steering, one a line
 *   <log_dir>/tend.jsonl                        every tend's numbers per task and account
 *
 * A completed sample is published with link(2), which refuses to replace an existing file, so a
 * sample retried after a crash can never be recorded twice, and readers never see half a file.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { TaskIdentityRecord } from '../definition/identity';
import type { ChatMessage, Choice, Score, TokenUsage } from '../definition/types';
import type { SampleLimitHit } from '../eval/limits';
import type { AttemptError } from '../eval/retries';
import { ErrorType, ExitCode, StewardError } from '../errors';
import type { TendRecord } from '../workflows/tend-record';
import type { EvalSetResult, RampHistoryEntry, TaskResult } from '../workflows/types';

export const LOG_FORMAT_VERSION = 1;
/** The ramp history, one entry a line (docs/log-format.md). */
export const RAMP_HISTORY_FILE = 'ramp-history.jsonl';
/** Each tend's record, one a line (docs/log-format.md). */
export const TEND_FILE = 'tend.jsonl';

export interface SampleRecord {
  version: number;
  eval_set: string;
  task: string;
  sample_id: string | number;
  epoch: number;
  input: string | ChatMessage[];
  target: string | string[];
  /** The dataset record's metadata (absent in records written before it was kept). */
  metadata?: Record<string, unknown>;
  messages: ChatMessage[];
  output: string;
  /**
   * A multiple-choice sample's choices in the order the model saw them, each with its place in
   * the dataset and whether the model picked it: the mapping a shuffle made.
   */
  choices?: Choice[];
  score: Score;
  scorer: string;
  usage: TokenUsage;
  model: string;
  started_at: string;
  completed_at: string;
  /** Which process ran it: lets tests and operators see the process layout. */
  worker: { pid: number; host: string };
  /** Temporal activity attempt (1 unless a crash made Temporal run it again). */
  attempt: number;
  /** The limit that stopped the sample (it was scored on what it had); absent when none did. */
  limit?: SampleLimitHit;
  /** This run's earlier attempts, which failed and ran again (Inspect's `error_retries`). */
  error_retries?: AttemptError[];
}

export interface SampleErrorRecord {
  version: number;
  eval_set: string;
  task: string;
  sample_id: string | number;
  epoch: number;
  /** The sample as the dataset gave it (absent in records written before they were kept). */
  input?: string | ChatMessage[];
  target?: string | string[];
  metadata?: Record<string, unknown>;
  error: string;
  error_type?: string;
  /** The sample's own code that threw: a solver or the scorer (absent: elsewhere, or older records). */
  failed_in?: 'solver' | 'scorer';
  failed_at: string;
  worker: { pid: number; host: string };
  attempt: number;
  /** This run's earlier attempts, which failed and ran again (Inspect's `error_retries`). */
  error_retries?: AttemptError[];
}

export interface TaskSummary extends TaskResult {
  version: number;
  eval_set: string;
  scorer: string;
  model: string;
  completed_at: string;
  /** The task was cancelled (by its eval set's cancellation, or by hand); absent otherwise. */
  cancelled?: true;
}

export interface EvalSetSummary extends EvalSetResult {
  version: number;
  completed_at: string;
}

/** Where and how results are kept; the JSON-directory store below is the one implementation. */
export interface LogStore {
  readonly dir: string;
  /** Publishes a completed sample; `exists` if it was already recorded (and leaves it alone). */
  writeSample(record: SampleRecord): Promise<'written' | 'exists'>;
  readSample(task: string, sampleId: string | number, epoch: number): Promise<SampleRecord | undefined>;
  writeSampleError(record: SampleErrorRecord): Promise<void>;
  /** The latest failure of each sample of a task that has not completed, in file-name order. */
  readSampleErrors(task: string): Promise<SampleErrorRecord[]>;
  /** Keys (see {@link sampleKey}) of the completed samples of a task. */
  completedKeys(task: string): Promise<Set<string>>;
  readSamples(task: string): Promise<SampleRecord[]>;
  writeTaskSummary(summary: TaskSummary): Promise<void>;
  readTaskSummary(task: string): Promise<TaskSummary | undefined>;
  writeEvalSetSummary(summary: EvalSetSummary): Promise<void>;
  readEvalSetSummary(): Promise<EvalSetSummary | undefined>;
  /** Appends to the ramp history (an activity retried after a crash may append twice). */
  appendRampHistory(entries: RampHistoryEntry[]): Promise<void>;
  /** The whole ramp history; a line cut short by a crash is skipped. */
  readRampHistory(): Promise<RampHistoryEntry[]>;
  /** Appends one tend's record to `tend.jsonl` (a retried activity may append it twice). */
  appendTendRecord(record: TendRecord): Promise<void>;
  /** Every tend's record, oldest first; a line cut short by a crash is skipped. */
  readTendRecords(): Promise<TendRecord[]>;
  readTaskIdentity(task: string): Promise<TaskIdentityRecord | undefined>;
  /** Publishes a task's identity unless one is recorded (`exists`: it is left alone). */
  writeTaskIdentity(record: TaskIdentityRecord): Promise<'written' | 'exists'>;
}

/** The file-name key of a sample and epoch: the id, made safe for every file system. */
export function sampleKey(sampleId: string | number, epoch: number): string {
  const safe = String(sampleId).replace(/[^A-Za-z0-9_.-]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return `${safe}.e${epoch}`;
}

export function openLogStore(dir: string): LogStore {
  return new JsonDirLogStore(dir);
}

class JsonDirLogStore implements LogStore {
  constructor(readonly dir: string) {}

  async writeSample(record: SampleRecord): Promise<'written' | 'exists'> {
    const target = this.samplePath(record.task, 'samples', sampleKey(record.sample_id, record.epoch));
    try {
      return await this.publish(target, record);
    } finally {
      await fs.rm(this.samplePath(record.task, 'errors', sampleKey(record.sample_id, record.epoch)), { force: true });
    }
  }

  async readTaskIdentity(task: string): Promise<TaskIdentityRecord | undefined> {
    return readJson<TaskIdentityRecord>(path.join(this.dir, task, 'task.json'));
  }

  async writeTaskIdentity(record: TaskIdentityRecord): Promise<'written' | 'exists'> {
    return this.publish(path.join(this.dir, record.task, 'task.json'), record);
  }

  /** Writes `target` whole unless it exists: link(2) never replaces a file. */
  private async publish(target: string, value: unknown): Promise<'written' | 'exists'> {
    const tmp = await this.writeTemp(target, value);
    try {
      await fs.link(tmp, target);
      return 'written';
    } catch (err) {
      if (errno(err) === 'EEXIST') return 'exists';
      throw await logWriteError(target, err);
    } finally {
      await fs.rm(tmp, { force: true });
    }
  }

  async readSample(task: string, sampleId: string | number, epoch: number): Promise<SampleRecord | undefined> {
    return readJson<SampleRecord>(this.samplePath(task, 'samples', sampleKey(sampleId, epoch)));
  }

  async writeSampleError(record: SampleErrorRecord): Promise<void> {
    const target = this.samplePath(record.task, 'errors', sampleKey(record.sample_id, record.epoch));
    await this.replace(target, record);
  }

  async readSampleErrors(task: string): Promise<SampleErrorRecord[]> {
    const dir = path.join(this.dir, task, 'errors');
    const names = (await listDir(dir)).filter((n) => n.endsWith('.json')).sort();
    const records = await Promise.all(
      names.map((n) => readJson<SampleErrorRecord>(path.join(dir, n))),
    );
    return records.filter((r): r is SampleErrorRecord => r !== undefined);
  }

  async completedKeys(task: string): Promise<Set<string>> {
    const names = await listDir(path.join(this.dir, task, 'samples'));
    return new Set(names.filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -'.json'.length)));
  }

  async readSamples(task: string): Promise<SampleRecord[]> {
    const dir = path.join(this.dir, task, 'samples');
    const names = (await listDir(dir)).filter((n) => n.endsWith('.json'));
    const records = await Promise.all(names.map((n) => readJson<SampleRecord>(path.join(dir, n))));
    return records.filter((r): r is SampleRecord => r !== undefined);
  }

  async writeTaskSummary(summary: TaskSummary): Promise<void> {
    await this.replace(path.join(this.dir, summary.name, 'summary.json'), summary);
  }

  async readTaskSummary(task: string): Promise<TaskSummary | undefined> {
    return readJson<TaskSummary>(path.join(this.dir, task, 'summary.json'));
  }

  async writeEvalSetSummary(summary: EvalSetSummary): Promise<void> {
    await this.replace(path.join(this.dir, 'evalset.json'), summary);
  }

  async readEvalSetSummary(): Promise<EvalSetSummary | undefined> {
    return readJson<EvalSetSummary>(path.join(this.dir, 'evalset.json'));
  }

  async appendRampHistory(entries: RampHistoryEntry[]): Promise<void> {
    await this.appendLines(RAMP_HISTORY_FILE, entries);
  }

  async readRampHistory(): Promise<RampHistoryEntry[]> {
    return readJsonLines<RampHistoryEntry>(path.join(this.dir, RAMP_HISTORY_FILE));
  }

  async appendTendRecord(record: TendRecord): Promise<void> {
    await this.appendLines(TEND_FILE, [record]);
  }

  async readTendRecords(): Promise<TendRecord[]> {
    return readJsonLines<TendRecord>(path.join(this.dir, TEND_FILE));
  }

  private async appendLines(name: string, values: unknown[]): Promise<void> {
    const file = path.join(this.dir, name);
    try {
      await fs.mkdir(this.dir, { recursive: true });
      await fs.appendFile(file, values.map((e) => `${JSON.stringify(e)}\n`).join(''));
    } catch (err) {
      throw await logWriteError(file, err);
    }
  }

  private samplePath(task: string, kind: 'samples' | 'errors', key: string): string {
    return path.join(this.dir, task, kind, `${key}.json`);
  }

  /** Writes a whole file next to `target` and returns its name; the caller publishes it. */
  private async writeTemp(target: string, value: unknown): Promise<string> {
    const tmp = `${target}.${randomUUID()}.tmp`;
    try {
      await fs.mkdir(path.dirname(target), { recursive: true });
      await fs.writeFile(tmp, `${JSON.stringify(value, null, 2)}\n`);
      return tmp;
    } catch (err) {
      await fs.rm(tmp, { force: true }).catch(() => undefined);
      throw await logWriteError(target, err);
    }
  }

  /** Atomically replaces `target` (summaries and error records may be rewritten). */
  private async replace(target: string, value: unknown): Promise<void> {
    const tmp = await this.writeTemp(target, value);
    try {
      await fs.rename(tmp, target);
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw await logWriteError(target, err);
    }
  }
}

/**
 * Makes the log directory and checks that a file can be written in it, before anything runs.
 *
 * @throws StewardError (exit code 3) saying why not: a full disk, permissions, a read-only file
 *   system, or a path through a file.
 */
export async function checkLogDir(dir: string): Promise<void> {
  const probe = path.join(dir, `.steward-write-check-${process.pid}`);
  try {
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(probe, '');
    await fs.rm(probe);
  } catch (err) {
    throw new StewardError(
      `cannot write results to log dir ${dir}: ${await writeFailureReason(dir, err)}`,
      ExitCode.environment,
    );
  }
}

/** Why `file` could not be written, in the user's words: a full disk, permissions, and so on. */
export async function writeFailureReason(file: string, err: unknown): Promise<string> {
  switch (errno(err)) {
    case 'ENOSPC':
      return 'the disk is full';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EROFS':
      return 'the file system is read-only';
    case 'ENOTDIR':
    case 'EEXIST': {
      const blocker = await fileOnPath(file);
      if (blocker) return `${blocker} is a file, not a directory`;
      break;
    }
  }
  return err instanceof Error ? err.message : String(err);
}

/** The nearest existing ancestor of `target` (or `target` itself) that is not a directory. */
async function fileOnPath(target: string): Promise<string | undefined> {
  for (let dir = target; ; dir = path.dirname(dir)) {
    const stat = await fs.stat(dir).catch(() => undefined);
    if (stat) return stat.isDirectory() ? undefined : dir;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/** A failure to write `file`, as a StewardError of type `logWrite` that says why. */
export async function logWriteError(file: string, err: unknown): Promise<StewardError> {
  const reason = await writeFailureReason(file, err);
  const error = new StewardError(`cannot write results to ${file}: ${reason}`, ExitCode.environment);
  (error as StewardError & { type: string }).type = ErrorType.logWrite;
  return error;
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

async function listDir(dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir);
  } catch (err) {
    if (errno(err) === 'ENOENT') return [];
    throw err;
  }
}

async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8')) as T;
  } catch (err) {
    if (errno(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/** The JSON lines of `file` (none if it is missing); a line that does not parse is skipped. */
async function readJsonLines<T>(file: string): Promise<T[]> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if (errno(err) === 'ENOENT') return [];
    throw err;
  }
  return text.split('\n').flatMap((line) => {
    if (line.trim() === '') return [];
    try {
      return [JSON.parse(line) as T];
    } catch {
      return [];
    }
  });
}

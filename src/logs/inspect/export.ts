/**
 * (Re)builds a log dir's Inspect logs from Steward's records, for `steward logs export`: log dirs
 * written before Steward wrote `.eval` files, or whose `.eval` files were removed. Run it on a log
 * dir at rest; a running eval set's tasks write their own.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { canonicalJson, type TaskIdentityRecord } from '../../definition/identity';
import type { EvalSetDefinition } from '../../definition/types';
import { ExitCode, StewardError } from '../../errors';
import { SNAPSHOTS_DIR, isSnapshotHash, loadSnapshot } from '../../loader/snapshot';
import { openLogStore } from '../store';
import { writeEvalSetManifest, writeTaskInspectLog, type WrittenLog } from './write';

export interface ExportResult {
  logs: WrittenLog[];
  evalSetFile: string;
  /** Why a definition snapshot could not be read (its tasks' sample ids then come from records). */
  warnings: string[];
}

export async function exportInspectLogs(logDir: string): Promise<ExportResult> {
  const store = openLogStore(logDir);
  const names = await fs.readdir(logDir).catch((err: unknown) => {
    throw new StewardError(`cannot read log dir ${logDir}: ${(err as Error).message}`, ExitCode.usage);
  });
  const records = (
    await Promise.all(names.sort().map((name) => store.readTaskIdentity(name).catch(() => undefined)))
  ).filter((r): r is TaskIdentityRecord => r !== undefined);
  if (records.length === 0) {
    throw new StewardError(
      `${logDir} holds no Steward task records (<task>/task.json): is it an eval set's log dir?`,
      ExitCode.usage,
    );
  }
  const { definitions, warnings } = await snapshots(logDir);
  const definitionOf = (record: TaskIdentityRecord): EvalSetDefinition | undefined =>
    definitions.find(
      (d) =>
        d.name === record.eval_set &&
        d.identities[record.task] !== undefined &&
        canonicalJson(d.identities[record.task]) === canonicalJson(record.identity),
    );

  const logs: WrittenLog[] = [];
  for (const record of records) {
    const task = definitionOf(record)?.tasks.find((t) => t.name === record.task);
    // A task with a summary has ended; one without is shown as still running (`started`).
    const ended = (await store.readTaskSummary(record.task)) !== undefined;
    const written = await writeTaskInspectLog(store, record.task, {
      ended,
      sampleIds: task?.dataset.map((s) => s.id),
      scoring: task?.scoring,
    });
    if (written) logs.push(written);
  }

  // The set's tasks in the definition's order when it is at hand, else as recorded.
  const definition = records.map(definitionOf).find((d) => d !== undefined);
  const recorded = new Map(records.map((r) => [r.task, r.identity]));
  const tasks = definition
    ? definition.tasks.map((t) => ({
        name: t.name,
        identity: recorded.get(t.name) ?? definition.identities[t.name],
      }))
    : records.map((r) => ({ name: r.task, identity: r.identity }));
  const evalSetFile = await writeEvalSetManifest(logDir, records[0].eval_set, tasks);
  return { logs, evalSetFile, warnings };
}

/** Every definition snapshot in the log dir that loads. */
async function snapshots(
  logDir: string,
): Promise<{ definitions: EvalSetDefinition[]; warnings: string[] }> {
  const hashes = (await fs.readdir(path.join(logDir, SNAPSHOTS_DIR)).catch(() => [])).filter(
    isSnapshotHash,
  );
  const definitions: EvalSetDefinition[] = [];
  const warnings: string[] = [];
  for (const hash of hashes) {
    try {
      definitions.push(await loadSnapshot({ logDir, hash }));
    } catch (err) {
      warnings.push(`definition snapshot ${hash} not read: ${(err as Error).message}`);
    }
  }
  return { definitions, warnings };
}

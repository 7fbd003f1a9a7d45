/** Reads what a run recorded, for assertions. */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { SampleRecord } from '../../src/logs/store';
import type { RampHistoryEntry } from '../../src/workflows/types';

export async function readSampleRecords(logDir: string, task: string): Promise<SampleRecord[]> {
  const dir = path.join(logDir, task, 'samples');
  const names = (await fs.readdir(dir)).filter((n) => n.endsWith('.json'));
  return Promise.all(
    names.map(
      async (n) => JSON.parse(await fs.readFile(path.join(dir, n), 'utf8')) as SampleRecord,
    ),
  );
}

/** The most samples that were running at the same moment, from recorded start and end times. */
export function peakConcurrency(
  records: Pick<SampleRecord, 'started_at' | 'completed_at'>[],
): number {
  // Ends sort before starts at the same millisecond: a slot freed then reused is not an overlap.
  const events = records.flatMap((r) => [
    { t: Date.parse(r.started_at), d: 1 },
    { t: Date.parse(r.completed_at), d: -1 },
  ]);
  events.sort((a, b) => a.t - b.t || a.d - b.d);
  let current = 0;
  let peak = 0;
  for (const e of events) {
    current += e.d;
    peak = Math.max(peak, current);
  }
  return peak;
}

/** The eval set's ramp history (`ramp-history.jsonl` in its log dir); none written yet: none. */
export async function rampHistory(logDir: string): Promise<RampHistoryEntry[]> {
  const text = await fs.readFile(path.join(logDir, 'ramp-history.jsonl'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as RampHistoryEntry);
}

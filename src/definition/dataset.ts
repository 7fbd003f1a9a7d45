/**
 * Datasets: JSONL, JSON (an array of records) and CSV files of samples with Inspect's fields
 * (`input`, `target`, `id`, `choices`, `metadata`, `files`, `setup`), and inline samples from
 * definitions, read the way Inspect reads them. Every problem is collected and reported at its
 * line (or path, for inline samples), so one run of `steward launch` shows them all.
 */

import * as path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { ConfigError, type ConfigIssue } from '../errors';
import { readTextFile } from '../config/load';
import {
  datasetFormatOf,
  sampleRecordSchema,
  type DatasetFormat,
  type SampleRecord,
} from '../config/schema';
import { issuesFromZod } from '../config/issues';
import { diskLookup, NO_FILES, readSampleFiles, readSetup, type FileLookup } from './sample-files';
import type { Sample } from './types';

/** Where a record is: a file and line, or a path inside a definition. */
export type RecordPlace = { file: string; line: number } | { file: string; path: string };

/** A record that passed the schema, with its place for later messages. */
export interface PlacedRecord {
  record: SampleRecord;
  place: RecordPlace;
}

export interface DatasetResult {
  samples: Sample[];
  issues: ConfigIssue[];
}

/**
 * Reads a dataset file. Its `files` and `setup` values are looked up relative to its directory.
 *
 * @param format default: from the file name (`.jsonl`, `.ndjson`, `.json`, `.csv`).
 * @param options.locate where a file the dataset names is (a snapshot redirects it).
 * @throws ConfigError with every problem found, each at its `file:line`.
 */
export async function loadDataset(
  file: string,
  format?: DatasetFormat,
  options: { locate?: (ref: string, baseDir: string) => string } = {},
): Promise<Sample[]> {
  // Read first: a mistyped path is a missing file, whatever its name says about the format.
  const text = await readTextFile(file, 'dataset file');
  const known = format ?? datasetFormatOf(file);
  if (known === undefined) {
    throw new ConfigError([
      {
        file,
        message:
          'cannot tell the dataset format from the file name: use .jsonl, .json or .csv, or set format',
      },
    ]);
  }
  const lookup = diskLookup(path.dirname(file), options.locate);
  const { samples, issues } = parseDataset(text, known, file, lookup);
  if (issues.length > 0) throw new ConfigError(issues);
  return samples;
}

/**
 * Parses a dataset's text; `file` only names it in issues. Pure unless `lookup` reads files (by
 * default every `files` and `setup` value is a `data:` URL or the text itself).
 */
export function parseDataset(
  text: string,
  format: DatasetFormat,
  file: string,
  lookup: FileLookup = NO_FILES,
): DatasetResult {
  const parsed =
    format === 'jsonl'
      ? jsonlRecords(text, file)
      : format === 'json'
        ? jsonRecords(text, file)
        : csvRecords(text, file);
  const result = samplesFromRecords(parsed.records, lookup);
  const issues = [...parsed.issues, ...result.issues];
  if (parsed.records.length === 0 && issues.length === 0) {
    issues.push({ file, message: 'dataset has no samples' });
  }
  return { samples: result.samples, issues };
}

/**
 * Turns checked records into samples, as Inspect does: an absent `id` becomes the record's
 * 1-based position in the dataset (explicit ids are kept, so a mix can collide: `[{}, {id: 1}]`
 * is a duplicate), an absent `target` the empty string. Ids must be unique (`1` and `"1"` count
 * as the same, as they do in Inspect and in a workflow id). `files` and `setup` are read through
 * `lookup`.
 */
export function samplesFromRecords(
  records: PlacedRecord[],
  lookup: FileLookup = NO_FILES,
): DatasetResult {
  const samples: Sample[] = [];
  const issues: ConfigIssue[] = [];
  const firstPlace = new Map<string, RecordPlace>();
  records.forEach(({ record, place }, index) => {
    const id = record.id ?? index + 1;
    const first = firstPlace.get(String(id));
    if (first !== undefined) {
      issues.push({
        ...place,
        message: `duplicate sample id ${JSON.stringify(id)} (first used at ${describePlace(first)})`,
      });
      return;
    }
    firstPlace.set(String(id), place);
    let files: Record<string, string> | undefined;
    let setup: string | undefined;
    try {
      if (record.files !== undefined) files = readSampleFiles(record.files, lookup);
      if (record.setup !== undefined && record.setup !== '')
        setup = readSetup(record.setup, lookup);
    } catch (error) {
      issues.push({ ...place, message: (error as Error).message });
      return;
    }
    samples.push({
      id,
      input: record.input,
      target: record.target ?? '',
      ...(record.choices === undefined ? {} : { choices: record.choices }),
      ...(record.metadata === undefined ? {} : { metadata: record.metadata }),
      ...(files === undefined || Object.keys(files).length === 0 ? {} : { files }),
      ...(setup === undefined ? {} : { setup }),
    });
  });
  return { samples, issues };
}

function describePlace(place: RecordPlace): string {
  return 'line' in place ? `line ${place.line}` : place.path;
}

function checkRecord(
  raw: unknown,
  place: RecordPlace,
): { record?: PlacedRecord; issues: ConfigIssue[] } {
  const parsed = sampleRecordSchema.safeParse(withoutNulls(raw), { reportInput: true });
  if (parsed.success) return { record: { record: parsed.data, place }, issues: [] };
  return { issues: issuesFromZod(parsed.error, place) };
}

/** Inspect reads `null` in a record's field as "not there"; `input` stays, to be reported. */
function withoutNulls(raw: unknown): unknown {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return raw;
  return Object.fromEntries(
    Object.entries(raw).filter(([key, value]) => value !== null || key === 'input'),
  );
}

interface RecordsResult {
  records: PlacedRecord[];
  issues: ConfigIssue[];
}

// ---- JSONL ----------------------------------------------------------------------------------

function jsonlRecords(text: string, file: string): RecordsResult {
  const records: PlacedRecord[] = [];
  const issues: ConfigIssue[] = [];
  text.split(/\r?\n/).forEach((content, i) => {
    if (content.trim() === '') return;
    const line = i + 1;
    let raw: unknown;
    try {
      raw = JSON.parse(content);
    } catch (error) {
      issues.push({ file, line, message: `invalid JSON: ${(error as Error).message}` });
      return;
    }
    const checked = checkRecord(raw, { file, line });
    if (checked.record) records.push(checked.record);
    issues.push(...checked.issues);
  });
  return { records, issues };
}

// ---- JSON -----------------------------------------------------------------------------------

/**
 * A JSON file: an array of records, or one record (Inspect reads both). Issues are at the line
 * where each record starts.
 */
function jsonRecords(text: string, file: string): RecordsResult {
  let data: unknown;
  try {
    data = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (error) {
    return {
      records: [],
      issues: [{ file, message: `invalid JSON: ${(error as Error).message}` }],
    };
  }
  if (data === null || typeof data !== 'object') {
    return {
      records: [],
      issues: [{ file, message: `expected an array of records, got ${JSON.stringify(data)}` }],
    };
  }
  const list = Array.isArray(data) ? data : [data];
  const lines = Array.isArray(data) ? elementLines(text) : [firstLine(text)];
  const records: PlacedRecord[] = [];
  const issues: ConfigIssue[] = [];
  list.forEach((raw, i) => {
    const checked = checkRecord(raw, { file, line: lines[i] ?? 1 });
    if (checked.record) records.push(checked.record);
    issues.push(...checked.issues);
  });
  return { records, issues };
}

function firstLine(text: string): number {
  const start = text.search(/\S/);
  return start < 0 ? 1 : text.slice(0, start).split('\n').length;
}

/** The line each element of a top-level JSON array starts on (the text is valid JSON). */
function elementLines(text: string): number[] {
  const lines: number[] = [];
  let line = 1;
  let depth = 0;
  let inString = false;
  let expectElement = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\n') line++;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\r' || c === '\n' || c === '\uFEFF') continue;
    if (depth === 1 && expectElement && c !== ']') {
      lines.push(line);
      expectElement = false;
    }
    if (c === '"') inString = true;
    else if (c === '[' || c === '{') {
      depth++;
      if (depth === 1) expectElement = true;
    } else if (c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 1) expectElement = true;
  }
  return lines;
}

// ---- CSV ------------------------------------------------------------------------------------

/** Columns that are sample fields; any other column goes into the sample's metadata. */
const CSV_FIELDS = new Set(['input', 'target', 'id', 'metadata', 'choices', 'files', 'setup']);

function csvRecords(text: string, file: string): RecordsResult {
  let rows: Array<{ cells: string[]; line: number }>;
  try {
    rows = csvRows(text);
  } catch (error) {
    return { records: [], issues: [{ file, ...csvProblem(error, text) }] };
  }
  if (rows.length === 0) return { records: [], issues: [] };

  const [header, ...body] = rows;
  const headerIssues = checkHeader(header.cells, { file, line: header.line });
  if (headerIssues.length > 0) return { records: [], issues: headerIssues };

  const records: PlacedRecord[] = [];
  const issues: ConfigIssue[] = [];
  for (const { cells, line } of body) {
    const place = { file, line };
    if (cells.length !== header.cells.length) {
      issues.push({
        ...place,
        message: `${cells.length} fields, but the header has ${header.cells.length}`,
      });
      continue;
    }
    const { record, problems } = csvRecord(header.cells, cells);
    const checked = checkRecord(record, place);
    issues.push(...problems.map((problem) => ({ ...place, ...problem })), ...checked.issues);
    if (problems.length === 0 && checked.record) records.push(checked.record);
  }
  return { records, issues };
}

function checkHeader(columns: string[], place: { file: string; line: number }): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const seen = new Set<string>();
  for (const column of columns) {
    if (seen.has(column)) issues.push({ ...place, message: `duplicate column "${column}"` });
    seen.add(column);
  }
  if (!seen.has('input')) {
    issues.push({ ...place, message: `no "input" column (columns: ${columns.join(', ')})` });
  }
  return issues;
}

type Problem = Pick<ConfigIssue, 'path' | 'message' | 'value'>;

/**
 * One CSV row as a record, and the cells that cannot be read. Cells are text, so `target`
 * holding a JSON list is a list, `metadata` and `files` are JSON objects, `choices` are split at
 * commas (by the schema), and an empty cell of a sample field is absent.
 */
function csvRecord(
  columns: string[],
  cells: string[],
): { record: Record<string, unknown>; problems: Problem[] } {
  const record: Record<string, unknown> = {};
  const extra: Record<string, string> = {};
  const problems: Problem[] = [];
  columns.forEach((column, i) => {
    const cell = cells[i];
    if (!CSV_FIELDS.has(column)) extra[column] = cell;
    else if (column === 'input') record.input = cell;
    else if (cell === '') return;
    else if (column === 'id') record.id = cell;
    else if (column === 'choices' || column === 'setup') record[column] = cell;
    else if (column === 'files') {
      const files = parseJsonCell(cell);
      if (files !== null && typeof files === 'object' && !Array.isArray(files)) {
        record.files = files;
      } else {
        problems.push({ path: 'files', message: 'expected a JSON object', value: cell });
      }
    } else if (column === 'target') {
      if (!cell.trimStart().startsWith('[')) record.target = cell;
      else {
        const list = parseJsonCell(cell);
        if (Array.isArray(list)) record.target = list;
        else
          problems.push({
            path: 'target',
            message: 'expected a JSON list of strings',
            value: cell,
          });
      }
    } else {
      const metadata = parseJsonCell(cell);
      if (metadata !== null && typeof metadata === 'object' && !Array.isArray(metadata)) {
        record.metadata = metadata;
      } else {
        problems.push({ path: 'metadata', message: 'expected a JSON object', value: cell });
      }
    }
  });
  const metadata = { ...extra, ...(record.metadata as Record<string, unknown> | undefined) };
  if (Object.keys(metadata).length > 0) record.metadata = metadata;
  return { record, problems };
}

function parseJsonCell(cell: string): unknown {
  try {
    return JSON.parse(cell);
  } catch {
    return undefined;
  }
}

/**
 * A CSV syntax error at its line. csv-parse reports the line where parsing stopped, which for an
 * unclosed quote is the end of the file; the user needs the line where the quote opened, which
 * is where the last complete record ended (its `bytes`).
 */
function csvProblem(error: unknown, text: string): { line?: number; message: string } {
  const { message, lines, code, bytes } = error as Error & {
    lines?: number;
    code?: string;
    bytes?: number;
  };
  if (code !== 'CSV_QUOTE_NOT_CLOSED' || bytes === undefined) {
    return { line: lines, message: `invalid CSV: ${message}` };
  }
  // Blank lines between the last record and the open one are skipped, as csvRows does.
  const buffer = Buffer.from(text);
  const blank = /^[\r\n]*/.exec(buffer.subarray(bytes).toString())?.[0] ?? '';
  const before = `${buffer.subarray(0, bytes).toString()}${blank}`;
  const line = before.split('\n').length;
  return {
    line,
    message: 'invalid CSV: a quoted field starts on this line and is never closed (a missing ")',
  };
}

/** Non-empty rows with the line each starts on (a quoted cell may span lines). */
function csvRows(text: string): Array<{ cells: string[]; line: number }> {
  const buffer = Buffer.from(text);
  const parsed = parseCsv(buffer, {
    bom: true,
    info: true,
    relax_column_count: true,
    skip_empty_lines: true,
  }) as unknown as Array<{ record: string[]; info: { bytes: number } }>;
  // csv-parse reports the byte offset where each record ends; a record starts where the previous
  // one ended, after any blank lines, and its line is one more than the newlines before it.
  const rows: Array<{ cells: string[]; line: number }> = [];
  let offset = 0;
  let line = 1;
  for (const { record, info } of parsed) {
    while (offset < info.bytes && (buffer[offset] === 0x0a || buffer[offset] === 0x0d)) {
      if (buffer[offset] === 0x0a) line++;
      offset++;
    }
    rows.push({ cells: record, line });
    for (; offset < info.bytes; offset++) if (buffer[offset] === 0x0a) line++;
  }
  return rows;
}

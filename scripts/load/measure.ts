/**
 * One load run, measured: `steward launch --json` over many zero-latency `mockllm` tasks, with
 * the resident memory of every process of the run (the launcher and its supervisor, each worker
 * process, the Temporal server) sampled throughout, and afterwards the size of the largest
 * `evalSet` / `evalTask` history against Temporal's limits. Shared by `npm run bench:load` and
 * test/load.test.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import { alignColumns } from '../../src/cli/table';
import { REPO_ROOT, STEWARD_BIN, writeEvalSet, type CliResult } from '../../test/helpers/cli';
import {
  HISTORY_LIMITS,
  encodeHistory,
  fetchHistory,
  mapLimited,
  runsOfEvalSet,
  type WorkflowRun,
} from '../../test/helpers/histories';
import { watchMemory, type MemoryReport, type ProcessKind } from '../../test/helpers/process-tree';

export interface LoadShape {
  tasks: number;
  samplesPerTask: number;
  maxSamples: number;
  /** `max_workers`; unset: the fleet is sized to the host (src/core/slots.ts). */
  maxWorkers?: number;
}

export interface HistorySize {
  run: WorkflowRun;
  events: number;
  bytes: number;
}

export interface LoadRun {
  shape: LoadShape;
  cli: CliResult;
  wallMs: number;
  /** Sample records in the log directory. */
  records: number;
  memory: MemoryReport;
  /** The `evalSet` run and every `evalTask` run (continued-as-new runs each count). */
  histories: HistorySize[];
  /** Why the histories could not be read (a server that stopped answering), if they could not. */
  historyError?: string;
}

export interface LoadRunOptions {
  shape: LoadShape;
  /** An empty directory for the eval set, its logs and the worker logs. */
  dir: string;
  name: string;
  /** The CLI's environment: where Temporal is. */
  env: NodeJS.ProcessEnv;
  client: Client;
  /** The Temporal server's process, whose memory is the run's too. */
  serverPid: number;
  timeoutMs: number;
}

const TASK_WORKFLOWS = ['evalSet', 'evalTask'];

export async function runLoad(options: LoadRunOptions): Promise<LoadRun> {
  const { shape, dir, name } = options;
  const tasks = Array.from({ length: shape.tasks }, (_, i) => ({
    name: `t${String(i + 1).padStart(2, '0')}`,
    samples: shape.samplesPerTask,
  }));
  const file = await writeEvalSet(dir, name, tasks, {
    max_samples: shape.maxSamples,
    ...(shape.maxWorkers === undefined ? {} : { max_workers: shape.maxWorkers }),
  });
  const logDir = path.join(dir, 'logs');

  const started = performance.now();
  const child = spawn(
    process.execPath,
    [STEWARD_BIN, 'launch', file, '--json', '--log-dir', logDir],
    {
      cwd: REPO_ROOT,
      env: { ...options.env, STEWARD_HOME: path.join(dir, '.steward') },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const memory = watchMemory(() => [options.serverPid, ...(child.pid ? [child.pid] : [])]);
  const cli = await collect(child, options.timeoutMs);
  const wallMs = performance.now() - started;
  const report = memory.stop();

  let records = 0;
  for (const task of tasks) {
    records += await fs
      .readdir(path.join(logDir, task.name, 'samples'))
      .then((names) => names.filter((n) => n.endsWith('.json')).length)
      .catch(() => 0);
  }
  const run: LoadRun = { shape, cli, wallMs, records, memory: report, histories: [] };
  try {
    const runs = await runsOfEvalSet(options.client, name, TASK_WORKFLOWS);
    run.histories = await mapLimited(runs, 4, async (r) => {
      const history = await fetchHistory(options.client, r);
      return { run: r, events: history.events?.length ?? 0, bytes: encodeHistory(history).length };
    });
  } catch (error) {
    // The figures measured so far still tell what happened.
    run.historyError = (error as Error).message;
  }
  return run;
}

/**
 * The child's output and exit code. Past `timeoutMs` it is stopped as Ctrl-C would (so it stops
 * its workers), and killed if it lingers.
 */
function collect(child: ChildProcess, timeoutMs: number): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 30_000).unref();
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The largest history by events and by bytes. */
export function largestHistories(run: LoadRun): { byEvents: HistorySize; byBytes: HistorySize } {
  const [first, ...rest] = run.histories;
  if (!first) throw new Error('the run has no evalSet or evalTask history');
  return {
    byEvents: rest.reduce((a, b) => (b.events > a.events ? b : a), first),
    byBytes: rest.reduce((a, b) => (b.bytes > a.bytes ? b : a), first),
  };
}

const KINDS: [ProcessKind, string][] = [
  ['launch', 'steward launch (supervisor)'],
  ['worker', 'worker process'],
  ['temporal', 'Temporal dev server'],
];

/**
 * Issue 14's memory goals: the whole run of 20 tasks x 1,000 samples under 2.5 GiB, a worker
 * process at most 150 MiB (with 200 samples in flight).
 */
export const MEMORY_GOALS_KB = { total: 2.5 * 1024 * 1024, worker: 150 * 1024 };

/** `1234 MiB`, and against a goal when given: `1234 MiB (goal 2560 MiB: missed by 1.2x)`. */
function mib(kb: number | undefined, goalKb?: number): string {
  const text = `${((kb ?? 0) / 1024).toFixed(0)} MiB`;
  if (goalKb === undefined || kb === undefined) return text;
  const verdict = kb <= goalKb ? 'met' : `missed by ${(kb / goalKb).toFixed(2)}x`;
  return `${text} (goal ${(goalKb / 1024).toFixed(0)} MiB: ${verdict})`;
}

/** The run's figures as a two-column table, memory against `MEMORY_GOALS_KB`. */
export function loadTable(run: LoadRun): string {
  const { shape, memory } = run;
  const samples = shape.tasks * shape.samplesPerTask;
  const goals: Partial<Record<ProcessKind, number>> = { worker: MEMORY_GOALS_KB.worker };
  const rows: [string, string][] = [
    [
      'shape',
      `${shape.tasks} tasks x ${shape.samplesPerTask} samples, max_samples ${shape.maxSamples}, ` +
        (shape.maxWorkers === undefined
          ? 'max_workers unset (sized to the host)'
          : `max_workers ${shape.maxWorkers}`),
    ],
    ['worker processes', String(memory.processesByKind.worker ?? 0)],
    ['exit code', String(run.cli.code)],
    ['sample records', `${run.records} of ${samples}`],
    ['wall time', `${(run.wallMs / 1000).toFixed(1)} s`],
    ['samples recorded/s', (run.records / (run.wallMs / 1000)).toFixed(1)],
    ['peak RSS, all processes at once', mib(memory.peakTotalKb, MEMORY_GOALS_KB.total)],
    // What the run held of the machine: the RSS sum counts the pages the processes share (the
    // `node` binary, the SDK's native library) once for each of them, 60 MiB or so a worker.
    ['peak PSS, all processes at once', mib(memory.peakTotalPssKb, MEMORY_GOALS_KB.total)],
    ...KINDS.map(([kind, label]): [string, string] => [
      `max RSS, one ${label} (${memory.processesByKind[kind] ?? 0} seen)`,
      mib(memory.peakByKindKb[kind], goals[kind]),
    ]),
    ...historyRows(run),
  ];
  return alignColumns(rows, [false, false]).join('\n');
}

function historyRows(run: LoadRun): [string, string][] {
  if (run.historyError !== undefined) return [['histories', `unreadable: ${run.historyError}`]];
  const { byEvents, byBytes } = largestHistories(run);
  const ratio = (value: number, limit: number) => `${((100 * value) / limit).toFixed(1)} %`;
  const name = (h: HistorySize) => `${h.run.type} ${h.run.workflowId.split('/').pop()}`;
  const continued = run.histories.filter((h) => h.run.status === 'CONTINUED_AS_NEW').length;
  return [
    ['evalSet + evalTask runs', `${run.histories.length} (${continued} continued-as-new)`],
    [
      'largest history, events',
      `${byEvents.events} (${name(byEvents)}): ${ratio(byEvents.events, HISTORY_LIMITS.warnEvents)} of warn 10,240, ${ratio(byEvents.events, HISTORY_LIMITS.maxEvents)} of limit 51,200`,
    ],
    [
      'largest history, bytes',
      `${(byBytes.bytes / 1024).toFixed(0)} KiB (${name(byBytes)}): ${ratio(byBytes.bytes, HISTORY_LIMITS.warnBytes)} of warn 10 MB, ${ratio(byBytes.bytes, HISTORY_LIMITS.maxBytes)} of limit 50 MB`,
    ],
  ];
}

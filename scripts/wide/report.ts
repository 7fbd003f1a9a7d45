/**
 * What the wide bench reports: a line per run as it ends, the side-by-side table, the issue's
 * goals with a verdict each, and a note per run on where its time went. No measuring here:
 * everything comes from the runs' {@link WideRun}.
 */
import { alignColumns } from '../../src/cli/table';
import type { ProcessKind } from '../../test/helpers/process-tree';
import { TOOL_LABEL, type Tool } from '../peers/report';
import type { WideRun } from './measure';
import { totalSamples, type Sweep } from './sweeps';

const GIB_KB = 1024 * 1024;
const KIND_LETTER: Record<ProcessKind, string> = {
  launch: 'L',
  worker: 'W',
  temporal: 'T',
  other: 'O',
};

/** `845 MiB` under a GiB, `1.23 GiB` from there. */
export function memory(kb: number): string {
  return kb < GIB_KB ? `${(kb / 1024).toFixed(0)} MiB` : `${(kb / GIB_KB).toFixed(2)} GiB`;
}

function seconds(s: number | undefined): string {
  return s === undefined ? '-' : `${s.toFixed(1)} s`;
}

/** Distinct processes seen, and by kind: `6 (L1 W4 T1)`. */
function processes(r: WideRun): string {
  const byKind = Object.entries(r.memory.processesByKind) as [ProcessKind, number][];
  const total = byKind.reduce((sum, [, n]) => sum + n, 0);
  return `${total} (${byKind.map(([kind, n]) => `${KIND_LETTER[kind]}${n}`).join(' ')})`;
}

function cpuSeconds(r: WideRun): number {
  return Object.values(r.memory.cpuSecondsByKind).reduce((sum, s) => sum + s, 0);
}

/** CPU seconds by kind: `T 40 L 12 W 180`. */
function cpuByKind(r: WideRun): string {
  const byKind = Object.entries(r.memory.cpuSecondsByKind) as [ProcessKind, number][];
  return byKind.map(([kind, s]) => `${KIND_LETTER[kind]} ${s.toFixed(0)}`).join(' ');
}

/** Steward's wall over Inspect's; `<` when Inspect was stopped (its wall is a lower bound). */
function wallRatio(s: WideRun, i: WideRun): string {
  const ratio = (s.wallMs / i.wallMs).toFixed(2);
  if (i.stopped && !s.stopped) return `<${ratio}`;
  if (s.stopped && !i.stopped) return `>${ratio}`;
  return ratio;
}

export function summaryLine(r: WideRun): string {
  return [
    `${seconds(r.wallMs / 1000)} (ideal ${seconds(r.idealS)})`,
    `${r.completed}/${r.expected} samples (provider answered ${r.answered})`,
    `first call ${seconds(r.firstCallS)}, first record ${seconds(r.firstRecordS)}`,
    `peak PSS ${memory(r.memory.peakTotalPssKb)}, RSS ${memory(r.memory.peakTotalKb)}`,
    `processes ${processes(r)}, CPU ${cpuSeconds(r).toFixed(0)} s (${cpuByKind(r)})`,
    `peak in flight ${r.stats.peak_in_flight}`,
    `load ${r.loadAverage.toFixed(1)}`,
    ...(r.problem ? [`PROBLEM: ${r.problem.split('\n')[0]}`] : []),
  ].join(', ');
}

/** A row per sweep and tool; Steward's wall over Inspect's on Steward's row. */
export function table(runs: WideRun[]): string {
  const header = [
    'sweep',
    'samples',
    'ideal',
    'tool',
    'wall',
    '/ideal',
    '1st call',
    '1st record',
    'done',
    'peak PSS',
    'peak RSS',
    'processes',
    'CPU s',
    'S/I wall',
    'load',
  ];
  const rows = runs.map((r) => {
    const inspect = runs.find((o) => o.sweep === r.sweep && o.tool === 'inspect');
    return [
      r.sweep.name,
      String(totalSamples(r.sweep)),
      seconds(r.idealS),
      TOOL_LABEL[r.tool],
      `${seconds(r.wallMs / 1000)}${r.stopped ? ' (stopped)' : r.problem ? ' !' : ''}`,
      `${(r.wallMs / 1000 / r.idealS).toFixed(1)}x`,
      seconds(r.firstCallS),
      seconds(r.firstRecordS),
      `${r.completed}/${r.expected}`,
      memory(r.memory.peakTotalPssKb),
      memory(r.memory.peakTotalKb),
      processes(r),
      cpuSeconds(r).toFixed(0),
      r.tool === 'steward' && inspect ? wallRatio(r, inspect) : '',
      r.loadAverage.toFixed(1),
    ];
  });
  const rule = header.map((h, c) =>
    '-'.repeat(Math.max(h.length, ...rows.map((r) => r[c].length))),
  );
  const right = header.map((h) => !['sweep', 'tool', 'processes'].includes(h));
  return alignColumns([header, rule, ...rows], right).join('\n');
}

export function legend(): string[] {
  return [
    'wall: process start to exit (or to the deadline: stopped); /ideal: over ceil(samples / concurrency) x latency;',
    "1st call: the provider's first second with a request (1 s resolution); 1st record: the earliest sample end",
    "the tool recorded (Steward's sample records, Inspect's .eval logs), from the process start; done: samples",
    "completed without error of all; peak PSS / RSS: the largest sum over all the run's processes at one sampling",
    '(PSS counts a page the processes share once; Steward includes its Temporal dev server); processes: distinct',
    'processes seen, by kind (L launch/supervisor, W worker, T Temporal dev server, O other: for Inspect, python);',
    "CPU s: CPU seconds summed over them while watched; S/I wall: Steward's wall over Inspect's (<: Inspect was",
    "stopped, so at most this); load: the machine's 1-minute load average as the run ended.",
  ];
}

type Verdict = 'met' | 'MISSED' | 'not run' | 'undetermined' | 'reported';

interface Goal {
  sweep: string;
  what: string;
  verdict: Verdict;
  detail: string;
}

/** The issue's goals, each with what was measured. Goals are Steward's; Inspect is the yardstick. */
export function goals(runs: WideRun[], sweeps: readonly Sweep[]): string[] {
  const of = (sweep: string, tool: Tool) =>
    runs.find((r) => r.sweep.name === sweep && r.tool === tool);
  const list: Goal[] = [];
  const atMost = (value: number, limit: number): Verdict => (value <= limit ? 'met' : 'MISSED');
  const peak = (sweep: string, limitGiB: number) => {
    const s = of(sweep, 'steward');
    list.push({
      sweep,
      what: `Steward peak <= ${limitGiB} GiB (PSS sum, dev server included)`,
      verdict: s ? atMost(s.memory.peakTotalPssKb, limitGiB * GIB_KB) : 'not run',
      detail: s
        ? `PSS ${memory(s.memory.peakTotalPssKb)} (RSS sum ${memory(s.memory.peakTotalKb)}, largest worker ${memory(s.memory.peakByKindKb.worker ?? 0)}, dev server ${memory(s.memory.peakByKindKb.temporal ?? 0)})`
        : '',
    });
  };
  const faster = (sweep: string, factor: number) => {
    const [s, i] = [of(sweep, 'steward'), of(sweep, 'inspect')];
    const what = factor === 1 ? "Steward wall < Inspect's" : `Steward wall <= ${factor}x Inspect's`;
    if (!s || !i) {
      list.push({ sweep, what, verdict: 'not run', detail: '' });
      return;
    }
    const detail = `${seconds(s.wallMs / 1000)} vs ${seconds(i.wallMs / 1000)}${i.stopped ? ' (Inspect stopped at the deadline: its wall is a lower bound)' : ''} = ${wallRatio(s, i)}`;
    const within = factor === 1 ? s.wallMs < i.wallMs : s.wallMs <= factor * i.wallMs;
    let verdict: Verdict;
    if (s.problem) verdict = 'MISSED';
    else if (within) verdict = 'met';
    // Inspect stopped: its real wall is longer than measured, so a miss may not be one.
    else verdict = i.stopped ? 'undetermined' : 'MISSED';
    list.push({
      sweep,
      what,
      verdict,
      detail: s.problem ? `${detail}; Steward: ${s.problem.split('\n')[0]}` : detail,
    });
  };
  const names = sweeps.map((s) => s.name);
  if (names.includes('100x20')) {
    faster('100x20', 0.7);
    peak('100x20', 3);
    const s = of('100x20', 'steward');
    list.push({
      sweep: '100x20',
      what: 'Steward first record <= 15 s',
      verdict:
        s?.firstRecordS === undefined ? (s ? 'MISSED' : 'not run') : atMost(s.firstRecordS, 15),
      detail: s
        ? `${seconds(s.firstRecordS)} (first call ${seconds(s.firstCallS)}, first worker process ${seconds(s.starts.find((p) => p.kind === 'worker')?.t)})`
        : '',
    });
  }
  if (names.includes('500x4')) {
    const s = of('500x4', 'steward');
    list.push({
      sweep: '500x4',
      what: 'Steward completes',
      verdict: s ? (s.problem ? 'MISSED' : 'met') : 'not run',
      detail: s
        ? `${s.completed}/${s.expected}${s.problem ? `: ${s.problem.split('\n')[0]}` : ''}`
        : '',
    });
    peak('500x4', 4);
    faster('500x4', 1);
  }
  if (names.includes('20x1000')) peak('20x1000', 2.5);
  if (names.includes('4x1500')) {
    const [s, i] = [of('4x1500', 'steward'), of('4x1500', 'inspect')];
    list.push({
      sweep: '4x1500',
      what: 'reported, against one process per task (4)',
      verdict: s ? 'reported' : 'not run',
      detail: s
        ? `Steward ${s.memory.processesByKind.worker ?? 0} worker processes for 4 tasks, peak PSS ${memory(s.memory.peakTotalPssKb)}, wall ${seconds(s.wallMs / 1000)} (${(s.wallMs / 1000 / s.idealS).toFixed(1)}x ideal)` +
          (i
            ? `; Inspect one process, peak PSS ${memory(i.memory.peakTotalPssKb)}, wall ${seconds(i.wallMs / 1000)}${i.stopped ? ' (stopped)' : ''}`
            : '')
        : '',
    });
  }
  const rows = list.map((g) => [g.sweep, g.what, g.verdict, g.detail]);
  return [
    'Goals (issue):',
    ...alignColumns(rows, [false, false, false, false]).map((l) => `  ${l}`),
  ];
}

/**
 * Per run, where the time went: when its processes appeared, the first call and record, and
 * the calls in flight at the provider (its per-second peak) every 5 s of the first minute.
 */
export function timelines(runs: WideRun[]): string[] {
  const lines = [
    "Where the time went (s from the process start; in flight: the provider's per-second peak):",
  ];
  for (const r of runs) {
    const workers = r.starts.filter((p) => p.kind === 'worker').map((p) => p.t.toFixed(1));
    const series = r.stats.series;
    const at = (t: number) => series.find((p) => p.t === t)?.in_flight ?? 0;
    const full = series.find((p) => p.in_flight >= 0.9 * r.stats.peak_in_flight)?.t;
    const steps = Array.from({ length: 12 }, (_, k) => (k + 1) * 5).filter(
      (t) => t <= r.wallMs / 1000 + 5,
    );
    lines.push(
      `  ${r.sweep.name} ${TOOL_LABEL[r.tool]}: ` +
        [
          ...(r.tool === 'steward'
            ? [`worker processes up at ${workers.length > 0 ? workers.join(', ') : 'none seen'}`]
            : []),
          `first call ${seconds(r.firstCallS)}, first record ${seconds(r.firstRecordS)}`,
          `CPU s by kind ${cpuByKind(r)}`,
          `in flight peak ${r.stats.peak_in_flight}${full === undefined ? '' : ` (90% of it first at ${full} s)`}`,
          `in flight at ${steps.map((t) => `${t}s:${at(t)}`).join(' ')}`,
        ].join('; '),
    );
    if (r.problem) lines.push(`    ! ${r.problem.split('\n').slice(0, 3).join(' | ')}`);
  }
  return lines;
}

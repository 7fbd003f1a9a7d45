/**
 * What the peers bench reports about its runs: a line per run, the side-by-side table with its
 * notes, and the plot. No measuring here: everything comes from the runs' {@link Measured}.
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { MeasuredProcess } from '../ramp/launch';
import { mean } from '../ramp/measure';
import { renderSvg, svgToPng } from '../../src/dashboard/render';
import { peersPlotSpec, type PeerPoint } from './plot';
import type { ProfileName } from './profiles';

export type Tool = 'steward' | 'inspect';
export const TOOL_LABEL: Record<Tool, string> = { steward: 'Steward', inspect: 'Inspect AI' };

export interface Measured {
  profile: ProfileName;
  tasks: number;
  tool: Tool;
  process: MeasuredProcess;
  idealS: number;
  /** Samples that finished without an error, of all. */
  completed: number;
  samples: number;
  /** Samples running on average: the sum of their start-to-end times over the wall time. */
  samplesInFlight: number;
  /** Seconds from the start of the process to the provider's first request (1 s resolution). */
  firstCallS?: number;
  /** The tool exited with an error, or did not finish every sample. */
  problem?: string;
  /**
   * The machine's 1-minute load average when the run ended: the tools' own CPU competes with
   * anything else running, and a busy machine slows both (Python's event loop most).
   */
  loadAverage: number;
  /** Tokens per call the ideal assumes (from the dataset), to check against what the provider counted. */
  datasetTokensPerCall: number;
}

export function summaryLine(m: Measured): string {
  const { stats } = m.process;
  return [
    `${(m.process.wallMs / 1000).toFixed(1)} s (${ratio(m)} ideal)`,
    `${m.completed}/${m.samples} samples`,
    `${stats.requests} requests, ${stats.rate_limited} answered 429`,
    `calls in flight ${mean(m.process.inFlightReadings).toFixed(1)} (peak ${stats.peak_in_flight})`,
    `samples in flight ${m.samplesInFlight.toFixed(1)}`,
    `load ${m.loadAverage.toFixed(1)}`,
    `tokens per answered call ${(stats.total_tokens / Math.max(1, stats.by_status['200'] ?? 0)).toFixed(1)} (dataset ${m.datasetTokensPerCall.toFixed(1)})`,
    ...(m.problem ? [`PROBLEM: ${m.problem}`] : []),
  ].join(', ');
}

function ratio(m: Measured): string {
  return `${(m.process.wallMs / 1000 / m.idealS).toFixed(2)}x`;
}

function rateLimitedShare(m: Measured): number {
  return m.process.stats.rate_limited / Math.max(1, m.process.stats.requests);
}

/** One row per profile and task count, the tools side by side, and Steward's time over Inspect's. */
export function table(measured: Measured[], tools: Tool[]): string {
  const percent = (share: number) => `${(share * 100).toFixed(1)}%`;
  const cells = (m: Measured | undefined) =>
    m === undefined
      ? ['-', '-', '-', '-', '-']
      : [
          `${(m.process.wallMs / 1000).toFixed(1)} s${m.problem ? '!' : ''}`,
          ratio(m),
          percent(rateLimitedShare(m)),
          mean(m.process.inFlightReadings).toFixed(1),
          m.samplesInFlight.toFixed(1),
        ];
  const toolHeader = (tool: Tool) =>
    [`time`, `/ideal`, `429s`, `calls`, `samples`].map(
      (h) => `${tool === 'steward' ? 'S' : 'I'} ${h}`,
    );
  const rows: string[][] = [
    [
      'profile',
      'tasks',
      'ideal',
      ...tools.flatMap(toolHeader),
      ...(tools.length === 2 ? ['S/I time'] : []),
      'load',
    ],
  ];
  const keys = [...new Set(measured.map((m) => `${m.profile}|${m.tasks}`))];
  for (const key of keys) {
    const of = (tool: Tool) =>
      measured.find((m) => `${m.profile}|${m.tasks}` === key && m.tool === tool);
    const any = measured.find((m) => `${m.profile}|${m.tasks}` === key)!;
    const [s, i] = [of('steward'), of('inspect')];
    rows.push([
      any.profile,
      String(any.tasks),
      `${any.idealS.toFixed(1)} s`,
      ...tools.flatMap((tool) => cells(of(tool))),
      ...(tools.length === 2
        ? [s && i ? `${(s.process.wallMs / i.process.wallMs).toFixed(2)}` : '-']
        : []),
      tools.map((tool) => of(tool)?.loadAverage.toFixed(1) ?? '-').join('/'),
    ]);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  const line = (r: string[]) =>
    r
      .map((cell, c) => cell.padEnd(widths[c]))
      .join('  ')
      .trimEnd();
  return [line(rows[0]), line(widths.map((w) => '-'.repeat(w))), ...rows.slice(1).map(line)].join(
    '\n',
  );
}

export function notes(measured: Measured[]): string[] {
  const lines = [
    'S = Steward (steward launch, defaults: tend 60 s), I = Inspect AI 0.3.285 (inspect eval-set, defaults).',
    "time: process start to exit, as the user waits; /ideal: over the provider's physical limit for the calls;",
    '429s: share of requests the provider answered 429; calls: mean requests in progress at the provider',
    '(read every 250 ms); samples: mean samples running (their start-to-end times over the wall time).',
    "S/I time: Steward's time over Inspect's (below 1: Steward finished first).",
    `load: the machine's 1-minute load average as each run ended; above its ${os.cpus().length} cores the`,
    "times measure contention for the CPU as much as the tools (Inspect's event loop suffers most).",
  ];
  const firstCalls = measured
    .filter((m) => m.firstCallS !== undefined)
    .map((m) => `${m.profile}/${m.tasks}/${m.tool === 'steward' ? 'S' : 'I'} ${m.firstCallS}s`);
  if (firstCalls.length > 0) {
    lines.push(`Start-up, seconds to the first request at the provider: ${firstCalls.join(', ')}.`);
  }
  for (const m of measured) {
    if (!m.problem) continue;
    lines.push(`! ${m.profile}, ${m.tasks} task(s), ${TOOL_LABEL[m.tool]}: ${lastLine(m.problem)}`);
  }
  return lines;
}

/** The gist of a problem: its last line that says something (a traceback ends with the error). */
function lastLine(text: string): string {
  const lines = text.split('\n').filter((l) => l.trim());
  return lines.length <= 1 ? text.trim() : `${lines[0]} ... ${lines[lines.length - 1].trim()}`;
}

export async function writePlot(file: string, title: string, measured: Measured[]): Promise<void> {
  const points: PeerPoint[] = measured.map((m) => ({
    profile: m.profile,
    tasks: m.tasks,
    tool: TOOL_LABEL[m.tool],
    timeOverIdeal: m.process.wallMs / 1000 / m.idealS,
    rateLimitedShare: rateLimitedShare(m),
    callsInFlight: mean(m.process.inFlightReadings),
    samplesInFlight: m.samplesInFlight,
  }));
  const spec = peersPlotSpec(title, points);
  const svg = await renderSvg(spec);
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, svg);
  await fs.writeFile(file.replace(/\.svg$/, '.png'), svgToPng(svg));
  await fs.writeFile(file.replace(/\.svg$/, '.vl.json'), `${JSON.stringify(spec, null, 1)}\n`);
}

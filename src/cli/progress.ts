/**
 * Live progress of an eval set: a line per task and one for the total on a terminal, redrawn in
 * place and fitted to its width; plain lines otherwise (CI logs, pipes). Always on stderr, so
 * stdout carries only the result.
 */
import type { Client } from '@temporalio/client';
import { MultiBar, type SingleBar } from 'cli-progress';
import { readStatus } from '../client/status';
import type { EvalSetStatus, TaskStatus } from '../workflows/types';
import { duration, etaText, perMinute, progressLines, rowsThatFit } from './progress-layout';
import {
  NOTHING_OBSERVED,
  observe,
  progressRows,
  type Observed,
  type ProgressRow,
} from './progress-rate';

export interface ProgressView {
  update(status: EvalSetStatus): void;
  /** Prints a line of its own without breaking the display (on a terminal, above it). */
  log(line: string): void;
  stop(): void;
}

export interface ProgressOptions {
  /** The clock readings are timed by (ms). */
  now?: () => number;
}

/** Plain lines are printed when a task's numbers change, at most this often. */
const PLAIN_EVERY_MS = 5_000;
/** Used when a terminal does not say how wide it is. */
const DEFAULT_COLUMNS = 80;
const DEFAULT_ROWS = 24;

/**
 * Shows the eval set's status on `progress` every `everyMs` until the returned stop is called.
 * One reading at a time: each asks every running task, and a task's query waits behind its
 * samples' reports. Readings that overlapped on a busy server slowed it further (20 tasks of 100
 * samples fell from ~20 to 5 samples/s as queries piled up).
 */
export function followProgress(
  client: Client,
  workflowId: string,
  progress: ProgressView,
  everyMs = 1_000,
): () => void {
  let reading = false;
  const ticker = setInterval(() => {
    if (reading) return;
    reading = true;
    readStatus(client, workflowId)
      .then((s) => s.kind === 'running' && progress.update(s.status))
      .catch(() => undefined)
      .finally(() => (reading = false));
  }, everyMs);
  return () => clearInterval(ticker);
}

/**
 * A view that draws nothing once stopped: a status reading still in flight when the run ends
 * must not print after the run's summary.
 */
export function createProgress(
  stream: NodeJS.WriteStream = process.stderr,
  { now = Date.now }: ProgressOptions = {},
): ProgressView {
  const view = stream.isTTY ? terminalProgress(stream, now) : plainProgress(stream, now);
  let stopped = false;
  return {
    update(status) {
      if (!stopped) view.update(status);
    },
    log(line) {
      if (stopped) stream.write(`${line}\n`);
      else view.log(line);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      view.stop();
    },
  };
}

/**
 * A block of lines redrawn in place by cli-progress (cursor, redraw and messages above the
 * display are its job); each of its bars is one line, laid out here to the terminal's width.
 */
function terminalProgress(stream: NodeJS.WriteStream, now: () => number): ProgressView {
  let observed: Observed = NOTHING_OBSERVED;
  let rows: ProgressRow[] = [];
  const multibar = new MultiBar({
    stream,
    format: (_options, _params, payload: { line: string }) => payload.line,
    hideCursor: true,
    clearOnComplete: false,
    // Lines are laid out to fit; a redraw must not skip one that a message above overwrote.
    forceRedraw: true,
  });
  const bars: SingleBar[] = [];
  const draw = (): void => {
    // One column spare: a line as wide as the terminal wraps on some terminals. One line spare:
    // the cursor's.
    const width = (stream.columns || DEFAULT_COLUMNS) - 1;
    const fit = rowsThatFit(rows, (stream.rows || DEFAULT_ROWS) - 1);
    const lines = progressLines(fit.rows, width);
    if (fit.leftOut !== undefined) lines.push(fit.leftOut.slice(0, width));
    while (bars.length > lines.length) multibar.remove(bars.pop()!);
    lines.forEach((line, i) => {
      if (i < bars.length) bars[i].update({ line });
      else bars.push(multibar.create(1, 0, { line }));
    });
    multibar.update();
  };
  const onResize = (): void => draw();
  // An exit that skips stop() must not leave the user's shell without a cursor (a terminal's
  // writes are synchronous, so stop's land).
  const restore = (): void => multibar.stop();
  stream.on?.('resize', onResize);
  process.once('exit', restore);
  return {
    update(status) {
      const at = now();
      observed = observe(observed, status, at);
      rows = progressRows(observed, status, at);
      draw();
    },
    log(line) {
      multibar.log(`${line}\n`);
      multibar.update();
    },
    stop() {
      stream.off?.('resize', onResize);
      process.off('exit', restore);
      multibar.stop();
    },
  };
}

function plainProgress(stream: NodeJS.WriteStream, now: () => number): ProgressView {
  let observed: Observed = NOTHING_OBSERVED;
  const last = new Map<string, string>();
  let printedAt = Number.NEGATIVE_INFINITY;
  return {
    update(status) {
      const at = now();
      observed = observe(observed, status, at);
      const rows = progressRows(observed, status, at);
      // Whether a task moved is judged by its counts; its rate and ETA drift on their own.
      const moved = status.tasks.filter((t) => last.get(t.name) !== countsKey(t, status));
      const finishing = moved.some((t) => t.state === 'done');
      if (moved.length === 0 || (at - printedAt < PLAIN_EVERY_MS && !finishing)) return;
      printedAt = at;
      for (const t of moved) {
        last.set(t.name, countsKey(t, status));
        const row = rows.find((r) => r.name === t.name && r !== rows[rows.length - 1]);
        if (row) stream.write(`${plainLine(status.eval_set, row)}\n`);
      }
      if (status.tasks.length > 1)
        stream.write(`${plainLine(status.eval_set, rows[rows.length - 1])}\n`);
    },
    log: (line) => void stream.write(`${line}\n`),
    stop: () => undefined,
  };
}

function countsKey(t: TaskStatus, status: EvalSetStatus): string {
  // A finished task is printed once, whatever the run's last reading says of its setpoint.
  if (t.state === 'done') return `done ${t.completed} ${t.errored}`;
  const held = status.holds.global !== null || status.holds.tasks[t.name] !== undefined;
  return [
    t.state,
    t.completed,
    t.errored,
    t.in_flight,
    t.setpoint,
    t.rate_limit_episodes,
    held,
    Boolean(status.paused),
  ].join(' ');
}

/**
 * `[set] task: 40/100 done, 10 in flight, setpoint 10, 0 errors`, then what is known of the
 * rest: the rate and ETA once measured, 429s when there were any, the hold, elapsed time.
 */
function plainLine(evalSet: string, r: ProgressRow): string {
  const extra = [
    r.perMinute === undefined ? undefined : `${perMinute(r.perMinute)} samples/min`,
    r.etaMs === undefined ? undefined : `ETA ${etaText(r.etaMs)}`,
    r.rateLimitEpisodes > 0 ? `${r.rateLimitEpisodes} rate-limit episodes` : undefined,
    r.paused === undefined ? undefined : `paused: ${r.paused}`,
    r.hold === undefined ? undefined : `held: ${r.hold}`,
    r.elapsedMs === undefined || r.elapsedMs < 1_000
      ? undefined
      : `elapsed ${duration(r.elapsedMs)}`,
  ].filter((s) => s !== undefined);
  return (
    `[${evalSet}] ${r.name}: ${r.done}/${r.total} done, ${r.inFlight} in flight, setpoint ${r.setpoint}, ${r.errors} errors` +
    extra.map((s) => `, ${s}`).join('') +
    (r.state === 'done' ? ' (finished)' : '')
  );
}

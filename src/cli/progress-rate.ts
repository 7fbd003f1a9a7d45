/**
 * What the progress display computes from successive status readings: each task's rate of
 * finishing samples over a sliding window, its ETA, and how long it has run. Pure: the view hands
 * in the readings and the time of each, so tables test it without a clock.
 */
import type { EvalSetStatus, TaskStatus } from '../workflows/types';

/** One status reading of a count: samples finished in this run by `at` (ms). */
export interface Reading {
  at: number;
  done: number;
}

/** The rate is the finishes of the readings within this window, so it follows the run's pace. */
export const RATE_WINDOW_MS = 60_000;
/** Readings must span this long before a rate (and so an ETA) is shown: one second is noise. */
export const RATE_MIN_SPAN_MS = 5_000;

/**
 * `readings` with `next` added, and those older than the window dropped. The newest reading at or
 * before the window's start stays, so the rate covers the whole window rather than less of it. A
 * count that went down (a reset, or readings out of order) starts the window over.
 */
export function addReading(
  readings: readonly Reading[],
  next: Reading,
  windowMs = RATE_WINDOW_MS,
): Reading[] {
  const last = readings.at(-1);
  if (last && (next.done < last.done || next.at < last.at)) return [next];
  const kept = [...readings, next];
  const start = next.at - windowMs;
  let first = 0;
  while (first + 1 < kept.length && kept[first + 1].at <= start) first++;
  return kept.slice(first);
}

/** Samples finished per minute over the readings; undefined until they span `minSpanMs`. */
export function ratePerMinute(
  readings: readonly Reading[],
  minSpanMs = RATE_MIN_SPAN_MS,
): number | undefined {
  if (readings.length < 2) return undefined;
  const first = readings[0];
  const last = readings[readings.length - 1];
  const span = last.at - first.at;
  if (span < minSpanMs) return undefined;
  return ((last.done - first.done) / span) * 60_000;
}

/** How long `remaining` samples take at `perMinute`; undefined when nothing finishes. */
export function etaMs(remaining: number, perMinute: number | undefined): number | undefined {
  if (perMinute === undefined || perMinute <= 0) return undefined;
  return (Math.max(0, remaining) / perMinute) * 60_000;
}

/**
 * Samples a task finished in this run: done minus those found done in the log dir at its start.
 * A resumed eval set's thousand old samples are not a thousand finishes in its first second.
 */
export function finishedHere(t: TaskStatus): number {
  return Math.max(0, t.completed + t.errored - t.resumed);
}

/** What the view has seen of one task (or of the eval set as a whole) so far. */
export interface Seen {
  readings: Reading[];
  /** When it was first seen running (ms). */
  startedAt?: number;
  /** When it was first seen done (ms): its elapsed time stops there. */
  finishedAt?: number;
}

export interface Observed {
  tasks: Record<string, Seen>;
  total: Seen;
}

export const NOTHING_OBSERVED: Observed = { tasks: {}, total: { readings: [] } };

/**
 * What has been seen, with the reading `status` taken at `now`. Only running readings enter a
 * window: a task waiting for its turn (`max_tasks`) has no pace yet, and a finished one keeps
 * the pace it ended with.
 */
export function observe(prev: Observed, status: EvalSetStatus, now: number): Observed {
  const tasks: Record<string, Seen> = {};
  for (const t of status.tasks) {
    tasks[t.name] = seeAgain(prev.tasks[t.name], t.state, finishedHere(t), now);
  }
  const allDone = status.tasks.length > 0 && status.tasks.every((t) => t.state === 'done');
  const anyStarted = status.tasks.some((t) => t.state !== 'waiting');
  const total = seeAgain(
    prev.total,
    allDone ? 'done' : anyStarted ? 'running' : 'waiting',
    status.tasks.reduce((n, t) => n + finishedHere(t), 0),
    now,
  );
  return { tasks, total };
}

function seeAgain(
  prev: Seen | undefined,
  state: TaskStatus['state'],
  done: number,
  now: number,
): Seen {
  const seen: Seen = prev ?? { readings: [] };
  if (state === 'waiting') return seen;
  const startedAt = seen.startedAt ?? now;
  if (state === 'done') return { ...seen, startedAt, finishedAt: seen.finishedAt ?? now };
  return { readings: addReading(seen.readings, { at: now, done }), startedAt };
}

/** One line's numbers, for the layout. */
export interface ProgressRow {
  name: string;
  state: TaskStatus['state'];
  done: number;
  total: number;
  errors: number;
  /** Samples per minute; undefined until known (see {@link RATE_MIN_SPAN_MS}). */
  perMinute?: number;
  etaMs?: number;
  /** Since it was first seen running; undefined before. */
  elapsedMs?: number;
  inFlight: number;
  setpoint: number;
  /** Rate-limit episodes (bursts of 429s) in the tend's last window. */
  rateLimitEpisodes: number;
  /** The hold on it, by its reason; for the total, a global hold, or how many tasks are held. */
  hold?: string;
  /** Why the eval set is paused, on every row not done (`steward pause`). */
  paused?: string;
}

/** A row per task, then one for the whole eval set, named `total`; none while it plans. */
export function progressRows(
  observed: Observed,
  status: EvalSetStatus,
  now: number,
): ProgressRow[] {
  if (status.tasks.length === 0) return [];
  const holds = status.holds;
  const rows = status.tasks.map((t) => {
    const hold = holds.global ?? holds.tasks[t.name];
    return row(observed.tasks[t.name], now, {
      name: t.name,
      state: t.state,
      done: t.completed + t.errored,
      total: t.samples,
      errors: t.errored,
      inFlight: t.in_flight,
      setpoint: t.setpoint,
      rateLimitEpisodes: t.rate_limit_episodes,
      hold: t.state === 'done' || !hold ? undefined : hold.reason,
      ...(t.state === 'done' || !status.paused ? {} : { paused: status.paused.reason }),
    });
  });
  const held = rows.filter((r) => r.hold !== undefined).length;
  const sum = (f: (r: ProgressRow) => number): number => rows.reduce((n, r) => n + f(r), 0);
  const total = row(observed.total, now, {
    name: 'total',
    state: observed.total.finishedAt !== undefined ? 'done' : 'running',
    done: sum((r) => r.done),
    total: sum((r) => r.total),
    errors: sum((r) => r.errors),
    inFlight: sum((r) => r.inFlight),
    setpoint: sum((r) => r.setpoint),
    rateLimitEpisodes: sum((r) => r.rateLimitEpisodes),
    hold: holds.global
      ? holds.global.reason
      : held > 0
        ? `${held} task${held === 1 ? '' : 's'}`
        : undefined,
    ...(status.paused && observed.total.finishedAt === undefined
      ? { paused: status.paused.reason }
      : {}),
  });
  return [...rows, total];
}

function row(
  seen: Seen | undefined,
  now: number,
  numbers: Omit<ProgressRow, 'perMinute' | 'etaMs' | 'elapsedMs'>,
): ProgressRow {
  if (!seen || seen.startedAt === undefined) return numbers;
  const elapsedMs = (seen.finishedAt ?? now) - seen.startedAt;
  if (numbers.state !== 'running') return { ...numbers, elapsedMs };
  const perMinute = ratePerMinute(seen.readings);
  return {
    ...numbers,
    elapsedMs,
    perMinute,
    etaMs: etaMs(numbers.total - numbers.done, perMinute),
  };
}

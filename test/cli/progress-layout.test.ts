import {
  drawBar,
  duration,
  etaText,
  perMinute,
  progressLines,
  rowsThatFit,
} from '../../src/cli/progress-layout';
import type { ProgressRow } from '../../src/cli/progress-rate';
import { PROGRESS_FIELD as FIELD, progressFields as fields } from '../helpers/progress-fields';

const running = (row: Partial<ProgressRow> & Pick<ProgressRow, 'name'>): ProgressRow => ({
  state: 'running',
  done: 0,
  total: 100,
  errors: 0,
  inFlight: 0,
  setpoint: 10,
  rateLimitEpisodes: 0,
  ...row,
});

/** Three tasks mid-run: one held, one waiting its turn; then the total. */
const ROWS: ProgressRow[] = [
  running({
    name: 'arithmetic',
    done: 70,
    perMinute: 120,
    etaMs: 15_000,
    elapsedMs: 30_000,
    inFlight: 10,
    setpoint: 10,
  }),
  running({
    name: 'capitals',
    done: 533,
    total: 1_000,
    errors: 3,
    perMinute: 60,
    etaMs: 467_000,
    elapsedMs: 30_000,
    inFlight: 4,
    setpoint: 12,
    rateLimitEpisodes: 2,
    hold: 'provider looks unhappy',
  }),
  running({ name: 'geography', state: 'waiting', total: 50, setpoint: 0 }),
  running({
    name: 'total',
    done: 603,
    total: 1_150,
    errors: 3,
    perMinute: 180,
    etaMs: 182_000,
    elapsedMs: 30_000,
    inFlight: 14,
    setpoint: 22,
    rateLimitEpisodes: 2,
    hold: '1 task',
  }),
];

describe('progress lines', () => {
  test('at 160 columns every field is spelled out', () => {
    expect(progressLines(ROWS, 160)).toEqual([
      'arithmetic   70/100 | ETA 15s                                  | 120 samples/min | in flight 10 | setpoint 10 | errors 0 | 429 episodes 0 | elapsed 30s',
      'capitals   533/1000 | ETA 7m47s | held: provider looks unhappy | 60 samples/min  | in flight 4  | setpoint 12 | errors 3 | 429 episodes 2 | elapsed 30s',
      'geography      0/50 | waiting                                                                                 | errors 0 | 429 episodes 0',
      'total      603/1150 | ETA 3m02s | held: 1 task                 | 180 samples/min | in flight 14 | setpoint 22 | errors 3 | 429 episodes 2 | elapsed 30s',
    ]);
  });

  test('at 160 columns with room to spare, a bar', () => {
    const rows = ROWS.map(({ hold: _, ...row }) => row);
    const lines = progressLines(rows, 160);
    expect(lines[0]).toBe(
      'arithmetic [██████████████████████████░░░░░░░░░░░]   70/100 | ETA 15s   | 120 samples/min | in flight 10 | setpoint 10 | errors 0 | 429 episodes 0 | elapsed 30s',
    );
    expect(lines.every((l) => l.length <= 160)).toBe(true);
  });

  test('at 80 columns: name, done/total, ETA, hold, rate, in flight/setpoint, errors', () => {
    expect(progressLines(ROWS, 80)).toEqual([
      'arithmetic   70/100 | ETA 15s          | 120/min | in flight 10/10 | errors 0',
      'capitals   533/1000 | ETA 7m47s | held | 60/min  | in flight 4/12  | errors 3',
      'geography      0/50 | waiting                                      | errors 0',
      'total      603/1150 | ETA 3m02s | held | 180/min | in flight 14/22 | errors 3',
    ]);
  });

  test('at 60 columns: name, done/total, ETA, hold and rate', () => {
    expect(progressLines(ROWS, 60)).toEqual([
      'arithmetic   70/100 | ETA 15s          | 120/min',
      'capitals   533/1000 | ETA 7m47s | held | 60/min',
      'geography      0/50 | waiting',
      'total      603/1150 | ETA 3m02s | held | 180/min',
    ]);
  });

  test('a long task name gives way, marked, before done/total and the ETA', () => {
    const rows = [running({ name: 'a-very-long-task-name-indeed', done: 5, etaMs: 60_000 })];
    expect(progressLines(rows, 40)).toEqual(['a-very-long-task-name… 5/100 | ETA 1m00s']);
    expect(progressLines(rows, 31)).toEqual(['a-very-long-… 5/100 | ETA 1m00s']);
    // Narrower still, the ETA goes rather than the name below 12 columns.
    expect(progressLines(rows, 28)).toEqual(['a-very-long-task-name… 5/100']);
  });

  test.each(Array.from({ length: 181 }, (_, i) => i + 20))(
    'at %d columns no line is wider, and every field is whole',
    (width) => {
      const lines = progressLines(ROWS, width);
      expect(lines).toHaveLength(ROWS.length);
      for (const line of lines) {
        expect(line.length).toBeLessThanOrEqual(width);
        for (const field of fields(line)) expect(field).toMatch(FIELD);
      }
      // done/total stays on every line, whatever the width.
      lines.forEach((line, i) => expect(fields(line)[0]).toBe(`${ROWS[i].done}/${ROWS[i].total}`));
    },
  );

  test('narrowing drops fields in order: elapsed, 429s, errors, in flight, rate, hold, ETA', () => {
    const seen = (field: RegExp) =>
      [200, 120, 100, 90, 80, 70, 60, 40, 30].map((w) =>
        progressLines(ROWS, w).some((l) => field.test(l)),
      );
    const lastWidthShown = (field: RegExp) =>
      [200, 120, 100, 90, 80, 70, 60, 40, 30][seen(field).lastIndexOf(true)];
    const order = [/elapsed/, /429/, /errors/, /in flight/, /\/min/, /held/, /ETA/].map(
      lastWidthShown,
    );
    expect(order).toEqual([...order].sort((a, b) => b - a));
    expect(lastWidthShown(/ETA/)).toBeLessThanOrEqual(40);
  });
});

test.each<[number, string]>([
  [0, '0s'],
  [44_600, '45s'],
  [185_000, '3m05s'],
  [7_380_000, '2h03m'],
  [273_600_000, '3d04h'],
])('duration(%d) = %s', (ms, text) => expect(duration(ms)).toBe(text));

test.each<[number, string]>([
  [200, '1s'],
  [1_000, '1s'],
  [59_001, '1m00s'],
])('etaText(%d) = %s, rounded up', (ms, text) => expect(etaText(ms)).toBe(text));

test.each<[number, string]>([
  [0, '0.0'],
  [2.345, '2.3'],
  [12.6, '13'],
])('perMinute(%d) = %s', (rate, text) => expect(perMinute(rate)).toBe(text));

test('drawBar fills its share', () => {
  expect(drawBar(0, 10, 4)).toBe('[░░░░]');
  expect(drawBar(5, 10, 4)).toBe('[██░░]');
  expect(drawBar(10, 10, 4)).toBe('[████]');
  expect(drawBar(0, 0, 4)).toBe('[░░░░]');
});

describe('rowsThatFit', () => {
  const task = (name: string, state: ProgressRow['state']) => running({ name, state });
  const total = running({ name: 'total' });

  test('all rows when they fit', () => {
    const rows = [task('a', 'running'), task('b', 'done'), total];
    expect(rowsThatFit(rows, 3)).toEqual({ rows });
  });

  test('running tasks first, in their order, then the total and what was left out', () => {
    const rows = [
      task('a', 'done'),
      task('b', 'running'),
      task('c', 'waiting'),
      task('d', 'running'),
      task('e', 'done'),
      total,
    ];
    const fit = rowsThatFit(rows, 5);
    expect(fit.rows.map((r) => r.name)).toEqual(['b', 'c', 'd', 'total']);
    expect(fit.leftOut).toBe('… 2 more tasks (2 finished)');
    expect(rowsThatFit(rows, 3)).toEqual({
      rows: [rows[1], total],
      leftOut: '… 4 more tasks (1 running, 1 waiting, 2 finished)',
    });
  });
});

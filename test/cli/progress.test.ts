import { createProgress } from '../../src/cli/progress';
import type { EvalSetStatus, TaskStatus } from '../../src/workflows/types';
import { taskStatus } from '../helpers/task-status';

function fakeStream(tty?: { columns: number; rows?: number }): {
  stream: NodeJS.WriteStream;
  lines: () => string[];
  text: () => string;
} {
  let text = '';
  const stream = {
    isTTY: tty !== undefined,
    columns: tty?.columns,
    rows: tty?.rows,
    write: (chunk: string) => {
      text += chunk;
      return true;
    },
  } as unknown as NodeJS.WriteStream;
  return { stream, lines: () => text.split('\n').filter(Boolean), text: () => text };
}

/** The escape character, built so that no regular expression literal holds a control character. */
const ESC = String.fromCharCode(27);

/**
 * What a terminal shows after `text`: cursor-up, column, erase-line and erase-below applied
 * (lines are written whole from their first column, so a column move keeps what is left of it).
 */
function screen(text: string): string[] {
  const rows: string[] = [];
  let row = 0;
  const parts = text.split(new RegExp(`(${ESC}\\[[0-9;?]*[A-Za-z]|\r|\n)`));
  for (const part of parts) {
    const up = new RegExp(`^${ESC}\\[(\\d+)A$`).exec(part);
    const column = new RegExp(`^${ESC}\\[(\\d+)G$`).exec(part);
    if (up) row -= Number(up[1]);
    else if (column) rows[row] = (rows[row] ?? '').slice(0, Number(column[1]) - 1);
    else if (part === '\n') row += 1;
    else if (part === `${ESC}[2K` || part === '\r') rows[row] = '';
    // Always at the start of a line here: erases it and all below.
    else if (part === `${ESC}[J` || part === `${ESC}[0J`) rows.length = row;
    else if (part.startsWith(ESC)) continue;
    else if (part) rows[row] = (rows[row] ?? '') + part;
  }
  return rows.filter((r) => r !== undefined && r !== '');
}

function status(
  completed: number,
  state: TaskStatus['state'],
  holds: EvalSetStatus['holds'] = { global: null, tasks: {} },
): EvalSetStatus {
  const task = taskStatus({
    name: 't',
    state,
    taskQueue: 'q',
    samples: 2,
    completed,
    in_flight: 2 - completed,
    setpoint: 4,
    ramp_state: 'climbing',
  });
  return {
    eval_set: 'e',
    state: 'running',
    tasks: [task],
    ramp_history: [],
    holds,
  };
}

describe('plain progress', () => {
  it('prints a changed task, and its finish at once', () => {
    const { stream, lines } = fakeStream();
    const progress = createProgress(stream);
    progress.update(status(0, 'running'));
    progress.update(status(1, 'running')); // within the quiet interval: not printed
    progress.update(status(2, 'done'));
    // The run's last reading zeroes a finished task's setpoint: not news, not printed again.
    progress.update({
      ...status(2, 'done'),
      tasks: [{ ...status(2, 'done').tasks[0], setpoint: 0 }],
    });
    expect(lines()).toEqual([
      '[e] t: 0/2 done, 2 in flight, setpoint 4, 0 errors',
      '[e] t: 2/2 done, 0 in flight, setpoint 4, 0 errors (finished)',
    ]);
  });

  it('prints nothing once stopped: a reading that lands after the summary stays silent', () => {
    const { stream, lines } = fakeStream();
    const progress = createProgress(stream);
    progress.update(status(0, 'running'));
    progress.stop();
    progress.update(status(2, 'done'));
    progress.stop();
    expect(lines()).toEqual(['[e] t: 0/2 done, 2 in flight, setpoint 4, 0 errors']);
  });

  it('gains the rate and ETA once measured, a hold, and a total line for several tasks', () => {
    const { stream, lines } = fakeStream();
    let now = 0;
    const progress = createProgress(stream, { now: () => now });
    const at = (s: number): EvalSetStatus => ({
      eval_set: 'e',
      state: 'running',
      tasks: [
        taskStatus({ name: 'a', samples: 100, completed: 2 * s, in_flight: 3, setpoint: 4 }),
        taskStatus({ name: 'b', samples: 100, completed: s, in_flight: 1, setpoint: 2 }),
      ],
      ramp_history: [],
      holds: { global: null, tasks: { b: { reason: 'slow' } } },
    });
    progress.update(at(0));
    now = 10_000;
    progress.update(at(10));
    expect(lines()).toEqual([
      '[e] a: 0/100 done, 3 in flight, setpoint 4, 0 errors',
      '[e] b: 0/100 done, 1 in flight, setpoint 2, 0 errors, held: slow',
      '[e] total: 0/200 done, 4 in flight, setpoint 6, 0 errors, held: 1 task',
      '[e] a: 20/100 done, 3 in flight, setpoint 4, 0 errors, 120 samples/min, ETA 40s, elapsed 10s',
      '[e] b: 10/100 done, 1 in flight, setpoint 2, 0 errors, 60 samples/min, ETA 1m30s, held: slow, elapsed 10s',
      '[e] total: 30/200 done, 4 in flight, setpoint 6, 0 errors, 180 samples/min, ETA 57s, held: 1 task, elapsed 10s',
    ]);
  });
});

describe('terminal progress', () => {
  const tasks = (s: number, holds?: EvalSetStatus['holds']): EvalSetStatus => ({
    eval_set: 'e',
    state: 'running',
    tasks: [
      taskStatus({
        name: 'arithmetic',
        samples: 100,
        completed: 2 * s,
        in_flight: 10,
        setpoint: 10,
      }),
      taskStatus({ name: 'capitals', samples: 1_000, completed: s, in_flight: 4, setpoint: 12 }),
    ],
    ramp_history: [],
    holds: holds ?? { global: null, tasks: {} },
  });

  it('redraws a line per task and a total in place, within the width', () => {
    const { stream, text } = fakeStream({ columns: 80 });
    let now = 0;
    const progress = createProgress(stream, { now: () => now });
    for (let s = 0; s <= 10; s++) {
      now = s * 1_000;
      progress.update(tasks(s, s === 10 ? { global: { reason: 'quota' }, tasks: {} } : undefined));
    }
    expect(screen(text())).toEqual([
      'arithmetic  20/100 | ETA 40s    | held | 120/min | in flight 10/10 | errors 0',
      'capitals   10/1000 | ETA 16m30s | held | 60/min  | in flight 4/12  | errors 0',
      'total      30/1100 | ETA 5m57s  | held | 180/min | in flight 14/22 | errors 0',
    ]);
    progress.stop();
    // The cursor is hidden while drawing, and shown again once stopped, the lines left in place.
    expect(text().startsWith('\x1b[?25l')).toBe(true);
    expect(text().lastIndexOf('\x1b[?25h')).toBeGreaterThan(text().lastIndexOf('\x1b[?25l'));
    expect(screen(text())).toHaveLength(3);
  });

  it('shows no more lines than the terminal has, running tasks first, and says what it left out', () => {
    const { stream, text } = fakeStream({ columns: 80, rows: 4 });
    const progress = createProgress(stream, { now: () => 0 });
    const many: EvalSetStatus = {
      ...tasks(0),
      tasks: [
        taskStatus({ name: 'a', state: 'done', samples: 5, completed: 5 }),
        taskStatus({ name: 'b' }),
        taskStatus({ name: 'c', state: 'waiting' }),
      ],
    };
    progress.update(many);
    progress.update(many);
    const shown = screen(text());
    expect(shown.map((l) => l.split(' ')[0])).toEqual(['b', 'total', '…']);
    expect(shown[2]).toBe('… 2 more tasks (1 waiting, 1 finished)');
    progress.stop();
  });

  it('prints a line of its own above the display, and the display again below it', () => {
    const { stream, text } = fakeStream({ columns: 160 });
    const progress = createProgress(stream, { now: () => 0 });
    progress.update(tasks(0));
    progress.log('lost Temporal at 127.0.0.1:7233; waiting for it to come back');
    progress.update(tasks(1));
    const shown = screen(text());
    expect(shown[0]).toBe('lost Temporal at 127.0.0.1:7233; waiting for it to come back');
    expect(shown.slice(1).map((l) => l.split(' ')[0])).toEqual(['arithmetic', 'capitals', 'total']);
    expect(shown[1]).toContain('2/100');
    progress.stop();
  });
});

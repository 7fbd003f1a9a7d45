/** The final table of an eval set's results. */
import type { MetricName } from '../core/metrics';
import type { EvalSetResult, TaskResult } from '../workflows/types';

/**
 * Rows padded to aligned columns, two spaces apart. A left-aligned last column runs free, so a
 * long reason does not widen the table.
 */
export function alignColumns(rows: string[][], rightAligned: boolean[]): string[] {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((cells) =>
    cells
      .map((c, i) => {
        if (rightAligned[i]) return c.padStart(widths[i]);
        return i === cells.length - 1 ? c : c.padEnd(widths[i]);
      })
      .join('  ')
      .trimEnd(),
  );
}

/**
 * One row per task and reducer: a task reduced two ways (`mean` and `pass_at_2`) gets a second
 * row for the second, its counts left blank. The metric columns are every metric any task names.
 */
export function resultTable(result: EvalSetResult): string {
  const scoresOf = (t: TaskResult) => t.metrics?.scores ?? [];
  const metrics = [
    ...new Set(result.tasks.flatMap((t) => scoresOf(t).flatMap((s) => Object.keys(s.metrics)))),
  ] as MetricName[];
  const header = [
    'task',
    'samples',
    'completed',
    'errored',
    'limited',
    'stuck',
    'retries',
    'reducer',
    ...metrics,
  ];
  const rows = result.tasks.flatMap((t) => {
    const counts = [
      t.name,
      String(t.samples),
      String(t.completed),
      String(t.errored),
      String(t.limited ?? 0),
      String(t.stuck ?? 0),
      String(t.retries ?? 0),
    ];
    const scores = scoresOf(t);
    if (scores.length === 0) return [[...counts, '-', ...metrics.map(() => '-')]];
    return scores.map((score, i) => [
      ...(i === 0 ? counts : counts.map(() => '')),
      score.reducer,
      ...metrics.map((name) => metricCell(score.metrics[name])),
    ]);
  });
  const rule = header.map((h, i) =>
    '-'.repeat(Math.max(h.length, ...rows.map((r) => r[i].length))),
  );
  return alignColumns(
    [header, rule, ...rows],
    header.map((h, i) => i > 0 && h !== 'reducer'),
  ).join('\n');
}

/** A metric's value to three places; `-` where the task has no such metric or scored nothing. */
function metricCell(value: number | null | undefined): string {
  return value === undefined || value === null ? '-' : value.toFixed(3);
}

/** The `--json` summary: stable keys for scripts. */
export function resultJson(result: EvalSetResult): unknown {
  return {
    eval_set: result.eval_set,
    status: result.status,
    log_dir: result.log_dir,
    tasks: result.tasks.map((t) => ({
      name: t.name,
      samples: t.samples,
      completed: t.completed,
      errored: t.errored,
      resumed: t.resumed,
      limited: t.limited ?? 0,
      stuck: t.stuck ?? 0,
      retries: t.retries ?? 0,
      metrics: t.metrics,
    })),
  };
}

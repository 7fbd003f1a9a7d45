/** The final table of an eval set's results. */
import type { EvalSetResult } from '../workflows/types';

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

export function resultTable(result: EvalSetResult): string {
  const header = ['task', 'samples', 'completed', 'errored', 'limited', 'accuracy', 'stderr'];
  const rows = result.tasks.map((t) => [
    t.name,
    String(t.samples),
    String(t.completed),
    String(t.errored),
    String(t.limited ?? 0),
    t.metrics ? t.metrics.accuracy.toFixed(3) : '-',
    t.metrics ? t.metrics.stderr.toFixed(3) : '-',
  ]);
  const rule = header.map((h, i) =>
    '-'.repeat(Math.max(h.length, ...rows.map((r) => r[i].length))),
  );
  return alignColumns(
    [header, rule, ...rows],
    header.map((_, i) => i > 0),
  ).join('\n');
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
      metrics: t.metrics,
    })),
  };
}

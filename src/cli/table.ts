/** The final table of an eval set's results. */
import type { EvalSetResult } from '../workflows/types';

export function resultTable(result: EvalSetResult): string {
  const header = ['task', 'samples', 'completed', 'errored', 'accuracy', 'stderr'];
  const rows = result.tasks.map((t) => [
    t.name,
    String(t.samples),
    String(t.completed),
    String(t.errored),
    t.metrics ? t.metrics.accuracy.toFixed(3) : '-',
    t.metrics ? t.metrics.stderr.toFixed(3) : '-',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
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
      metrics: t.metrics,
    })),
  };
}

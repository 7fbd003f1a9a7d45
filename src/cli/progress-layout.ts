/**
 * The progress lines of a terminal, laid out to its width. Each line is a task's (or the total's)
 * name, a bar when there is room, then fields in aligned columns. A narrow terminal makes fields
 * give way in a declared order, whole: a field is shortened or left out, never cut in half.
 */
import type { ProgressRow } from './progress-rate';

const FIELDS = [
  'done',
  'eta',
  'hold',
  'rate',
  'in_flight',
  'setpoint',
  'errors',
  'rate_limits',
  'elapsed',
] as const;
type Field = (typeof FIELDS)[number];

/** A field's texts for a row, longest first; '' when it has nothing to say for that row. */
const FORMS: Record<Field, (r: ProgressRow) => string[]> = {
  done: (r) => [`${r.done}/${r.total}`],
  eta: (r) =>
    r.state === 'done'
      ? ['finished']
      : r.state === 'waiting'
        ? ['waiting']
        : r.etaMs === undefined
          ? ['']
          : [`ETA ${etaText(r.etaMs)}`],
  // A pause says more than a hold: nothing is admitted at all.
  hold: (r) =>
    r.paused !== undefined
      ? [`paused: ${r.paused}`, 'paused']
      : r.hold === undefined
        ? ['']
        : [`held: ${r.hold}`, 'held'],
  rate: (r) =>
    r.perMinute === undefined
      ? ['']
      : [`${perMinute(r.perMinute)} samples/min`, `${perMinute(r.perMinute)}/min`],
  // Short, the two share a column: `in flight 4/12`.
  in_flight: (r) =>
    r.state === 'running'
      ? [`in flight ${r.inFlight}`, `in flight ${r.inFlight}/${r.setpoint}`]
      : [''],
  setpoint: (r) => (r.state === 'running' ? [`setpoint ${r.setpoint}`, ''] : ['']),
  errors: (r) => [`errors ${r.errors}`],
  rate_limits: (r) => [`429 episodes ${r.rateLimitEpisodes}`, `429 ep ${r.rateLimitEpisodes}`],
  elapsed: (r) => (r.elapsedMs === undefined ? [''] : [`elapsed ${duration(r.elapsedMs)}`]),
};

/** A step shortens fields, leaves them out, or lets long task names be cut to `cut_names`. */
type Step = { shorten: Field[] } | { drop: Field[] } | { cut_names: number };

/**
 * How the fields give way as the terminal narrows, one step at a time until the lines fit: first
 * the long spellings, then elapsed time, 429s, errors (the summary at the end lists them), in
 * flight and setpoint, the rate, the hold. Then long task names are cut (to 12 columns, marked
 * with an ellipsis) before the ETA goes; done/total stays to the last.
 */
export const GIVE_WAY: readonly Step[] = [
  { shorten: ['hold'] },
  { shorten: ['rate'] },
  { shorten: ['in_flight', 'setpoint'] },
  { shorten: ['rate_limits'] },
  { drop: ['elapsed'] },
  { drop: ['rate_limits'] },
  { drop: ['errors'] },
  { drop: ['in_flight', 'setpoint'] },
  { drop: ['rate'] },
  { drop: ['hold'] },
  { cut_names: 12 },
  { drop: ['eta'] },
  { cut_names: 4 },
];

const SEPARATOR = ' | ';
/** The bar is drawn only when this much room is left, and never wider than the most. */
const BAR_MIN = 10;
const BAR_MAX = 40;

/** The lines of `rows`, each at most `width` columns. */
export function progressLines(rows: readonly ProgressRow[], width: number): string[] {
  if (rows.length === 0) return [];
  const forms = rows.map((r) => FIELDS.map((f) => FORMS[f](r)));
  const chosen = new Map<Field, number>(FIELDS.map((f) => [f, 0]));
  const nameWidth = Math.max(...rows.map((r) => r.name.length));
  const columns = (): { field: Field; width: number; cells: string[] }[] =>
    FIELDS.flatMap((field, i) => {
      const form = chosen.get(field);
      if (form === undefined) return [];
      const cells = forms.map((f) => f[i][Math.min(form, f[i].length - 1)]);
      const cellWidth = Math.max(...cells.map((c) => c.length));
      return cellWidth === 0 ? [] : [{ field, width: cellWidth, cells }];
    });
  const fieldsWidth = (cols: { width: number }[]): number =>
    cols.reduce((n, c) => n + c.width, 0) + SEPARATOR.length * Math.max(0, cols.length - 1);
  let cols = columns();
  let nameCut = nameWidth;
  for (const step of GIVE_WAY) {
    if (Math.min(nameWidth, nameCut) + 1 + fieldsWidth(cols) <= width) break;
    if ('cut_names' in step) nameCut = step.cut_names;
    else if ('drop' in step) for (const field of step.drop) chosen.delete(field);
    else
      for (const field of step.shorten)
        if (chosen.has(field)) chosen.set(field, Number.MAX_SAFE_INTEGER);
    cols = columns();
  }
  // Names are cut (marked with an ellipsis) only as far as they must, and no further than allowed.
  const room = width - 1 - fieldsWidth(cols);
  const nameFits = Math.max(Math.min(nameWidth, nameCut), Math.min(nameWidth, room));
  const barRoom = room - nameFits - 1;
  const barWidth = barRoom >= BAR_MIN + 2 ? Math.min(BAR_MAX, barRoom - 2) : 0;
  return rows.map((r, i) => {
    // A row with nothing to say in a column leaves it blank, without a separator.
    const cells = cols.map(({ field, width: w, cells: texts }, at) => {
      const text = field === 'done' ? texts[i].padStart(w) : texts[i].padEnd(w);
      const separator = at === 0 ? '' : texts[i] === '' ? ' '.repeat(SEPARATOR.length) : SEPARATOR;
      return separator + text;
    });
    const name = fitName(r.name, nameFits).padEnd(nameFits);
    const bar = barWidth > 0 ? `${drawBar(r.done, r.total, barWidth)} ` : '';
    // Only a terminal narrower than name and done/total together is cut, as a last resort.
    return `${name} ${bar}${cells.join('')}`.trimEnd().slice(0, Math.max(0, width));
  });
}

function fitName(name: string, width: number): string {
  return name.length <= width ? name : `${name.slice(0, width - 1)}…`;
}

/** `[█████░░░░░]`, `width` columns inside the brackets. */
export function drawBar(done: number, total: number, width: number): string {
  const filled = total > 0 ? Math.min(width, Math.round((done / total) * width)) : 0;
  return `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}]`;
}

/** `45s`, `3m05s`, `2h03m`, `3d04h`. */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const pad = (n: number): string => String(n).padStart(2, '0');
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${pad(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86_400)}d${pad(Math.floor((s % 86_400) / 3600))}h`;
}

/** The ETA rounded up: `1s` rather than `0s` while a sample is still to finish. */
export function etaText(ms: number): string {
  return duration(Math.ceil(ms / 1000) * 1000);
}

/** One decimal below 10 a minute, whole numbers above. */
export function perMinute(rate: number): string {
  return rate < 10 ? rate.toFixed(1) : String(Math.round(rate));
}

/**
 * The rows a terminal `height` lines high can show: a display taller than the screen cannot be
 * redrawn in place. Running tasks come first, then waiting ones, then finished ones; the total
 * always shows, and a last line says what was left out.
 */
export function rowsThatFit(
  rows: readonly ProgressRow[],
  height: number,
): { rows: ProgressRow[]; leftOut?: string } {
  if (rows.length <= height) return { rows: [...rows] };
  const tasks = rows.slice(0, -1);
  const order: ProgressRow['state'][] = ['running', 'waiting', 'done'];
  const shown = new Set(
    [...tasks]
      .sort((a, b) => order.indexOf(a.state) - order.indexOf(b.state))
      .slice(0, Math.max(0, height - 2)),
  );
  const hidden = tasks.filter((t) => !shown.has(t));
  const count = (state: ProgressRow['state']): number =>
    hidden.filter((t) => t.state === state).length;
  const kinds = order
    .map((state) => [count(state), state === 'done' ? 'finished' : state] as const)
    .filter(([n]) => n > 0)
    .map(([n, state]) => `${n} ${state}`);
  return {
    rows: [...tasks.filter((t) => shown.has(t)), rows[rows.length - 1]],
    leftOut: `… ${hidden.length} more task${hidden.length === 1 ? '' : 's'} (${kinds.join(', ')})`,
  };
}

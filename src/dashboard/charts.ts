/**
 * The charts of one eval set as one Vega-Lite spec, data included: per task, setpoint, in flight
 * and connection ceiling over time with the ramp history's moves and holds marked, beside
 * completions per minute and 429s per window; then the same per provider account. The browser
 * draws it (src/dashboard/page.ts) and `steward plot` renders it to a file (render.ts).
 */
import type { TopLevelSpec } from 'vega-lite' with { 'resolution-mode': 'import' };
import type { DashboardData } from './model';

const WIDTH = 460;
const HEIGHT = 170;
const SETPOINT = 'setpoint';
const IN_FLIGHT = 'in flight';
const CEILING = 'connection ceiling';
const LIMIT = 'controller limit';
const COMPLETIONS = 'completions / min';
const RATE_LIMITS = '429s in window';
const COLORS: Record<string, string> = {
  [SETPOINT]: '#1f77b4',
  [IN_FLIGHT]: '#2ca02c',
  [CEILING]: '#ff7f0e',
  [LIMIT]: '#9467bd',
  [COMPLETIONS]: '#17becf',
  [RATE_LIMITS]: '#d62728',
};
/** One color scale for every chart, so each series has one color and one legend entry. */
const COLOR = {
  field: 'series',
  type: 'nominal' as const,
  title: null,
  scale: { domain: Object.keys(COLORS), range: Object.values(COLORS) },
  legend: { orient: 'top' as const, direction: 'horizontal' as const },
};
const X = { field: 't', type: 'temporal' as const, title: null, axis: { format: '%H:%M:%S' } };

type Spec = Record<string, unknown>;

/** The Vega-Lite spec of every chart of `data`. */
export function dashboardSpec(data: DashboardData): TopLevelSpec {
  const tasks = data.tasks.map((t) => t.name);
  const accounts = [
    ...new Set([
      ...data.accounts.map((a) => a.account),
      ...data.tends.flatMap((r) => r.accounts.map((a) => a.account)),
    ]),
  ];
  const rows = [
    ...tasks.map((task) => ({
      hconcat: [
        levels(`${task}: concurrency`, taskLevels(data, task), moves(data, task)),
        rates(`${task}: throughput`, taskRates(data, task)),
      ],
    })),
    ...accounts.map((account) => ({
      hconcat: [
        levels(`account ${account}`, accountLevels(data, account), accountMoves(data, account)),
        rates(`account ${account}: 429s`, accountRates(data, account)),
      ],
    })),
  ];
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: `${data.eval_set} (${data.state})`, anchor: 'start' },
    // A list: the PNG rasteriser may have none of the first faces and no generic families.
    config: { font: 'Helvetica, Arial, DejaVu Sans, sans-serif', view: { stroke: null } },
    vconcat: rows.length > 0 ? rows : [{ mark: 'text', encoding: { text: { value: 'no tasks' } } }],
  } as TopLevelSpec;
}

/** Step lines of the levels, and a rule at each ramp move or hold, its reason as tooltip. */
function levels(title: string, points: Spec[], marks: Spec[]): Spec {
  return {
    title: { text: title, anchor: 'start', fontSize: 12, limit: WIDTH },
    width: WIDTH,
    height: HEIGHT,
    layer: [
      {
        data: { values: points },
        mark: { type: 'line', interpolate: 'step-after', strokeWidth: 2, point: { size: 12 } },
        encoding: {
          x: X,
          y: { field: 'value', type: 'quantitative', title: null },
          color: COLOR,
          // Dashed: the ceilings, which the levels often meet.
          strokeDash: {
            condition: {
              test: `datum.series === '${CEILING}' || datum.series === '${LIMIT}'`,
              value: [6, 3],
            },
            value: [1, 0],
          },
          tooltip: [
            { field: 't', type: 'temporal', format: '%H:%M:%S', title: 'time' },
            { field: 'series', title: 'series' },
            { field: 'value', title: 'value' },
          ],
        },
      },
      {
        data: { values: marks },
        mark: { type: 'rule', strokeDash: [3, 3], opacity: 0.7 },
        encoding: {
          x: X,
          color: { value: '#666' },
          tooltip: [
            { field: 't', type: 'temporal', format: '%H:%M:%S', title: 'time' },
            { field: 'kind', title: 'kind' },
            { field: 'move', title: 'move' },
            { field: 'reason', title: 'reason' },
          ],
        },
      },
    ],
  };
}

/** Bars over each window: completions per minute, 429s. */
function rates(title: string, bars: Spec[]): Spec {
  return {
    title: { text: title, anchor: 'start', fontSize: 12, limit: WIDTH },
    width: WIDTH,
    height: HEIGHT,
    data: { values: bars },
    mark: { type: 'rect', opacity: 0.8 },
    encoding: {
      x: X,
      x2: { field: 't_end' },
      y: { field: 'value', type: 'quantitative', title: null },
      y2: { datum: 0 },
      color: COLOR,
      tooltip: [
        { field: 't_end', type: 'temporal', format: '%H:%M:%S', title: 'window end' },
        { field: 'series', title: 'series' },
        { field: 'value', title: 'value', format: '.1f' },
      ],
    },
  };
}

function taskSeries(data: DashboardData, task: string) {
  return data.tends.flatMap((r) =>
    r.tasks
      .filter((t) => t.task === task && t.state !== 'waiting')
      .map((t) => ({ t: r.time, ...t })),
  );
}

function taskLevels(data: DashboardData, task: string): Spec[] {
  return taskSeries(data, task).flatMap((p) => [
    { t: p.t, series: SETPOINT, value: p.setpoint },
    { t: p.t, series: IN_FLIGHT, value: p.in_flight },
    ...(p.connection_ceiling === null
      ? []
      : [{ t: p.t, series: CEILING, value: p.connection_ceiling }]),
  ]);
}

function taskRates(data: DashboardData, task: string): Spec[] {
  const points = taskSeries(data, task);
  return points.slice(1).flatMap((p, i) => {
    const prev = points[i];
    const ms = Date.parse(p.t) - Date.parse(prev.t);
    if (ms <= 0) return [];
    const window = { t: prev.t, t_end: p.t };
    return [
      { ...window, series: COMPLETIONS, value: ((p.completed - prev.completed) / ms) * 60_000 },
      { ...window, series: RATE_LIMITS, value: p.rate_limit_episodes },
    ];
  });
}

function accountSeries(data: DashboardData, account: string) {
  return data.tends.flatMap((r) =>
    r.accounts.filter((a) => a.account === account).map((a) => ({ t: r.time, ...a })),
  );
}

function accountLevels(data: DashboardData, account: string): Spec[] {
  return accountSeries(data, account).flatMap((p) => [
    { t: p.t, series: CEILING, value: p.connection_ceiling },
    ...(p.controller_limit === null ? [] : [{ t: p.t, series: LIMIT, value: p.controller_limit }]),
    ...(p.in_flight === null ? [] : [{ t: p.t, series: IN_FLIGHT, value: p.in_flight }]),
  ]);
}

function accountRates(data: DashboardData, account: string): Spec[] {
  const points = accountSeries(data, account);
  return points.slice(1).map((p, i) => ({
    t: points[i].t,
    t_end: p.t,
    series: RATE_LIMITS,
    value: p.rate_limit_episodes,
  }));
}

/** The history entries that concern a task: its own, and those for every task (`*`). */
function moves(data: DashboardData, task: string): Spec[] {
  return data.history
    .filter((e) => e.account === undefined && (e.task === task || e.task === '*'))
    .map(mark);
}

function accountMoves(data: DashboardData, account: string): Spec[] {
  return data.history.filter((e) => e.account === account).map(mark);
}

function mark(e: DashboardData['history'][number]): Spec {
  const move = e.from === null && e.to === null ? '' : `${e.from ?? ''} → ${e.to ?? ''}`;
  return { t: e.time, kind: e.kind, move, reason: e.by ? `${e.reason} (by ${e.by})` : e.reason };
}

/**
 * The ramp bench's picture of a run: setpoint, connection ceiling and requests in flight at the
 * provider over time, above the 429s the provider answered each second. A Vega-Lite spec
 * rendered to SVG headlessly (no browser, no canvas).
 */
import type { TopLevelSpec } from 'vega-lite' with { 'resolution-mode': 'import' };
import { renderSvg } from '../../src/dashboard/render';
import type { SimStatsPoint } from '../../src/sim/provider';
import type { Step } from './measure';

export interface RampPlotInput {
  title: string;
  /** The provider's per-second series, `t` in seconds since the run started. */
  series: SimStatsPoint[];
  setpoint: Step[];
  connections?: Step[];
  /** Requests the provider serves at once, drawn as a rule. */
  capacity: number;
  /** Seconds from start to end of the run: where the step functions stop. */
  endSeconds: number;
  /** Seconds at which the climb ended, drawn as a rule; omitted when there was none. */
  climbEndSeconds?: number;
}

const IN_FLIGHT = 'requests in flight at the provider (peak per second)';
const SETPOINT = 'sample setpoint';
const CONNECTIONS = 'connection ceiling';
const WIDTH = 860;

/** Renders the plot as an SVG document. */
export function renderRampPlot(input: RampPlotInput): Promise<string> {
  return renderSvg(rampPlotSpec(input));
}

/** The Vega-Lite spec of {@link renderRampPlot}, data included. */
export function rampPlotSpec(input: RampPlotInput): TopLevelSpec {
  const steps = [
    ...extend(input.setpoint, input.endSeconds).map((s) => ({ ...s, series: SETPOINT })),
    ...extend(input.connections ?? [], input.endSeconds).map((s) => ({
      ...s,
      series: CONNECTIONS,
    })),
  ];
  const inFlight = input.series.map((p) => ({ t: p.t, value: p.in_flight, series: IN_FLIGHT }));
  const domain = input.connections ? [SETPOINT, CONNECTIONS, IN_FLIGHT] : [SETPOINT, IN_FLIGHT];
  const marks = [{ y: input.capacity, label: `provider capacity ${input.capacity}` }];
  const climb =
    input.climbEndSeconds === undefined ? [] : [{ t: input.climbEndSeconds, label: 'climb ends' }];
  const x = {
    field: 't',
    type: 'quantitative' as const,
    title: 'seconds since launch',
    scale: { domain: [0, Math.ceil(input.endSeconds)] },
  };

  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: input.title, anchor: 'start' },
    // A list: the PNG rasteriser may have none of the first faces and no generic families.
    config: { font: 'Helvetica, Arial, DejaVu Sans, sans-serif', view: { stroke: null } },
    vconcat: [
      {
        width: WIDTH,
        height: 300,
        encoding: {
          color: {
            field: 'series',
            type: 'nominal',
            title: null,
            scale: { domain, range: domain.map((d) => COLORS[d]) },
            legend: { orient: 'top', direction: 'horizontal', labelLimit: 600 },
          },
        },
        layer: [
          {
            data: { values: inFlight },
            mark: { type: 'line', strokeWidth: 1, opacity: 0.8 },
            encoding: { x, y: { field: 'value', type: 'quantitative', title: 'concurrency' } },
          },
          {
            data: { values: steps },
            mark: { type: 'line', interpolate: 'step-after', strokeWidth: 2.5 },
            encoding: {
              x,
              y: { field: 'value', type: 'quantitative' },
              strokeDash: {
                condition: { test: `datum.series === '${CONNECTIONS}'`, value: [6, 3] },
                value: [1, 0],
              },
            },
          },
          {
            data: { values: marks },
            mark: { type: 'rule', strokeDash: [4, 4] },
            encoding: { y: { field: 'y', type: 'quantitative' }, color: { value: RED } },
          },
          {
            data: { values: marks },
            mark: { type: 'text', align: 'right', dy: -6 },
            encoding: {
              x: { value: WIDTH },
              y: { field: 'y', type: 'quantitative' },
              text: { field: 'label' },
              color: { value: RED },
            },
          },
          {
            data: { values: climb },
            mark: { type: 'rule', strokeDash: [2, 3] },
            encoding: { x, color: { value: GREY } },
          },
          {
            data: { values: climb },
            mark: { type: 'text', align: 'left', dx: 4, dy: 6 },
            encoding: { x, y: { value: 0 }, text: { field: 'label' }, color: { value: GREY } },
          },
        ],
      },
      {
        width: WIDTH,
        height: 110,
        data: { values: input.series },
        transform: [{ calculate: 'datum.t + 1', as: 't_end' }],
        mark: { type: 'bar', color: RED },
        encoding: {
          x,
          x2: { field: 't_end' },
          y2: { datum: 0 },
          y: { field: 'rate_limited', type: 'quantitative', title: '429s per second' },
        },
      },
    ],
  };
}

const RED = '#d62728';
const GREY = '#666';
const COLORS: Record<string, string> = {
  [SETPOINT]: '#1f77b4',
  [CONNECTIONS]: '#ff7f0e',
  [IN_FLIGHT]: '#2ca02c',
};

/** Repeats the last value at `end`, so a step function is drawn to the end of the run. */
function extend(steps: Step[], end: number): Step[] {
  if (steps.length === 0) return steps;
  return [...steps, { t: end, value: steps[steps.length - 1].value }];
}

/**
 * The peers bench's picture: for each profile (columns) and each measure (rows), one bar per
 * tool at each task count. A Vega-Lite spec, rendered the way the ramp bench renders its own.
 */
import type { TopLevelSpec } from 'vega-lite' with { 'resolution-mode': 'import' };
import { PROFILE_NAMES } from './profiles';

export interface PeerPoint {
  profile: string;
  tasks: number;
  tool: string;
  timeOverIdeal: number;
  /** 0-1. */
  rateLimitedShare: number;
  callsInFlight: number;
  samplesInFlight: number;
}

const MEASURES = [
  'time / ideal',
  '429 share (%)',
  'mean calls in flight',
  'mean samples in flight',
] as const;
const TOOLS = ['Steward', 'Inspect AI'];
const COLORS = ['#1f77b4', '#ff7f0e'];

export function peersPlotSpec(title: string, points: PeerPoint[]): TopLevelSpec {
  const values = points.flatMap((p) => {
    const measured = [
      p.timeOverIdeal,
      p.rateLimitedShare * 100,
      p.callsInFlight,
      p.samplesInFlight,
    ];
    return MEASURES.map((measure, i) => ({
      profile: p.profile,
      tasks: p.tasks,
      tool: p.tool,
      measure,
      value: measured[i],
    }));
  });
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, anchor: 'start' },
    // A list: the PNG rasteriser may have none of the first faces and no generic families.
    config: { font: 'Helvetica, Arial, DejaVu Sans, sans-serif' },
    data: { values },
    facet: {
      row: { field: 'measure', type: 'nominal', sort: [...MEASURES], title: null },
      column: {
        field: 'profile',
        type: 'nominal',
        title: 'provider profile',
        sort: [...PROFILE_NAMES],
      },
    },
    resolve: { scale: { y: 'independent' } },
    spec: {
      width: 240,
      height: 130,
      layer: [
        {
          mark: { type: 'bar' },
          encoding: {
            x: {
              field: 'tasks',
              type: 'ordinal',
              title: 'tasks on one account',
              axis: { labelAngle: 0 },
            },
            xOffset: { field: 'tool', sort: TOOLS },
            y: { field: 'value', type: 'quantitative', title: null },
            color: {
              field: 'tool',
              type: 'nominal',
              title: null,
              scale: { domain: TOOLS, range: COLORS },
              legend: { orient: 'top' },
            },
            tooltip: [{ field: 'tool' }, { field: 'tasks' }, { field: 'value', format: '.2f' }],
          },
        },
        {
          // The ideal, where time / ideal is drawn.
          transform: [{ filter: `datum.measure === '${MEASURES[0]}'` }],
          mark: { type: 'rule', strokeDash: [4, 4], color: '#d62728' },
          encoding: { y: { datum: 1 } },
        },
      ],
    },
  };
}

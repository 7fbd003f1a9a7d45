import {
  climbEndSeconds,
  connectionSteps,
  rateLimitedShare,
  setpointSteps,
} from '../../scripts/ramp/measure';
import type { RampHistoryEntry } from '../../src/workflows/types';

const start = Date.parse('2026-01-01T00:00:00Z');

function entry(
  seconds: number,
  from: number | null,
  to: number | null,
  kind: RampHistoryEntry['kind'] = 'setpoint',
  task = 'bench',
): RampHistoryEntry {
  return {
    time: new Date(start + seconds * 1000).toISOString(),
    task,
    kind,
    from,
    to,
    reason: 'r',
  };
}

describe('setpointSteps', () => {
  it('starts at the first change’s from and follows the task’s setpoint changes in time order', () => {
    const history = [
      entry(10, 70, 90),
      entry(5, 50, 70),
      entry(7, 200, 180, 'connections'),
      entry(8, 50, 999, 'setpoint', 'other'),
      entry(12, null, null, 'hold', '*'),
    ];
    expect(setpointSteps(history, 'bench', start, 50)).toEqual([
      { t: 0, value: 50 },
      { t: 5, value: 70 },
      { t: 10, value: 90 },
    ]);
  });

  it('keeps one of an entry written twice after a crash', () => {
    const history = [entry(5, 50, 70), entry(5, 50, 70), entry(10, 70, 90)];
    expect(setpointSteps(history, 'bench', start, 50).map((s) => s.value)).toEqual([50, 70, 90]);
  });

  it('is the initial value alone when the setpoint never moved', () => {
    expect(setpointSteps([], 'bench', start, 50)).toEqual([{ t: 0, value: 50 }]);
  });
});

describe('connectionSteps', () => {
  it('is undefined when the history never sets a ceiling', () => {
    expect(connectionSteps([entry(5, 50, 70)], 'bench', start)).toBeUndefined();
  });

  it('follows the ceiling changes', () => {
    const history = [entry(5, 200, 120, 'connections'), entry(15, 120, 96, 'connections')];
    expect(connectionSteps(history, 'bench', start)?.map((s) => s.value)).toEqual([200, 120, 96]);
  });
});

describe('climbEndSeconds (tend every 5 s)', () => {
  const steps = (...points: [number, number][]) => points.map(([t, value]) => ({ t, value }));

  it.each([
    ['no change at all', steps([0, 50]), 0],
    [
      'rises one tend apart, then a cut: the tend after the last rise',
      steps([0, 50], [5, 70], [10, 90], [20, 70]),
      15,
    ],
    ['rises, then a cut at the very next tend', steps([0, 50], [5, 70], [10, 50]), 10],
    [
      'rises to the ceiling and stays: the tend after the last rise',
      steps([0, 50], [5, 70], [10, 90]),
      15,
    ],
    ['a pause of two tends ends the opening climb', steps([0, 50], [5, 70], [20, 90]), 10],
    ['a first change that is a cut: no climb', steps([0, 50], [5, 30]), 0],
  ])('%s', (_, input, expected) => {
    expect(climbEndSeconds(input, 5)).toBe(expected);
  });
});

describe('rateLimitedShare', () => {
  const series = [
    { t: 0, in_flight: 0, requests: 100, rate_limited: 50 },
    { t: 1, in_flight: 0, requests: 100, rate_limited: 0 },
    { t: 2, in_flight: 0, requests: 100, rate_limited: 2 },
  ];

  it('counts every second by default', () => {
    expect(rateLimitedShare(series)).toBeCloseTo(52 / 300);
  });

  it('counts only the seconds from the given one on', () => {
    expect(rateLimitedShare(series, 1)).toBeCloseTo(2 / 200);
  });

  it('is 0 when nothing was asked', () => {
    expect(rateLimitedShare([])).toBe(0);
  });
});

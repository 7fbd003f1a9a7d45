/**
 * The memory gate as the tend keeps it (SPEC §2, gate 6): hosts report their memory once a
 * window; the lowest headroom any host reported in the window, over its RAM, holds every task's
 * climb under 10%; a host silent for two windows is dropped; the hosts cross continue-as-new.
 */
import type { ResolvedSettings } from '../../src/config/settings';
import { Tender } from '../../src/workflows/tend';
import type { HostReport } from '../../src/workflows/types';
import { hostReportSchema } from '../../src/workflows/schemas';
import { taskStatus } from '../helpers/task-status';

const settings = {
  samples: { type: 'ramp', lo: 10, hi: 100, step: 10, start: 10 },
  connections: { type: 'adaptive', min: 1, start: 20, max: 1_000 },
  maxSandboxes: null,
} as unknown as ResolvedSettings;

const MIN = 60_000;
const GIB = 1024 ** 3;

function tender(): Tender {
  const t = Tender.fresh(settings);
  for (const name of ['a', 'b']) {
    t.add(
      { name, taskQueue: `q-${name}`, samples: 1_000, model: 'gpt', sandboxed: false },
      taskStatus({ name }),
    );
    t.start(name, 0);
  }
  return t;
}

function saturate(t: Tender): void {
  for (const task of t.tasks.values()) task.status.saturations++;
}

function report(host: string, lowestGib: number, over: Partial<HostReport> = {}): HostReport {
  return {
    host,
    totalBytes: 20 * GIB,
    headroomBytes: Math.max(lowestGib, 8) * GIB,
    lowestHeadroomBytes: lowestGib * GIB,
    fleetResidentBytes: 2 * GIB,
    processes: 4,
    ...over,
  };
}

const setpoints = (t: Tender): number[] => [...t.tasks.values()].map((x) => x.ramp.setpoint);

test("one host's dip under 10% of its RAM in the window holds every task's climb", () => {
  const t = tender();
  t.hostReport(report('big:1', 12), 0.5 * MIN);
  t.hostReport(report('small:2', 1.9), 0.6 * MIN);
  saturate(t);
  t.tend(1 * MIN);
  expect(setpoints(t)).toEqual([10, 10]);
  expect(t.tasks.get('a')!.status.ramp_reason).toBe(
    'host memory low (small:2: headroom 9.5% of RAM < 10%)',
  );

  // The next window the host has room again: the climb goes on.
  t.hostReport(report('big:1', 12), 1.5 * MIN);
  t.hostReport(report('small:2', 6), 1.6 * MIN);
  saturate(t);
  t.tend(2 * MIN);
  expect(setpoints(t)).toEqual([20, 20]);
});

test('the lowest of several reports in one window is what the gate reads', () => {
  const t = tender();
  t.hostReport(report('h:1', 1), 0.2 * MIN);
  t.hostReport(report('h:1', 9), 0.7 * MIN);
  saturate(t);
  t.tend(1 * MIN);
  expect(setpoints(t)).toEqual([10, 10]);
  // The status shows the last report, whose own lowest was fine.
  expect(t.hostStatus()).toEqual([
    {
      host: 'h:1',
      total_bytes: 20 * GIB,
      headroom_bytes: 9 * GIB,
      lowest_headroom_share: 0.45,
      fleet_resident_bytes: 2 * GIB,
      processes: 4,
      reported_at: new Date(0.7 * MIN).toISOString(),
    },
  ]);
});

test('a host silent for one window still counts; silent for two, it is dropped', () => {
  const t = tender();
  t.hostReport(report('h:1', 9), 0.5 * MIN);
  t.hostReport(report('gone:2', 9), 0.5 * MIN);
  saturate(t);
  t.tend(1 * MIN);
  t.hostReport(report('h:1', 9), 1.5 * MIN);
  saturate(t);
  t.tend(2 * MIN);
  expect(t.hostStatus().map((h) => h.host)).toEqual(['gone:2', 'h:1']);
  saturate(t);
  t.tend(3 * MIN);
  expect(t.hostStatus().map((h) => h.host)).toEqual(['h:1']);
  // A silent window reads no memory at all: it neither holds nor frees the climb by itself.
  expect(setpoints(t)).toEqual([40, 40]);
});

test('no host reporting: the gate is open, as before hosts reported', () => {
  const t = tender();
  saturate(t);
  t.tend(1 * MIN);
  expect(setpoints(t)).toEqual([20, 20]);
  expect(t.hostStatus()).toEqual([]);
});

test('the hosts and their window cross continue-as-new', () => {
  const t = tender();
  t.hostReport(report('h:1', 1), 0.5 * MIN);
  const next = new Tender(JSON.parse(JSON.stringify(t.save())));
  saturate(next);
  next.tend(1 * MIN);
  expect(setpoints(next)).toEqual([10, 10]);
  expect(next.hostStatus()).toHaveLength(1);
});

test.each<[string, unknown]>([
  ['no host', { ...report('h:1', 5), host: '' }],
  ['no RAM', { ...report('h:1', 5), totalBytes: 0 }],
  ['negative bytes', { ...report('h:1', 5), fleetResidentBytes: -1 }],
  ['a lowest above the headroom now', { ...report('h:1', 5), lowestHeadroomBytes: 9 * GIB }],
  ['an unknown field', { ...report('h:1', 5), secret: 'x' }],
])('a host report with %s is refused', (_name, payload) => {
  expect(hostReportSchema.safeParse(payload).success).toBe(false);
});

test('a whole host report parses', () => {
  expect(hostReportSchema.parse(report('h:1', 5))).toEqual(report('h:1', 5));
});

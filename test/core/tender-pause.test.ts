/**
 * What the ramp does around `steward pause` (src/workflows/pause.ts): a paused task is sent
 * setpoint 0 while the ramp keeps its setpoint; no window a pause touched moves it (a drained task
 * looks saturated); resume gives the kept setpoint back; the pause crosses continue-as-new.
 */
import type { ResolvedSettings } from '../../src/config/settings';
import { Tender } from '../../src/workflows/tend';
import { taskStatus } from '../helpers/task-status';

const settings = {
  samples: { type: 'ramp', lo: 10, hi: 50, step: 10, start: 10 },
  connections: { type: 'adaptive', min: 1, start: 20, max: 1_000 },
  maxSandboxes: null,
} as unknown as ResolvedSettings;

const MIN = 60_000;

function tender(): Tender {
  const t = Tender.fresh(settings);
  t.add(
    { name: 'a', taskQueue: 'q-a', samples: 1_000, model: 'gpt', sandboxed: false },
    taskStatus({ name: 'a' }),
  );
  t.start('a', 0);
  return t;
}

/** A window in which the task was saturated (what a drained, paused task also reports). */
function saturate(t: Tender): void {
  t.tasks.get('a')!.status.saturations++;
}

const by = 'alice@host';

test('a pause sends setpoint 0, keeps the setpoint, and no touched window moves it', () => {
  const t = tender();
  saturate(t);
  t.tend(1 * MIN);
  expect(t.limits('a').setpoint).toBe(20);

  expect(t.steer({ kind: 'pause', args: { reason: 'maintenance', by } }, 1.5 * MIN)).toBe(
    'maintenance',
  );
  expect(t.limits('a').setpoint).toBe(0);
  for (const at of [2, 3, 4]) {
    saturate(t);
    t.tend(at * MIN);
    expect(t.limits('a').setpoint).toBe(0);
    expect(t.tasks.get('a')!.ramp.setpoint).toBe(20);
    expect(t.tasks.get('a')!.status).toMatchObject({
      setpoint: 20,
      ramp_state: 'held',
      ramp_reason: 'paused: maintenance',
    });
  }

  expect(t.steer({ kind: 'unpause', args: { by } }, 4.5 * MIN)).toBe(
    'resumed after 180 s paused (maintenance)',
  );
  expect(t.limits('a').setpoint).toBe(20);
  // The window the pause ended in says nothing either.
  saturate(t);
  t.tend(5 * MIN);
  expect(t.limits('a').setpoint).toBe(20);
  // A whole window unpaused: the climb goes on from where it stood.
  saturate(t);
  t.tend(6 * MIN);
  expect(t.limits('a').setpoint).toBe(30);

  const steering = t.history.filter((e) => e.kind === 'pause' || e.kind === 'unpause');
  expect(
    steering.map(({ kind, task, reason, by: who }) => ({ kind, task, reason, by: who })),
  ).toEqual([
    { kind: 'pause', task: '*', reason: 'maintenance', by },
    { kind: 'unpause', task: '*', reason: 'resumed after 180 s paused (maintenance)', by },
  ]);
});

test('pausing a paused eval set, or resuming a running one, is answered and changes nothing', () => {
  const t = tender();
  expect(t.steer({ kind: 'unpause', args: { by } }, 0)).toBe('not paused');
  t.steer({ kind: 'pause', args: { reason: 'first', by } }, MIN);
  expect(t.steer({ kind: 'pause', args: { reason: 'second' } }, 2 * MIN)).toBe(
    `already paused by ${by} since 1970-01-01T00:01:00.000Z: first`,
  );
  expect(t.paused).toEqual({ reason: 'first', since: MIN, by });
  expect(t.history.filter((e) => e.kind === 'pause' || e.kind === 'unpause')).toHaveLength(1);
});

test('the pause crosses continue-as-new', () => {
  const t = tender();
  t.steer({ kind: 'pause', args: { reason: 'maintenance', by } }, MIN);
  const next = new Tender(JSON.parse(JSON.stringify(t.save())));
  expect(next.paused).toEqual({ reason: 'maintenance', since: MIN, by });
  expect(next.limits('a').setpoint).toBe(0);
  next.steer({ kind: 'unpause', args: { by } }, 2 * MIN);
  expect(next.limits('a').setpoint).toBe(10);
});

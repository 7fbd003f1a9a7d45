/**
 * The tend splits each provider account's ceiling among the hosts that call it, by their demand
 * (SPEC §1: one owner for each shared thing; src/core/shares.ts), and every host's owner reads
 * its share from the `workerControl` answer (`Tender.accountControl`).
 */
import type { ResolvedSettings } from '../../src/config/settings';
import { Tender } from '../../src/workflows/tend';
import type { WorkerReport } from '../../src/workflows/types';
import { taskStatus } from '../helpers/task-status';

const ACCOUNT = 'gpt at http://sim key k1';

const settings = {
  samples: { type: 'ramp', lo: 10, hi: 50, step: 10, start: 10 },
  connections: { type: 'adaptive', min: 1, start: 20, max: 1_000 },
  maxSandboxes: null,
} as unknown as ResolvedSettings;

function tender(): Tender {
  const t = Tender.fresh(settings);
  for (const name of ['a', 'b']) {
    t.add(
      { name, taskQueue: `q-${name}`, samples: 1_000, model: 'gpt', sandboxed: false },
      taskStatus({ name }),
    );
  }
  return t;
}

function report(host: string, demand: number, tasks = ['a', 'b']): WorkerReport {
  return {
    account: ACCOUNT,
    tasks,
    pid: 1,
    host,
    demand,
    limit: 20,
    rateLimitEpisodes: 0,
    cuts: 0,
    retries: 0,
    inFlight: demand,
  };
}

test('the ceiling is split by the demand each host reported in the window', () => {
  const t = tender();
  t.report(report('m1:1', 10));
  t.report(report('m2:1', 30));
  t.tend(60_000);
  // Two tasks with hi 50 on one account: a ceiling of 100.
  expect(t.accountControl()).toEqual({
    [ACCOUNT]: { ceiling: 100, shares: { 'm1:1': 25, 'm2:1': 75 } },
  });
  expect(t.accountStatus()[0].hosts).toEqual([
    { host: 'm1:1', share: 25, demand: 10, in_flight: 10 },
    { host: 'm2:1', share: 75, demand: 30, in_flight: 30 },
  ]);
});

test('a host that joins is split in when it first reports, and grows into its share once the others have read theirs', () => {
  const t = tender();
  t.report(report('m1:1', 40));
  t.tend(60_000);
  expect(t.accountControl()[ACCOUNT].shares).toEqual({ 'm1:1': 100 });
  // Until m1 reads its 50 it may fill its 100: m2 keeps the one slot a newcomer has.
  t.report({ ...report('m2:1', 40), inFlight: 1 });
  expect(t.accountControl()[ACCOUNT].shares).toEqual({ 'm1:1': 50, 'm2:1': 1 });
  t.report(report('m1:1', 40));
  t.report({ ...report('m2:1', 40), inFlight: 1 });
  t.tend(120_000);
  expect(t.accountControl()[ACCOUNT].shares).toEqual({ 'm1:1': 50, 'm2:1': 50 });
});

test('a host silent for two windows in a row has left: its share goes back to the others a split later', () => {
  const t = tender();
  t.report(report('m1:1', 20));
  t.report(report('m2:1', 20));
  t.tend(60_000);
  expect(t.accountControl()[ACCOUNT].shares).toEqual({ 'm1:1': 50, 'm2:1': 50 });
  t.report(report('m1:1', 20));
  t.tend(120_000);
  expect(t.accountControl()[ACCOUNT].shares).toEqual({ 'm1:1': 50, 'm2:1': 50 });
  t.report(report('m1:1', 20));
  t.tend(180_000);
  // Dropped, but it may be alive and late, still filling its 50 (a CI run: its calls and m1's
  // grown share together went past the provider's 40): m1 grows only at the next split.
  expect(t.accountControl()[ACCOUNT].shares).toEqual({ 'm1:1': 50 });
  expect(t.accountStatus()[0].hosts).toHaveLength(1);
  t.report(report('m1:1', 20));
  t.tend(240_000);
  expect(t.accountControl()[ACCOUNT].shares).toEqual({ 'm1:1': 100 });
});

test('a host whose report missed one tend keeps its share: its calls in flight are not given away', () => {
  // A report that lands just after its tend (a busy host, a 2 s window) counts for the next
  // window. Dropping the host then gave its share to the others while its calls still ran:
  // together they went over the account's ceiling, and the provider answered 429.
  const t = tender();
  t.report(report('m1:1', 20));
  t.report(report('m2:1', 60));
  t.tend(60_000);
  const split = t.accountControl()[ACCOUNT].shares;
  t.report(report('m1:1', 20));
  t.tend(120_000);
  expect(t.accountControl()[ACCOUNT].shares).toEqual(split);
  // Its late report arrives: it is still a host of the account, not a newcomer.
  t.report(report('m2:1', 60));
  expect(t.accountControl()[ACCOUNT].shares).toEqual(split);
  t.report(report('m1:1', 20));
  t.tend(180_000);
  expect(t.accountControl()[ACCOUNT].shares).toEqual(split);
  expect(t.accountStatus()[0].hosts).toHaveLength(2);
});

test('the shares follow the account ceiling when the ramp lowers it', () => {
  const t = tender();
  t.report(report('m1:1', 50));
  t.report(report('m2:1', 50));
  t.tend(60_000);
  // The provider pushes back at 60 calls: a wall for the whole account, split again.
  t.report({ ...report('m1:1', 50), rateLimitEpisodes: 3, cuts: 1, pushbackLevel: 60 });
  t.report(report('m2:1', 50));
  t.tend(120_000);
  const { ceiling, shares } = t.accountControl()[ACCOUNT];
  expect(ceiling).toBeLessThan(60);
  expect(shares['m1:1'] + shares['m2:1']).toBe(ceiling);
});

test('older hosts, which name themselves only by pid, still get a share', () => {
  const t = tender();
  const { host: _, demand: __, ...old } = report('x', 0);
  t.report({ ...old, pid: 42 });
  t.tend(60_000);
  expect(t.accountControl()[ACCOUNT].shares).toEqual({ '42': 100 });
});

test('a host whose fleet stops says so: its share goes to the others at once, past its calls still in flight', () => {
  const t = tender();
  t.report({ ...report('m1:1', 50), inFlight: 50 });
  t.report({ ...report('m2:1', 50), inFlight: 50 });
  t.tend(60_000);
  expect(t.accountControl()[ACCOUNT].shares).toEqual({ 'm1:1': 50, 'm2:1': 50 });
  // m2 stops with 30 calls still running: m1 grows only into what is free, then into the rest.
  t.report({ ...report('m2:1', 50), inFlight: 30, leaving: true });
  expect(t.accountControl()[ACCOUNT].shares).toEqual({ 'm1:1': 70 });
  expect(t.accountStatus()[0].hosts).toHaveLength(1);
  t.report(report('m1:1', 90));
  t.tend(120_000);
  expect(t.accountControl()[ACCOUNT].shares).toEqual({ 'm1:1': 100 });
});

describe('before its first tend, an account starts at', () => {
  function started(options: { accountCeilingsSum?: boolean }, names: string[]): Tender {
    const t = Tender.fresh(settings, options);
    for (const name of names) {
      t.add(
        { name, taskQueue: `q-${name}`, samples: 1_000, model: 'gpt', sandboxed: false },
        taskStatus({ name }),
      );
      t.start(name, 0);
    }
    return t;
  }

  test('the sum of its tasks ceilings, raised as tasks join, until the tend decides it', () => {
    const t = started({ accountCeilingsSum: true }, ['a', 'b', 'c']);
    t.report(report('m1:1', 10, ['a', 'b']));
    // Each task's ceiling is its hi, 50: two of them on the account so far.
    expect(t.accountControl()[ACCOUNT].ceiling).toBe(100);
    t.report(report('m2:1', 10, ['c']));
    expect(t.accountControl()[ACCOUNT].ceiling).toBe(150);
    t.tend(60_000);
    expect(t.accountControl()[ACCOUNT].ceiling).toBe(150);
    // Decided by the tend from then on: a report of the same tasks moves nothing.
    t.report(report('m1:1', 10, ['a', 'b']));
    expect(t.accountControl()[ACCOUNT].ceiling).toBe(150);
  });

  test('the lowest of the first reporting tasks ceilings, in runs from before (no patch)', () => {
    const t = started({}, ['a', 'b', 'c']);
    t.report(report('m1:1', 10, ['a', 'b']));
    t.report(report('m2:1', 10, ['c']));
    expect(t.accountControl()[ACCOUNT].ceiling).toBe(50);
  });

  test('the choice crosses continue-as-new', () => {
    const t = started({ accountCeilingsSum: true }, ['a', 'b']);
    const next = new Tender(JSON.parse(JSON.stringify(t.save())));
    next.report(report('m1:1', 10, ['a', 'b']));
    expect(next.accountControl()[ACCOUNT].ceiling).toBe(100);
  });
});

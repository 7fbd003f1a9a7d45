/**
 * The accounts' reporter and an eval set that ends under it: a run's last moments race its fleet's
 * stop, and the reporter must take "the eval set is over" for what it is, stopping without a word,
 * while a real outage (an eval set that does not answer) still gets its one line.
 */
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import { thisWorker } from '../src/activities/deps';
import { AccountHost, type AccountRef } from '../src/models/account-host';
import { reportAccounts } from '../src/workers/report';
import { workerReportSignal } from '../src/workflows/types';
import { startUnserved, type Unserved } from './helpers/unserved';

jest.setTimeout(60_000);

const ACCOUNT: AccountRef = {
  key: 'openai-api\u0000http://sim\u0000k\u0000m',
  label: 'm at http://sim',
  keyHash: 'k',
  connections: { type: 'adaptive', min: 10, start: 20, max: 100 },
};

/** A host on which `evalSetId`'s task `t` has made one call, so it has a window to report. */
async function hostUsedBy(evalSetId: string): Promise<AccountHost> {
  const host = new AccountHost({ now: Date.now, owner: thisWorker() });
  const release = await host.slots(ACCOUNT, { evalSetId, tasks: ['t'] }).acquire();
  release({ kind: 'success' });
  return host;
}

let errors: jest.SpyInstance;
let stop: AbortController;
let reporting: Promise<void> | undefined;
beforeEach(() => {
  errors = jest.spyOn(console, 'error').mockImplementation(() => undefined);
  stop = new AbortController();
  reporting = undefined;
});
afterEach(async () => {
  stop.abort();
  await reporting;
  errors.mockRestore();
});

describe('on the test server', () => {
  let unserved: Unserved;
  beforeEach(async () => (unserved = await startUnserved('evalSet')));
  afterEach(() => unserved.close());

  test('unanswered: one line for the outage; once it has ended, the reporter stops by itself', async () => {
    const { client, workflowId } = unserved;
    reporting = reportAccounts({
      client,
      host: await hostUsedBy(workflowId),
      evalSetId: workflowId,
      intervalMs: 1_000,
      signal: stop.signal,
    });
    const handle = client.workflow.getHandle(workflowId);
    // Nobody answers its control query (5 s); the introduction is a signal, which needs nobody.
    await waitFor(async () => (await signalsIn(client, workflowId)) === 1);
    expect(errors.mock.calls).toEqual([
      [expect.stringMatching(`^steward worker: control from ${workflowId} unavailable: `)],
    ]);
    await handle.terminate('the run is over');
    // Ends without the stop: the next unanswered query finds the eval set closed.
    await expect(within(reporting, 15_000)).resolves.toBe('ended');
    expect(errors).toHaveBeenCalledTimes(1);
    expect(await signalsIn(client, workflowId)).toBe(1);
  });
});

test('the eval set ends between a poll and the report: no error, no goodbye, the reporter ends', async () => {
  const evalSetId = 'steward-ended';
  const signalled: unknown[] = [];
  let status = 'RUNNING';
  const handle = {
    query: async () => ({ ceilings: {}, next_tend_at: null, accounts: {} }),
    signal: async (def: unknown) => {
      signalled.push(def);
      status = 'COMPLETED'; // the run ended as this report was on its way
      throw new WorkflowNotFoundError('workflow execution already completed', evalSetId, undefined);
    },
    describe: async () => ({ status: { name: status } }),
  };
  reporting = reportWithFake(evalSetId, handle);
  await expect(within(reporting, 5_000)).resolves.toBe('ended');
  expect(signalled).toEqual([workerReportSignal]);
  expect(errors).not.toHaveBeenCalled();
});

test('reports that fail while the eval set runs are one line, and the reporter goes on', async () => {
  const evalSetId = 'steward-flaky';
  let signals = 0;
  const handle = {
    query: async () => ({ ceilings: {}, next_tend_at: null, accounts: {} }),
    signal: async () => {
      signals += 1;
      throw new Error('deadline exceeded');
    },
    describe: async () => ({ status: { name: 'RUNNING' } }),
  };
  reporting = reportWithFake(evalSetId, handle);
  // The introduction at once, then one report a second (no tend time to aim at): all fail.
  await expect(within(reporting, 2_500)).resolves.toBe('running');
  const tried = signals;
  expect(tried).toBeGreaterThanOrEqual(2);
  expect(errors.mock.calls).toEqual([
    [`steward worker: report to ${evalSetId} failed: deadline exceeded`],
  ]);
  stop.abort();
  await reporting;
  // The goodbye was tried too: the eval set may still want the host's share back.
  expect(signals).toBe(tried + 1);
});

/**
 * The reporter, a second apart, for `evalSetId` on a host that has a window to report, talking
 * to `handle` through a client that is nothing else.
 */
async function reportWithFake(evalSetId: string, handle: object): Promise<void> {
  const client = {
    workflow: { getHandle: () => handle },
    connection: { withDeadline: (_: number, fn: () => Promise<unknown>) => fn() },
  } as unknown as Client;
  return reportAccounts({
    client,
    host: await hostUsedBy(evalSetId),
    evalSetId,
    intervalMs: 1_000,
    signal: stop.signal,
  });
}

async function within(promise: Promise<void>, ms: number): Promise<'ended' | 'running'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'running'>((resolve) => (timer = setTimeout(resolve, ms, 'running')));
  try {
    return await Promise.race([promise.then(() => 'ended' as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function signalsIn(client: Client, workflowId: string): Promise<number> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes).length;
}

async function waitFor(check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Temporal calls that must end in time (src/temporal/bounded.ts): a status query to an eval set
 * whose worker is stopping, and the client's retries of a call that failed, both end by the
 * deadline, and a stop cancels the call at once. The supervisor, its account reports and
 * `steward launch`'s watch ask through it; unbounded, one such query held a launch's exit 29 s.
 */
import { Client } from '@temporalio/client';
import { bounded } from '../src/temporal/bounded';
import { lazyConnection } from '../src/temporal/open-connection';
import { statusQuery } from '../src/workflows/types';
import { startUnserved, type Unserved } from './helpers/unserved';

let unserved: Unserved;
let client: Client;
let workflowId: string;

beforeAll(async () => {
  // Its queries are never answered.
  unserved = await startUnserved('evalSet');
  ({ client, workflowId } = unserved);
});

afterAll(() => unserved?.close());

/** How long `call` took to fail, in ms. */
async function failsAfter(call: () => Promise<unknown>): Promise<number> {
  const started = Date.now();
  await expect(call()).rejects.toThrow();
  return Date.now() - started;
}

test('a query no worker answers ends by the deadline', async () => {
  const handle = client.workflow.getHandle(workflowId);
  const took = await failsAfter(() =>
    bounded(client.connection, 1_000, () => handle.query(statusQuery)),
  );
  expect(took).toBeGreaterThanOrEqual(900);
  expect(took).toBeLessThan(2_500);
});

test('a stop cancels it at once', async () => {
  const handle = client.workflow.getHandle(workflowId);
  const stop = new AbortController();
  setTimeout(() => stop.abort(), 200);
  const took = await failsAfter(() =>
    bounded(client.connection, 30_000, () => handle.query(statusQuery), stop.signal),
  );
  expect(took).toBeLessThan(1_500);
});

test("the client's retries of a failed call end by the deadline too", async () => {
  // Nothing listens on port 1: every attempt fails as unavailable, and the client retries for
  // about 20 s.
  const unreachable = new Client({
    connection: lazyConnection({ address: '127.0.0.1:1' }),
  });
  const handle = unreachable.workflow.getHandle(workflowId);
  const took = await failsAfter(() =>
    bounded(unreachable.connection, 1_000, () => handle.query(statusQuery)),
  );
  // One backoff past the deadline at most.
  expect(took).toBeLessThan(4_000);
  // Its last retry comes one backoff after the deadline, and finds the connection closed.
  await unreachable.connection.close();
});

/**
 * The tend's look at its tasks, in an activity on the supervisor's worker. It answers within its
 * time (3 s, plus a wait for a task that said it is ending to close) however Temporal answers:
 * a call the client retries ends with it too. A launch exits only once its supervisor has stopped
 * that worker, which waits for the activities it runs: a worker that stops cancels the look, and
 * it ends then, not at the end of its wait.
 */
import { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createControlActivities } from '../src/activities/control';
import { lazyConnection } from '../src/temporal/open-connection';
import { processDeps } from '../src/workers/runtime';
import { startUnserved, type Unserved } from './helpers/unserved';

describe('observeTasks waiting for a task to close', () => {
  let unserved: Unserved;
  let client: Client;
  let taskId: string;

  beforeAll(async () => {
    // The end waited for never comes.
    unserved = await startUnserved('evalTask');
    ({ client, workflowId: taskId } = unserved);
  });

  afterAll(() => unserved?.close());

  const observe = () => createControlActivities(processDeps({ client })).observeTasks;

  test('waits for the end it was given, then answers without the task that did not answer', async () => {
    const started = Date.now();
    const seen = await new MockActivityEnvironment().run(observe(), {
      workflowIds: [taskId],
      waitForEndMs: 1_500,
    });
    // Still running, and its query unanswered (no worker): left out, after the whole wait.
    expect(seen).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
  });

  test('Temporal unreachable: the client retries each call, and the look still ends in its 3 s', async () => {
    // Nothing listens on port 1: every call fails as unavailable, which the client retries
    // with new calls for about 20 s.
    const unreachable = new Client({
      connection: lazyConnection({ address: '127.0.0.1:1' }),
    });
    const observeUnreachable = createControlActivities(
      processDeps({ client: unreachable }),
    ).observeTasks;
    for (const waitForEndMs of [0, 1_000]) {
      const started = Date.now();
      const seen = await new MockActivityEnvironment().run(observeUnreachable, {
        workflowIds: [taskId],
        waitForEndMs,
      });
      expect(seen).toEqual([]);
      expect(Date.now() - started).toBeLessThan(3_000 + waitForEndMs + 1_500);
    }
    const env = new MockActivityEnvironment();
    const started = Date.now();
    const observing = env.run(observeUnreachable, { workflowIds: [taskId] });
    setTimeout(() => env.cancel(), 300);
    await expect(observing).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(1_500);
    // Its calls' last retries come one backoff after their deadline, and find it closed.
    await unreachable.connection.close();
  });

  test('cancelled, as a stopping worker cancels it, it ends at once', async () => {
    const env = new MockActivityEnvironment();
    const started = Date.now();
    const observing = env.run(observe(), { workflowIds: [taskId], waitForEndMs: 30_000 });
    setTimeout(() => env.cancel(), 300);
    await expect(observing).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});

/**
 * The eval set's look at a task that said it is ending waits, up to 30 s, for it to close. The
 * supervisor's worker runs it, and a launch exits only once its supervisor has stopped that worker,
 * which waits for the activities it runs: a worker that stops cancels the wait, and the wait must
 * end then, not half a minute later.
 */
import { Client, Connection } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createControlActivities } from '../src/activities/control';
import { processDeps } from '../src/workers/runtime';
import { uniqueName } from './helpers/cli';

describe('observeTasks waiting for a task to close', () => {
  let connection: Connection;
  let client: Client;
  let taskId: string;

  beforeAll(async () => {
    connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS });
    client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE });
    // A workflow on a queue no worker serves stays running: the end waited for never comes.
    const handle = await client.workflow.start('evalTask', {
      taskQueue: uniqueName('nobody'),
      workflowId: uniqueName('observed'),
      args: [{}],
    });
    taskId = handle.workflowId;
  });

  afterAll(async () => {
    await client?.workflow.getHandle(taskId).terminate('test over');
    await connection?.close();
  });

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

  test('cancelled, as a stopping worker cancels it, it ends at once', async () => {
    const env = new MockActivityEnvironment();
    const started = Date.now();
    const observing = env.run(observe(), { workflowIds: [taskId], waitForEndMs: 30_000 });
    setTimeout(() => env.cancel(), 300);
    await expect(observing).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});

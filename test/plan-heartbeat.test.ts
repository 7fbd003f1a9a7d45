/**
 * A plan whose worker is gone is tried again within the heartbeat timeout. The eval set's plan ran
 * under a ten-minute start-to-close timeout alone, so a launch killed while it planned left its
 * relaunch waiting those ten minutes for an attempt nobody was making (found by the fault soak).
 * Here a worker takes the plan and never answers nor heartbeats, as a killed one does.
 */
import { Context } from '@temporalio/activity';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { openConnection } from '../src/temporal/open-connection';
import { WORKFLOW_BUNDLE_PATH } from '../src/workers/bundle';
import { evalSetWorkflowId, type EvalSetInput } from '../src/workflows/types';
import { uniqueName } from './helpers/cli';
import { waitFor } from './helpers/processes';

test("an eval set's plan taken by a worker that went silent is tried again within a minute", async () => {
  const address = process.env.TEMPORAL_ADDRESS!;
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  const client = new Client({ connection: await openConnection({ address }), namespace });
  const connection = await NativeConnection.connect({ address });
  const taskQueue = uniqueName('silent-plan');
  const attempts: number[] = [];
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    workflowBundle: { codePath: WORKFLOW_BUNDLE_PATH },
    activities: {
      // Takes the plan and goes silent: no answer, no heartbeat, until the worker shuts down.
      planEvalSet: async () => {
        attempts.push(attempts.length + 1);
        const { cancellationSignal } = Context.current();
        await new Promise((_, reject) => cancellationSignal.addEventListener('abort', reject));
      },
    },
    shutdownGraceTime: '1 second',
  });
  const running = worker.run();
  const input: EvalSetInput = { definition: '/nonexistent/evalset.yaml' };
  const handle = await client.workflow.start('evalSet', {
    workflowId: evalSetWorkflowId(uniqueName('silent-plan')),
    taskQueue,
    args: [input],
  });
  try {
    const started = Date.now();
    await waitFor('the plan to be taken', () => (attempts.length >= 1 ? true : undefined));
    await waitFor(
      'a second attempt at the plan',
      async () => {
        const { raw } = await handle.describe();
        const attempt = raw.pendingActivities?.[0]?.attempt ?? 0;
        return attempt >= 2 ? attempt : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 1_000 },
    );
    // Within the heartbeat timeout and a retry's interval, not the start-to-close's ten minutes.
    expect(Date.now() - started).toBeLessThan(60_000);
  } finally {
    await handle.terminate('test over').catch(() => undefined);
    worker.shutdown();
    await running.catch(() => undefined);
    await connection.close();
    await client.connection.close();
  }
});

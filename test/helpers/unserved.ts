/**
 * A workflow nobody serves, on the test server: started on a queue no worker polls, so it stays
 * running, and its queries and awaited end never come.
 */
import { Client } from '@temporalio/client';
import { openConnection } from '../../src/temporal/open-connection';
import { uniqueName } from './cli';

export interface Unserved {
  client: Client;
  workflowId: string;
  /** Terminates the workflow and closes the connection. */
  close(): Promise<void>;
}

export async function startUnserved(workflowType: string): Promise<Unserved> {
  const connection = await openConnection({ address: process.env.TEMPORAL_ADDRESS });
  const client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE });
  const handle = await client.workflow.start(workflowType, {
    taskQueue: uniqueName('nobody'),
    workflowId: uniqueName('unserved'),
    args: [{}],
  });
  return {
    client,
    workflowId: handle.workflowId,
    async close() {
      await handle.terminate('test over').catch(() => undefined);
      await connection.close();
    },
  };
}

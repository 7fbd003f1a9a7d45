/**
 * Replays every history the test run left on its Temporal dev server, then stops the server and
 * deletes its database. No test can forget to replay what it made: a workflow task that a killed
 * process, a query or a restart led to decide differently from its history fails the run here.
 */
import { rm } from 'node:fs/promises';
import { Client } from '@temporalio/client';
import { stopDevServer } from '../../src/temporal/devserver';
import { openConnection } from '../../src/temporal/open-connection';
import { DECIDING_WORKFLOW_TYPES, replayEveryRun } from '../helpers/replay';
import { testServerDirKey } from './global-setup';

export default async function globalTeardown(): Promise<void> {
  const stewardDir = (globalThis as Record<symbol, unknown>)[testServerDirKey];
  if (typeof stewardDir !== 'string') return;
  try {
    const connection = await openConnection({ address: process.env.TEMPORAL_ADDRESS });
    try {
      const client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE });
      const { runs, workflows, ms } = await replayEveryRun(client, {
        types: DECIDING_WORKFLOW_TYPES,
      });
      process.stderr.write(
        `Replayed every eval set and task history the tests left: ${runs} runs of ${workflows} workflows in ${ms} ms\n`,
      );
    } finally {
      await connection.close();
    }
  } finally {
    await stopDevServer(stewardDir);
    await rm(stewardDir, { recursive: true, force: true });
  }
}

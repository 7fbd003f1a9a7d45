/** Stops the test run's Temporal dev server and deletes its database. */
import { rm } from 'node:fs/promises';
import { stopDevServer } from '../../src/temporal/devserver';
import { testServerDirKey } from './global-setup';

export default async function globalTeardown(): Promise<void> {
  const stewardDir = (globalThis as Record<symbol, unknown>)[testServerDirKey];
  if (typeof stewardDir !== 'string') return;
  await stopDevServer(stewardDir);
  await rm(stewardDir, { recursive: true, force: true });
}

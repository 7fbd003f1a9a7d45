/**
 * Starts one Temporal dev server for the whole test run, on free ports with a throwaway database,
 * and hands it to the tests as `TEMPORAL_ADDRESS` / `TEMPORAL_NAMESPACE` (test workers inherit
 * this process's environment). Tests that need a differently configured server start their own
 * with `ensureDevServer`.
 */
import { mkdtemp } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { throwawayDevConfig } from '../../src/temporal/config';
import { ensureDevServer } from '../../src/temporal/devserver';
import { REPLAY_BUNDLES_ENV } from '../helpers/replay';

/** Read by global-teardown, which Jest runs in this same process. */
export const testServerDirKey = Symbol.for('steward.testTemporalDir');

export default async function globalSetup(): Promise<void> {
  const stewardDir = await mkdtemp(path.join(os.tmpdir(), 'steward-test-temporal-'));
  (globalThis as Record<symbol, unknown>)[testServerDirKey] = stewardDir;
  // Server defaults throughout (limit.historyCount.suggestContinueAsNew included), so
  // continue-as-new is tested at the limits users get.
  const config = throwawayDevConfig(stewardDir, await freePort());
  const { address, namespace } = await ensureDevServer(config, {
    stewardDir,
    onProgress: (message) => process.stderr.write(`${message}\n`),
  });
  process.env.TEMPORAL_ADDRESS = address;
  process.env.TEMPORAL_NAMESPACE = namespace;
  // Tests that run changed workflow code list their eval sets here, for the closing replay.
  process.env[REPLAY_BUNDLES_ENV] = path.join(stewardDir, 'replay-bundles.jsonl');
}

/** A TCP port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

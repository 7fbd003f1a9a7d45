/**
 * Fixture for test/supervisor-control.test.ts: a supervisor whose control worker is stopped
 * from outside (the SDK runtime's shutdown, on SIGUSR2 here), its stop never asked for. Prints
 * how `runSupervisor` ended, or `still running` 20 s later.
 */
import { Client } from '@temporalio/client';
import { openConnection } from '../../src/temporal/open-connection';
import { installRuntime } from '../../src/workers/runtime';
import { runSupervisor } from '../../src/workers/supervisor';

async function main(): Promise<void> {
  const [address, namespace, stewardDir] = process.argv.slice(2);
  installRuntime({ shutdownSignals: ['SIGUSR2'] });
  const client = new Client({ connection: await openConnection({ address }), namespace });
  const supervisor = runSupervisor({
    client,
    temporal: { address, namespace, embedded: false },
    evalSetIds: [],
    stewardDir,
    signal: new AbortController().signal,
  }).then(
    () => 'resolved',
    (err: Error) => `rejected: ${err.message}`,
  );
  setTimeout(() => process.kill(process.pid, 'SIGUSR2'), 3_000);
  const timeout = new Promise<string>((resolve) =>
    setTimeout(() => resolve('still running'), 20_000).unref(),
  );
  console.log(await Promise.race([supervisor, timeout]));
  await client.connection.close();
  process.exit(0);
}

void main();

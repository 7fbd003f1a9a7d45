/**
 * Steering an eval set from a script, with Steward's typed client: start it, hold its ramp,
 * narrow its range, and wait for the result.
 *
 *   npx tsx examples/client.ts examples/hello.yaml hello
 *
 * The client starts no workers: run `npx steward workers hello --until-done` beside it (or have a
 * `steward launch` of the same definition running). It talks to the Temporal server at
 * TEMPORAL_ADDRESS (default 127.0.0.1:7233, where `steward server` listens).
 */
import { Client } from '@temporalio/client';
import { openConnection, startEvalSet } from 'steward/client';

async function main(definition: string, name: string): Promise<void> {
  const connection = await openConnection({
    address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
  });
  const client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE });
  try {
    const run = await startEvalSet(client, { definition, name });
    console.log(`started eval set ${name} (workflow ${run.handle.workflowId})`);

    // Steering is answered by the workflow: a refusal (an unknown task, a range lo > hi) throws.
    console.log((await run.hold({ reason: 'checking the provider dashboard' })).message);
    console.log((await run.setRange([40, 100])).message);
    console.log((await run.resume()).message);

    const result = await run.watch((status) => {
      const done = status.tasks.reduce((n, t) => n + t.completed, 0);
      const total = status.tasks.reduce((n, t) => n + t.samples, 0);
      console.log(`${done}/${total} samples`);
    });
    for (const task of result.tasks) {
      console.log(
        `${task.name}: ${task.completed}/${task.samples}, accuracy ${task.metrics?.accuracy}`,
      );
    }
    console.log(`${result.status}; log dir ${result.log_dir}`);
  } finally {
    await connection.close();
  }
}

const [definition, name] = process.argv.slice(2);
if (!definition || !name) {
  console.error('usage: tsx examples/client.ts <definition> <eval set name>');
  process.exit(2);
}
main(definition, name).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

/** `steward workers [name]`: the fleet alone, until stopped (or until the eval set ends). */
import { ExitCode } from '../../errors';
import { resultAcrossOutages } from '../../client/result';
import { readStatus } from '../../client/status';
import { connectClient, resolveTemporal } from '../../temporal/connection';
import { stewardHome } from '../../util/home';
import { runSupervisor } from '../../workers/supervisor';
import { evalSetWorkflowId } from '../../workflows/types';

export async function workersCommand(
  name: string | undefined,
  opts: { untilDone?: boolean } = {},
): Promise<number> {
  const temporal = await resolveTemporal(process.env, { onProgress: (m) => console.error(m) });
  const client = await connectClient(temporal);
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  const evalSetIds = name ? [evalSetWorkflowId(name)] : undefined;
  if (opts.untilDone && evalSetIds) void stopWhenDone(client, evalSetIds[0], stop);
  console.error(
    `steward workers: serving ${name ? `eval set ${name}` : 'every running eval set'} (Ctrl-C to stop)`,
  );
  await runSupervisor({
    client,
    temporal,
    evalSetIds,
    stewardDir: stewardHome(process.env),
    signal: stop.signal,
    onFleetEvent: (e) =>
      console.error(
        e.kind === 'started'
          ? `worker ${e.slot} started (pid ${e.pid})`
          : `worker ${e.slot} (pid ${e.pid}) exited (${e.signal ?? e.code}); restarting in ${e.restartInMs} ms`,
      ),
  });
  return ExitCode.ok;
}

async function stopWhenDone(
  client: Awaited<ReturnType<typeof connectClient>>,
  id: string,
  stop: AbortController,
): Promise<void> {
  // A Temporal restart is not the end of the eval set: wait it out, as `steward launch` does.
  await resultAcrossOutages(client.workflow.getHandle(id)).catch(() => undefined);
  // Let the last sample workflows finish their final step before the workers go.
  await readStatus(client, id).catch(() => undefined);
  stop.abort();
}

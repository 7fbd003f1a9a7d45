/** `steward workers [name]`: the fleet alone, until stopped (or until the eval set ends). */
import { ExitCode } from '../../errors';
import { resultAcrossOutages } from '../../client/result';
import { readStatus } from '../../client/status';
import { connectClient, resolveTemporal } from '../../temporal/connection';
import { stewardHome } from '../../util/home';
import { watchLineage } from '../../util/lineage';
import { recordDetachedFleet } from '../../workers/detached';
import { runSupervisor } from '../../workers/supervisor';
import { evalSetWorkflowId } from '../../workflows/types';

export interface WorkersOptions {
  untilDone?: boolean;
  /**
   * Started by `steward launch --detach`, to outlive it: the fleet does not stop with the process
   * that started it (it stops when its eval set is done).
   */
  detached?: boolean;
}

/** How long a fleet told to stop has to stop its worker processes before it exits anyway. */
const STOP_DEADLINE_MS = 15_000;

export async function workersCommand(
  name: string | undefined,
  opts: WorkersOptions = {},
): Promise<number> {
  const stop = new AbortController();
  stop.signal.addEventListener('abort', () => {
    setTimeout(() => process.exit(ExitCode.ok), STOP_DEADLINE_MS).unref();
  });
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  // Whatever killed the process it was started under (npx, a shell, a script; SIGKILL included),
  // the fleet must not live on unseen, serving queues with code and settings nobody is watching.
  const unwatch = opts.detached
    ? () => undefined
    : watchLineage(() => {
        console.error('steward workers: the process that started it has exited; stopping');
        stop.abort();
      });
  if (opts.detached && name) {
    // A launch that re-attaches to the eval set says that this fleet outlives it, and its pid.
    const forget = recordDetachedFleet(stewardHome(process.env), name);
    process.once('exit', forget);
  }
  const temporal = await resolveTemporal(process.env, { onProgress: (m) => console.error(m) });
  const client = await connectClient(temporal);
  const evalSetIds = name ? [evalSetWorkflowId(name)] : undefined;
  if (opts.untilDone && evalSetIds) void stopWhenDone(client, evalSetIds[0], stop);
  console.error(
    `steward workers: serving ${name ? `eval set ${name}` : 'every running eval set'} (Ctrl-C to stop)`,
  );
  if (stop.signal.aborted) return ExitCode.ok;
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
  unwatch();
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

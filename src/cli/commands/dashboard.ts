/**
 * `steward dashboard [name] [--port N]`: serves a live web page of one eval set on 127.0.0.1
 * until Ctrl-C. Running or finished: it reads what `steward status` reads, plus the log dir's
 * tend records and ramp history, so no worker needs to be up.
 */
import type { Client } from '@temporalio/client';
import { readDashboard } from '../../dashboard/source';
import { serveDashboard } from '../../dashboard/server';
import { ExitCode, StewardError } from '../../errors';
import { connectClient, resolveTemporal } from '../../temporal/connection';
import { findEvalSet } from '../eval-set-target';

/** The dashboard's port unless `--port` says otherwise. */
export const DEFAULT_DASHBOARD_PORT = 7860;

export async function dashboardCommand(
  name: string | undefined,
  opts: { port?: number },
): Promise<number> {
  const client = await connectClient(
    await resolveTemporal(process.env, { onProgress: (m) => console.error(m) }),
  );
  try {
    const target = await evalSetName(client, name);
    const port = opts.port ?? DEFAULT_DASHBOARD_PORT;
    const server = await serveDashboard(target, port, () => readDashboard(client, target)).catch(
      (err: unknown) => {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'EADDRINUSE' && code !== 'EACCES') throw err;
        throw new StewardError(
          `cannot listen on 127.0.0.1:${port} (${code}): choose another --port, or 0 for any free one`,
          ExitCode.environment,
        );
      },
    );
    process.stdout.write(`dashboard of ${target}: ${server.url}  (Ctrl-C stops it)\n`);
    await stopSignal();
    await server.close();
    return ExitCode.ok;
  } finally {
    await client.connection.close();
  }
}

/** The named eval set (running or finished), else the only one running. */
export async function evalSetName(client: Client, name: string | undefined): Promise<string> {
  if (name === undefined) return (await findEvalSet(client)).name;
  if (name.trim() === '') throw new StewardError('an eval set name cannot be empty');
  return name;
}

function stopSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

/**
 * Which Temporal Steward talks to: the cluster `TEMPORAL_ADDRESS` names (self-hosted or cloud;
 * how a fleet spans machines), else the embedded dev server, started on demand and reused.
 */
import { Client } from '@temporalio/client';
import { openConnection } from './open-connection';
import { ExitCode, StewardError } from '../errors';
import { stewardHome } from '../util/home';
import { loadTemporalDevConfig } from './config';
import { ensureDevServer } from './devserver';

/** A Temporal frontend and namespace to use. */
export interface TemporalTarget {
  /** `host:port` of the gRPC frontend. */
  address: string;
  namespace: string;
  /** Whether this is the embedded dev server (so it is local, and Steward may start it). */
  embedded: boolean;
  /** From `TEMPORAL_API_KEY` (Temporal Cloud); implies TLS. Never put it in workflow input. */
  apiKey?: string;
  /** From `TEMPORAL_TLS=true`, or implied by an API key. */
  tls?: boolean;
}

export interface ResolveTemporalOptions {
  /** Told about slow steps: building the Temporal CLI, starting the dev server. */
  onProgress?: (message: string) => void;
  /** Where `.steward` and a relative `db_filename` live. @default process.cwd() */
  cwd?: string;
}

/**
 * The Temporal to use, per the environment. With `TEMPORAL_ADDRESS` set, that cluster
 * (`TEMPORAL_NAMESPACE`, default `default`), and nothing is started. Unset, the embedded dev
 * server configured by `temporal-dev.yaml` (or `STEWARD_TEMPORAL_CONFIG`), whose log and pid live
 * in `STEWARD_HOME`, default `<cwd>/.steward`.
 *
 * @throws ConfigError for an invalid dev server config; StewardError if the server cannot start
 */
export async function resolveTemporal(
  env: NodeJS.ProcessEnv,
  options: ResolveTemporalOptions = {},
): Promise<TemporalTarget> {
  const cwd = options.cwd ?? process.cwd();
  if (env.TEMPORAL_ADDRESS) {
    const apiKey = env.TEMPORAL_API_KEY || undefined;
    return {
      address: env.TEMPORAL_ADDRESS,
      namespace: env.TEMPORAL_NAMESPACE || 'default',
      embedded: false,
      ...(apiKey === undefined ? {} : { apiKey }),
      ...(apiKey !== undefined || env.TEMPORAL_TLS === 'true' ? { tls: true } : {}),
    };
  }
  const config = loadTemporalDevConfig(undefined, { cwd, env });
  const { address, namespace } = await ensureDevServer(config, {
    stewardDir: stewardHome(env, cwd),
    onProgress: options.onProgress,
  });
  return { address, namespace, embedded: true };
}

/** A client for the target. The caller closes it: `await client.connection.close()`. */
export async function connectClient(target: TemporalTarget): Promise<Client> {
  const connection = await openConnection({
    address: target.address,
    apiKey: target.apiKey,
    tls: target.tls,
  }).catch((err: unknown) => {
    const which = target.embedded ? 'the embedded dev server' : 'TEMPORAL_ADDRESS';
    throw new StewardError(
      `cannot reach Temporal at ${target.address} (${which}): ${(err as Error).message}`,
      ExitCode.environment,
    );
  });
  return new Client({ connection, namespace: target.namespace });
}

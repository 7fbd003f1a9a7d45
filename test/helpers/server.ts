/**
 * Faults a test injects into the world around Steward: a Temporal dev server of the test's own,
 * which it may kill -9 and restart on the same database, and a simulated provider that records
 * which sample every model call was for and can refuse chosen samples.
 */
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@temporalio/client';
import { openConnection } from '../../src/temporal/open-connection';
import {
  startSimProvider,
  type SimProvider,
  type SimProviderOptions,
} from '../../src/sim/provider';
import { defaultScript, openAiError, textOf, type SimScript } from '../../src/sim/script';
import {
  throwawayDevConfig,
  type JsonValue,
  type TemporalDevConfig,
} from '../../src/temporal/config';
import { devServerFiles, ensureDevServer, stopDevServer } from '../../src/temporal/devserver';
import { isAlive } from '../../src/util/processes';
import { freePort } from '../setup/global-setup';
import { DECIDING_WORKFLOW_TYPES, replayEveryRun, type ReplaySummary } from './replay';

export interface OwnDevServer {
  address: string;
  namespace: string;
  /** A client of the test's own; it reconnects by itself once a killed server is back. */
  client: Client;
  /** The environment a `steward` pointed at this server runs with. */
  env: NodeJS.ProcessEnv;
  /** Pid of the server process now running. */
  pid(): Promise<number>;
  /** SIGKILLs the server and returns once its process is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port and SQLite file. */
  restart(): Promise<void>;
  /**
   * Replays every run of `types` it holds (default: the eval sets' and tasks'), throwing if one
   * does not, then stops it and the client.
   */
  close(options?: { types?: string[] }): Promise<ReplaySummary>;
}

/**
 * Starts a headless dev server whose state (database, log, pid file) lives in `stewardDir`, with
 * `dynamicConfig` (e.g. a low `limit.historyCount.suggestContinueAsNew`).
 */
export async function startOwnDevServer(
  stewardDir: string,
  dynamicConfig: Record<string, JsonValue> = {},
): Promise<OwnDevServer> {
  const config: TemporalDevConfig = throwawayDevConfig(stewardDir, await freePort(), dynamicConfig);
  const { address, namespace } = await ensureDevServer(config, { stewardDir });
  const client = new Client({ connection: await openConnection({ address }), namespace });
  const pid = async (): Promise<number> =>
    Number(await readFile(devServerFiles(stewardDir).pid, 'utf8'));
  return {
    address,
    namespace,
    client,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      STEWARD_HOME: stewardDir,
    },
    pid,
    async kill() {
      const killed = await pid();
      process.kill(killed, 'SIGKILL');
      await waitFor(() => !isAlive(killed), 30_000, `dev server ${killed} to die`);
    },
    async restart() {
      const { started } = await ensureDevServer(config, { stewardDir });
      if (!started) throw new Error(`a dev server already answered at ${address}`);
    },
    async close({ types = DECIDING_WORKFLOW_TYPES }: { types?: string[] } = {}) {
      try {
        // The histories this server holds replay before it goes (test/helpers/replay.ts).
        const replayed = await replayEveryRun(client, { types });
        process.stderr.write(`replayed ${replayed.runs} runs on ${address} in ${replayed.ms} ms\n`);
        return replayed;
      } finally {
        await client.connection.close();
        await stopDevServer(stewardDir);
      }
    },
  };
}

/** Model calls the recording provider answered or refused, by the sample they were for. */
export interface RecordingProvider {
  provider: SimProvider;
  /** Calls so far per sample id (requests whose last user message names no sample are not kept). */
  calls: Map<string, number>;
  /** Sample ids answered `400 Bad Request` (a refusal Steward does not retry) while in this set. */
  refused: Set<string>;
}

/**
 * The simulated provider with its default script, counting calls per sample. A sample's input
 * names it on its first line, `Sample <id>.`, which every request of the sample carries.
 */
export async function startRecordingProvider(
  options: Omit<SimProviderOptions, 'script'> = {},
): Promise<RecordingProvider> {
  const calls = new Map<string, number>();
  const refused = new Set<string>();
  const provider = await startSimProvider({
    ...options,
    script: (request) => {
      const id = sampleIdOf(request.messages);
      if (id === undefined) return defaultScript(request);
      calls.set(id, (calls.get(id) ?? 0) + 1);
      if (refused.has(id)) {
        return {
          status: 400,
          body: openAiError(`sample ${id} is refused by this test`, 'invalid_request_error'),
        };
      }
      return defaultScript(request);
    },
  });
  return { provider, calls, refused };
}

/**
 * The default script, noting first the time of each call by the sample it is for (a prompt's
 * `Sample <id>.` line names it). It runs as the provider admits the call, before its latency.
 */
export function timedCallsScript(calls: Map<string, number[]>): SimScript {
  return (request) => {
    const user = request.messages.filter((m) => m.role === 'user').map((m) => textOf(m.content));
    const id = /^Sample (\S+)\.$/m.exec(user.join('\n'))?.[1] ?? '(no sample named)';
    calls.set(id, [...(calls.get(id) ?? []), Date.now()]);
    return defaultScript(request);
  };
}

/** The input line that names a sample, for {@link startRecordingProvider}. */
export function sampleInput(id: string, answer: string): string {
  return `Sample ${id}.\nANSWER: ${answer}`;
}

function sampleIdOf(messages: { role: string; content?: unknown }[]): string | undefined {
  const user = messages.filter((m) => m.role === 'user').at(-1);
  const text = typeof user?.content === 'string' ? user.content : '';
  return /^Sample (\S+)\.$/m.exec(text)?.[1];
}

/** Polls `condition` until it holds, failing with `what` after `timeoutMs`. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(200);
  }
}

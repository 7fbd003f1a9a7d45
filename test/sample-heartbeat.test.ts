/**
 * A sample beats while it runs as an activity of its own, and not at all when it runs inline (a
 * local activity): the SDK's core refuses a local activity's heartbeat and logs a warning for
 * each, thousands of lines a task. `runSample` runs here in the SDK's mock activity context, with
 * a worker process's real dependencies (definition, model, log store on disk), and its report
 * taken by a stand-in client.
 */
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createSampleActivities } from '../src/activities/sample';
import { processDeps } from '../src/workers/runtime';
import type { SampleInput } from '../src/workflows/types';
import { tempDir, writeEvalSet } from './helpers/cli';

/** Runs one sample whose model call takes 2.5 s; returns its heartbeats and the reports sent. */
async function run(isLocal: boolean): Promise<{ beats: number; reports: unknown[] }> {
  const dir = await tempDir('steward-sample-beat-');
  const file = await writeEvalSet(dir, 'beat', [{ name: 't', samples: 1, latencyMs: 2_500 }]);
  const reports: unknown[] = [];
  const client = {
    workflow: {
      getHandle: () => ({
        signal: async (_signal: unknown, payload: unknown) => void reports.push(payload),
      }),
    },
  } as unknown as Client;
  // The worker process's own dependencies: the definition read from its path, real models.
  const deps = processDeps({ client, env: {} });
  const input: SampleInput = {
    evalSet: 'beat',
    task: 't',
    definition: file,
    logDir: path.join(dir, 'logs'),
    index: 0,
    parentId: 'steward-beat/t',
    chain: 'chain',
    inline: isLocal,
  };
  const env = new MockActivityEnvironment({ isLocal });
  let beats = 0;
  env.on('heartbeat', () => beats++);
  await env.run(createSampleActivities(deps).runSample, input);
  return { beats, reports };
}

describe('runSample heartbeats', () => {
  test('as an activity of its own it beats while the model call runs', async () => {
    const { beats, reports } = await run(false);
    expect(beats).toBeGreaterThanOrEqual(2);
    expect(reports).toEqual([{ reports: [{ index: 0, ok: true }] }]);
  });

  test('inline (a local activity) it never beats, and reports the same', async () => {
    const { beats, reports } = await run(true);
    expect(beats).toBe(0);
    expect(reports).toEqual([{ reports: [{ index: 0, ok: true }] }]);
  });
});

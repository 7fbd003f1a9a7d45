/**
 * `_steward.yaml` edited during a launch: the new `samples_ramp` is signalled to the eval set,
 * sent again when a hand-over turned it away, and a signal that cannot be sent is said, not left
 * as an unhandled rejection (which would end `steward launch`).
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';
import { watchStewardYaml } from '../src/client/steward-yaml-watch';
import { STEWARD_YAML } from '../src/config/settings';
import { tempDir } from './helpers/cli';

/** A handle whose `signal` answers with the next of `outcomes` (an Error rejects). */
function fakeHandle(outcomes: (Error | 'ok')[]): { handle: WorkflowHandle; sent: unknown[] } {
  const sent: unknown[] = [];
  const handle = {
    signal: async (_def: unknown, args: unknown) => {
      sent.push(args);
      const next = outcomes.shift() ?? 'ok';
      if (next instanceof Error) throw next;
    },
  } as unknown as WorkflowHandle;
  return { handle, sent };
}

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(50);
  }
}

let edits = 0;

/** Writes the file, each time with a later mtime (the watch polls its stat). */
async function edit(dir: string, range: string): Promise<void> {
  const file = path.join(dir, STEWARD_YAML);
  await fs.writeFile(file, `samples_ramp: ${range}\n`);
  const at = new Date(Date.now() + ++edits * 1_000);
  await fs.utimes(file, at, at);
}

test('a range turned away at a hand-over is sent again; one that cannot be sent is said', async () => {
  const dir = await tempDir();
  await edit(dir, '[10, 20]');
  const closing = Object.assign(new Error('14 UNAVAILABLE: workflow is closing'), {
    code: 14,
    details: 'workflow is closing',
    metadata: {},
  });
  const { handle, sent } = fakeHandle([closing, 'ok', new Error('connection refused')]);
  const said: string[] = [];
  const stop = watchStewardYaml(dir, handle, (line) => said.push(line));
  try {
    await sleep(300); // the watch reads the file as it starts: that range is not news
    await edit(dir, '[5, 8]');
    await until(() => said.length === 1);
    expect(sent).toHaveLength(2);
    expect(said[0]).toContain('samples_ramp [5,8] takes effect at the next tend');

    await edit(dir, '[6, 9]');
    await until(() => said.length === 2);
    expect(said[1]).toContain('samples_ramp [6,9] was not sent: connection refused');
    // Saved again unchanged, it is sent again.
    await edit(dir, '[6, 9]');
    await until(() => said.length === 3);
    expect(said[2]).toContain('samples_ramp [6,9] takes effect at the next tend');
    expect(sent).toHaveLength(4);
  } finally {
    stop();
  }
});

/**
 * Records the histories that `test/replay-saved.test.ts` replays against every later build: a
 * small eval set run start to end on a throwaway dev server, steered once each way (hold, range,
 * resume) by update and by signal, so the handlers are in it. Run it only when an incompatible change is made on
 * purpose (README, "Changing workflow code"); otherwise the saved histories are the check.
 *
 *   npm run record:histories
 *   npm run record:histories -- sampleGroup     # only the histories named (the rest stay as saved)
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { defaultPayloadConverter } from '@temporalio/common';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { stringify } from 'yaml';
import { throwawayDevConfig } from '../src/temporal/config';
import { ensureDevServer, stopDevServer } from '../src/temporal/devserver';
import { evalSetWorkflowId, taskWorkflowId } from '../src/workflows/types';

const ROOT = path.resolve(__dirname, '..');
const OUT = path.join(ROOT, 'test', 'fixtures', 'histories');
const NAME = 'saved';
const run = promisify(execFile);

async function main(): Promise<void> {
  const only = process.argv.length > 2 ? process.argv.slice(2) : undefined;
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'steward-record-'));
  const { address, namespace } = await ensureDevServer(throwawayDevConfig(dir, await freePort()), {
    stewardDir: dir,
  });
  const env = { ...process.env, TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace };
  const client = new Client({ connection: await openConnection({ address }), namespace });
  try {
    const lines = Array.from({ length: 6 }, (_, i) =>
      JSON.stringify({ id: `s${i}`, input: `What is ${i} + 1?`, target: String(i + 1) }),
    );
    await fs.writeFile(path.join(dir, 'd.jsonl'), `${lines.join('\n')}\n`);
    const file = path.join(dir, 'evalset.yaml');
    await fs.writeFile(
      file,
      stringify({
        name: NAME,
        tend_interval: 1,
        samples_ramp: [2, 4],
        tasks: [
          {
            name: 't',
            dataset: 'd.jsonl',
            solver: ['generate'],
            scorer: 'match',
            model: 'mockllm/model',
            model_args: { outputs: ['{target}'], latency_ms: 1_500 },
          },
        ],
      }),
    );
    const steward = (...args: string[]) =>
      run(process.execPath, [path.join(ROOT, 'bin', 'steward.js'), ...args], { env, cwd: dir });
    await steward('launch', file, '--detach', '--log-dir', path.join(dir, 'logs'));
    await sleep(3_000);
    await steward('ramp', 'hold', '--reason', 'recorded for replay tests', '--eval-set', NAME);
    await steward('ramp', 'range', '2', '3', '--eval-set', NAME);
    await steward('ramp', 'resume', '--eval-set', NAME);
    const id = evalSetWorkflowId(NAME);
    // `steward ramp` steers by update while the workers answer; the same commands as signals,
    // and one the workflow refuses, cover the signal handlers too.
    const handle = client.workflow.getHandle(id);
    await handle.signal('holdRamp', { reason: 'recorded for replay tests, by signal' });
    await handle.signal('setSamplesRamp', { range: [2, 4] });
    await handle.signal('setSamplesRamp', { rnage: [2, 4] });
    await handle.signal('resumeRamp', {});
    await client.workflow.getHandle(id).result();
    const task = taskWorkflowId(id, 't');
    const samples = await sampleWorkflows(client);
    const sample = samples.find((s) => !s.group)?.workflowId;
    // Samples admitted together share a workflow (`samples_ramp` admits 2 to 4 at a time).
    const group = samples.find((s) => s.group)?.workflowId;
    if (!sample || !group) throw new Error('the run had no lone sample workflow, or no group');
    await fs.mkdir(OUT, { recursive: true });
    for (const [type, workflowId] of [
      ['evalSet', id],
      ['evalTask', task],
      ['sampleWorkflow', sample],
      ['sampleGroup', group],
    ] as const) {
      if (only && !only.includes(type)) continue;
      const history = await client.workflow.getHandle(workflowId).fetchHistory();
      await fs.writeFile(
        path.join(OUT, `${type}.json`),
        `${JSON.stringify({ workflowId, history: JSON.parse(historyToJSON(history)) as unknown })}\n`,
      );
      console.log(`${type}: ${history.events?.length} events from ${workflowId}`);
    }
  } finally {
    await client.connection.close();
    await stopDevServer(dir);
  }
}

/** The run's sample workflows, and whether each ran a group. */
async function sampleWorkflows(client: Client): Promise<{ workflowId: string; group: boolean }[]> {
  const found: { workflowId: string; group: boolean }[] = [];
  for await (const wf of client.workflow.list({ query: `WorkflowType = 'sampleWorkflow'` })) {
    const [started] = (await client.workflow.getHandle(wf.workflowId).fetchHistory()).events ?? [];
    const payload = started?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    const input = payload ? defaultPayloadConverter.fromPayload<object>(payload) : {};
    found.push({ workflowId: wf.workflowId, group: 'group' in input });
  }
  return found;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

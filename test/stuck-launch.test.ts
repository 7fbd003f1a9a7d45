/**
 * A run that cannot make progress says so (issue 28): a build whose task workflow fails every
 * workflow task (a bug planted in its workflow code) is launched through the CLI on the dev
 * server. The launch names the stuck workflow, its error and what to do within seconds of the
 * task's second failure, tells the webhook, and exits 4 once the workflow stays stuck past
 * `--stuck-timeout`, instead of waiting for ever; `steward status` marks it too.
 */
import { once } from 'node:events';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { Client } from '@temporalio/client';
import { ExitCode } from '../src/errors';
import { openConnection } from '../src/temporal/open-connection';
import { evalSetWorkflowId, taskWorkflowId } from '../src/workflows/types';
import { runCli, runCommand, tempDir, uniqueName, writeEvalSet } from './helpers/cli';
import { insertBefore, workflowVariant } from './helpers/variant';

const PLANTED = 'planted: this build fails every workflow task of its tasks';

let client: Client;
let server: http.Server;
let hook: string;
const received: Record<string, unknown>[] = [];

beforeAll(async () => {
  client = new Client({
    connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS }),
    namespace: process.env.TEMPORAL_NAMESPACE,
  });
  server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => {
      received.push(JSON.parse(text) as Record<string, unknown>);
      res.writeHead(200).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  hook = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});

afterAll(async () => {
  server?.close();
  await client?.connection.close();
});

test('a task whose workflow task keeps failing: named, told, and the launch exits 4', async () => {
  const broken = await workflowVariant(
    'eval-task.ts',
    insertBefore('const parsed = parse(evalTaskStartSchema', `throw new Error('${PLANTED}');`, ''),
  );
  const dir = await tempDir();
  const name = uniqueName('stuck');
  const file = await writeEvalSet(dir, name, [{ name: 'only', samples: 3, latencyMs: 10 }], {
    tend_interval: 1,
    notify: [hook],
  });
  const env = { ...process.env, STEWARD_HOME: path.join(dir, '.steward') };
  const started = Date.now();
  const launched = await runCommand(
    process.execPath,
    [broken.bin, 'launch', file, '--stuck-timeout', '20', '--log-dir', path.join(dir, 'logs')],
    { env, timeoutMs: 180_000 },
  );
  const taskId = taskWorkflowId(evalSetWorkflowId(name), 'only');
  try {
    expect(launched.code).toBe(ExitCode.stuck);
    expect(launched.stderr).toContain(`${taskId} cannot make progress`);
    expect(launched.stderr).toContain(PLANTED);
    expect(launched.stderr).toContain(
      `temporal workflow terminate --workflow-id ${evalSetWorkflowId(name)}`,
    );
    expect(launched.stderr).toMatch(/the launch gives up: .* has not made progress for 20 s/);
    // Bounded: the timeout, plus the failures that make it stuck and a look every 5 s.
    expect(Date.now() - started).toBeLessThan(120_000);
    expect(received).toContainEqual(
      expect.objectContaining({
        kind: 'stuck',
        eval_set: name,
        workflow_id: taskId,
        error: expect.stringContaining(PLANTED) as string,
      }),
    );

    // The eval set is still there, stuck: `steward status` marks the failing workflow task.
    const status = await runCli(['status', name], { env });
    expect(status.stdout + status.stderr).toMatch(
      new RegExp(`failing: ${taskId}: workflow task, attempt \\d+: .*${PLANTED}`),
    );
  } finally {
    await client.workflow
      .getHandle(evalSetWorkflowId(name))
      .terminate('test over')
      .catch(() => undefined);
    await client.workflow
      .getHandle(taskId)
      .terminate('test over')
      .catch(() => undefined);
  }
});

/**
 * Expected situations `steward status` meets, each a plain message and the exit code of
 * docs/errors.md, never "internal error": an eval set that never got a worker, one terminated or
 * timed out, a name that does not exist, a namespace that does not, a Temporal that cannot be
 * reached.
 */
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { STEWARD_TASK_QUEUE, evalSetWorkflowId } from '../src/workflows/types';
import { runCli, uniqueName } from './helpers/cli';

describe('steward status in expected situations', () => {
  let client: Client;

  beforeAll(async () => {
    client = new Client({
      connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS }),
      namespace: process.env.TEMPORAL_NAMESPACE,
    });
  });

  afterAll(async () => {
    await client?.connection.close();
  });

  /** An `evalSet` started on a queue no worker of this test run serves. */
  async function start(name: string, options: { workflowExecutionTimeout?: string } = {}) {
    return client.workflow.start('evalSet', {
      workflowId: evalSetWorkflowId(name),
      // Its own queue: no supervisor of another test file may pick it up and plan it.
      taskQueue: `${STEWARD_TASK_QUEUE}-${name}`,
      args: [{ definition: '/nowhere/evalset.yaml' }],
      ...options,
    });
  }

  test('an eval set no worker ever picked up: what Temporal knows, how to start workers, exit 0', async () => {
    const name = uniqueName('unplanned');
    const handle = await start(name);
    try {
      const text = await runCli(['status', name]);
      expect(text.stderr).not.toContain('internal error');
      expect(text.code).toBe(0);
      expect(text.stdout.split('\n')).toEqual([
        expect.stringMatching(
          new RegExp(`^${name} \\(steward-${name}\\): planning; no workers answer \\(.+\\)$`),
        ),
        'Temporal has no recorded state of it yet (it has not planned, or it predates recording)',
        `start its workers with \`steward workers ${name}\`, or run \`steward launch <definition>\` again`,
        '',
      ]);
      const json = await runCli(['status', name, '--json']);
      expect(json.code).toBe(0);
      expect(JSON.parse(json.stdout)).toMatchObject({
        workflow_id: `steward-${name}`,
        state: 'planning',
        workers: 'not answering',
        tasks: [],
      });
    } finally {
      await handle.terminate('test over');
    }
  });

  test('a terminated eval set: its state and reason, exit 0', async () => {
    const name = uniqueName('terminated');
    const handle = await start(name);
    await handle.terminate('stopped by ops for maintenance');
    const text = await runCli(['status', name]);
    expect(text.code).toBe(0);
    expect(text.stdout).toBe(`steward-${name}: terminated: stopped by ops for maintenance\n`);
    const json = await runCli(['status', name, '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({
      workflow_id: `steward-${name}`,
      state: 'terminated',
      error: 'stopped by ops for maintenance',
    });
  });

  test('a timed-out eval set: its state, exit 0', async () => {
    const name = uniqueName('timedout');
    const handle = await start(name, { workflowExecutionTimeout: '1s' });
    await handle.result().catch(() => undefined);
    const json = await runCli(['status', name, '--json']);
    expect(json.stderr).not.toContain('internal error');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ state: 'timed_out' });
  });

  test('an eval set that does not exist: exit 2, naming it', async () => {
    const name = uniqueName('nosuch');
    const status = await runCli(['status', name]);
    expect(status.code).toBe(2);
    expect(status.stderr).toBe(
      `steward: no eval set named "${name}" (workflow steward-${name} not found): ` +
        '`steward status` with no name lists the running ones\n',
    );
  });

  test('a namespace Temporal does not have: exit 3, naming the setting', async () => {
    const status = await runCli(['status'], {
      env: { ...process.env, TEMPORAL_NAMESPACE: 'no-such-namespace' },
    });
    expect(status.code).toBe(3);
    expect(status.stderr).toBe(
      "steward: Temporal has no such namespace (Namespace not found: 'no-such-namespace'): check TEMPORAL_NAMESPACE\n",
    );
  });

  test('a Temporal that cannot be reached: exit 3, naming it', async () => {
    const status = await runCli(['status'], {
      env: { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1' },
    });
    expect(status.code).toBe(3);
    expect(status.stderr).toMatch(
      /^steward: cannot reach Temporal at 127\.0\.0\.1:1 \(TEMPORAL_ADDRESS\): /,
    );
  });
});

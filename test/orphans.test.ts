/**
 * No orphans: `steward workers` and `steward launch`, started the way a user starts them
 * (`npx steward ...`, whose pid is npm's, not node's), leave no process behind when what the
 * user holds is killed, by SIGKILL or SIGTERM. A fleet detached by `launch --detach` outlives the
 * launch and stops when its eval set is done.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { evalSetWorkflowId, STEWARD_TASK_QUEUE } from '../src/workflows/types';
import { REPO_ROOT, runCli, tempDir, uniqueName, writeEvalSet } from './helpers/cli';
import { processTree, runningOf, waitFor, within, type ProcessInfo } from './helpers/processes';

/** A user's "a few seconds", with room for a machine shared by several test runs. */
const GONE_WITHIN_MS = 30_000;

let client: Client;

beforeAll(async () => {
  const connection = await openConnection({ address: process.env.TEMPORAL_ADDRESS });
  client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE });
});

afterAll(async () => {
  await client.connection.close();
});

/** An eval set slow enough to keep its workers busy for the whole test. */
async function slowEvalSet(): Promise<{ name: string; file: string; dir: string }> {
  const dir = await tempDir('steward-orphans-');
  const name = uniqueName('orphans');
  const file = await writeEvalSet(dir, name, [{ name: 'slow', samples: 400, latencyMs: 5_000 }], {
    max_samples: 4,
  });
  return { name, file, dir };
}

function npxSteward(args: string[], stewardHome: string): ChildProcess {
  return spawn('npx', ['steward', ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, STEWARD_HOME: stewardHome },
    stdio: 'ignore',
  });
}

/** Every process under `root` once its fleet has a task worker running. */
async function treeWithWorker(root: number): Promise<ProcessInfo[]> {
  return waitFor(
    'a task worker under the npx process',
    async () => {
      const tree = await processTree(root);
      return tree.some((p) => p.args.includes('task-worker')) ? tree : undefined;
    },
    { timeoutMs: 240_000, intervalMs: 500 },
  );
}

async function expectAllGone(tree: ProcessInfo[]): Promise<number> {
  const started = Date.now();
  const pids = tree.map((p) => p.pid);
  let left: number[] = pids;
  await waitFor(
    'every process of the tree to exit',
    async () => {
      left = await runningOf(pids);
      return left.length === 0 ? true : undefined;
    },
    { timeoutMs: GONE_WITHIN_MS, intervalMs: 250 },
  ).catch((err: Error) => {
    const names = tree.filter((p) => left.includes(p.pid)).map((p) => `${p.pid} ${p.args}`);
    throw new Error(`${err.message}; still running: ${names.join('; ')}`);
  });
  return Date.now() - started;
}

async function terminate(name: string): Promise<void> {
  await client.workflow
    .getHandle(evalSetWorkflowId(name))
    .terminate('test over')
    .catch(() => undefined);
}

describe.each([['SIGKILL'], ['SIGTERM']] as const)('killed with %s', (signal) => {
  test('`npx steward workers NAME` stopped by its pid leaves no process running', async () => {
    const { name, file, dir } = await slowEvalSet();
    await client.workflow.start('evalSet', {
      taskQueue: STEWARD_TASK_QUEUE,
      workflowId: evalSetWorkflowId(name),
      args: [{ definition: file, log_dir: path.join(dir, 'logs') }],
    });
    try {
      const npx = npxSteward(['workers', name], dir);
      const tree = await treeWithWorker(npx.pid as number);
      // The tree is npm, the `sh -c` it runs, node (the fleet), and the fleet's task workers.
      expect(tree.some((p) => p.args.includes('steward') && p.args.includes('workers'))).toBe(true);
      npx.kill(signal);
      const ms = await expectAllGone(tree);
      console.log(`npx steward workers, ${signal}: ${tree.length} processes gone in ${ms} ms`);
    } finally {
      await terminate(name);
    }
  });

  test('`npx steward launch` stopped by its pid leaves no process running', async () => {
    const { name, file, dir } = await slowEvalSet();
    try {
      const npx = npxSteward(['launch', file, '--log-dir', path.join(dir, 'logs')], dir);
      const tree = await treeWithWorker(npx.pid as number);
      npx.kill(signal);
      const ms = await expectAllGone(tree);
      console.log(`npx steward launch, ${signal}: ${tree.length} processes gone in ${ms} ms`);
    } finally {
      await terminate(name);
    }
  });
});

test('a fleet detached by `launch --detach` outlives the launch, then stops when its eval set is done', async () => {
  const dir = await tempDir('steward-orphans-');
  const name = uniqueName('detached');
  const file = await writeEvalSet(dir, name, [{ name: 'quick', samples: 30, latencyMs: 300 }]);
  try {
    const launch = await runCli(['launch', file, '--detach', '--log-dir', path.join(dir, 'logs')], {
      env: { ...process.env, STEWARD_HOME: dir },
      timeoutMs: 120_000,
    });
    expect(launch.code).toBe(0);
    const fleet = await waitFor('the detached fleet', async () => {
      const table = await processTree(1);
      return table.find((p) => p.args.includes(`workers ${name} --until-done`));
    });
    const tree = await processTree(fleet.pid);
    const handle = client.workflow.getHandle(evalSetWorkflowId(name));
    const result = await within('the eval set to finish', handle.result(), 240_000);
    expect(result.status).toBe('success');
    await expectAllGone(tree);
  } finally {
    await terminate(name);
  }
});

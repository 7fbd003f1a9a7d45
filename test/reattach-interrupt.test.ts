/**
 * Ctrl-C on a launch that re-attached to an eval set `launch --detach` started: the launch stops
 * its own workers and says what goes on running (the detached fleet, by pid, and so the eval set)
 * and how to stop it; and the way it gives does stop that fleet.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { evalSetWorkflowId } from '../src/workflows/types';
import { STEWARD_BIN, REPO_ROOT, runCli, tempDir, uniqueName, writeEvalSet } from './helpers/cli';
import { detachedFleet, killTree } from './helpers/detached';
import { processTree, runningOf, waitFor, within } from './helpers/processes';

let client: Client;

beforeAll(async () => {
  const connection = await openConnection({ address: process.env.TEMPORAL_ADDRESS });
  client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE });
});

afterAll(async () => {
  await client.connection.close();
});

test('Ctrl-C on a re-attached launch names the detached fleet that keeps running, and how to stop it', async () => {
  const dir = await tempDir('steward-reattach-');
  const name = uniqueName('reattach');
  // Slow enough that the eval set is far from done when the test ends.
  const file = await writeEvalSet(dir, name, [{ name: 'slow', samples: 400, latencyMs: 5_000 }], {
    max_samples: 4,
  });
  const logDir = path.join(dir, 'logs');
  const env = { ...process.env, STEWARD_HOME: dir };
  let fleet: number | undefined;
  try {
    const detached = await runCli(['launch', file, '--detach', '--log-dir', logDir], {
      env,
      timeoutMs: 120_000,
    });
    expect(detached.code).toBe(0);
    fleet = await waitFor('the detached fleet', () => detachedFleet(name));
    const pidFile = path.join(dir, `workers-${name}.pid`);
    await waitFor('the fleet to record its pid', () => (existsSync(pidFile) ? true : undefined));

    const launch = spawn(process.execPath, [STEWARD_BIN, 'launch', file, '--log-dir', logDir], {
      cwd: REPO_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    launch.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => launch.on('exit', resolve));
    // Re-attached, and showing progress: its own fleet runs.
    await waitFor(
      'the re-attached launch to show progress',
      () => (stderr.includes(`[${name}] slow: `) ? true : undefined),
      { timeoutMs: 120_000 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}; its stderr:\n${stderr}`);
    });
    expect(stderr).toContain(`eval set ${name} is already running: re-attaching`);
    launch.kill('SIGINT');
    expect(await within('the launch to stop', exited, 60_000)).toBe(130);

    const said = stderr.slice(stderr.indexOf('stopped'));
    console.log(`what the launch said at Ctrl-C:\n${said}`);
    expect(said).toContain(`eval set ${name} keeps running`);
    expect(said).toContain(`pid ${fleet}`);
    expect(said).toContain(`steward status ${name}`);
    expect(said).toContain(`\`kill ${fleet}\``);
    // Not the words of a launch whose eval set stops with it.
    expect(said).not.toContain('run `steward launch` again to resume');

    // What it said is so: the fleet and the eval set run on.
    expect(await runningOf([fleet])).toEqual([fleet]);
    const description = await client.workflow.getHandle(evalSetWorkflowId(name)).describe();
    expect(description.status.name).toBe('RUNNING');

    // And what it said to do stops the fleet and its workers; it forgets its pid file as it goes.
    const tree = (await processTree(fleet)).map((p) => p.pid);
    expect(tree.length).toBeGreaterThan(1);
    process.kill(fleet, 'SIGTERM');
    await waitFor(
      'the detached fleet and its workers to stop',
      async () => ((await runningOf(tree)).length === 0 ? true : undefined),
      { timeoutMs: 30_000 },
    );
    expect(existsSync(pidFile)).toBe(false);
    fleet = undefined;
  } finally {
    if (fleet !== undefined) await killTree(fleet);
    await client.workflow
      .getHandle(evalSetWorkflowId(name))
      .terminate('test over')
      .catch(() => undefined);
  }
});

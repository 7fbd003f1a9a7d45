/**
 * Settings are resolved once, at launch, and carried in the workflow input. Planning, in
 * whichever process of whichever fleet runs it, uses the input and the definition only: never
 * that process's `STEWARD_*` variables or the `_steward.yaml` of its working directory.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { openConnection } from '../src/temporal/open-connection';
import { createControlActivities } from '../src/activities/control';
import { thisWorker } from '../src/activities/deps';
import { loadDefinition } from '../src/loader/definition';
import { ErrorType } from '../src/errors';
import { openLogStore } from '../src/logs/store';
import {
  evalSetWorkflowId,
  statusQuery,
  STEWARD_TASK_QUEUE,
  type EvalSetInput,
  type EvalSetPlan,
} from '../src/workflows/types';
import { runCli, tempDir, uniqueName, writeEvalSet } from './helpers/cli';
import { spawnFleet } from './helpers/fleet';
import { waitFor } from './helpers/processes';

const RAMP_DEFAULT = { type: 'ramp', lo: 50, hi: 200, step: 20, start: 50 };

/** A directory like a stranger's working directory: a `_steward.yaml` of its own. */
async function strangerDir(): Promise<string> {
  const dir = await tempDir('steward-stranger-');
  await fs.writeFile(path.join(dir, '_steward.yaml'), 'max_samples: 3\nmax_workers: 9\n');
  return dir;
}

const STRANGER_ENV = { STEWARD_MAX_SAMPLES: '7', STEWARD_TEND_INTERVAL: '1' };

describe('planEvalSet, run by a process with settings of its own', () => {
  const cwd = process.cwd();
  let plan: (input: EvalSetInput) => Promise<EvalSetPlan>;
  let file: string;
  let dir: string;

  beforeAll(async () => {
    dir = await tempDir('steward-plan-');
    file = await writeEvalSet(dir, uniqueName('plan'), [{ name: 't', samples: 3 }], {
      max_connections: 5,
    });
    const activities = createControlActivities({
      definition: (ref) => loadDefinition(ref.path),
      model: () => {
        throw new Error('planning calls no model');
      },
      logStore: openLogStore,
      env: { ...process.env, ...STRANGER_ENV },
      now: Date.now,
      worker: thisWorker(),
    });
    // In an activity's context, as a worker runs it: planning heartbeats.
    plan = (input) => new MockActivityEnvironment().run(activities.planEvalSet, input);
    process.chdir(await strangerDir());
  });

  afterAll(() => process.chdir(cwd));

  test('an input without settings plans with the definition and the defaults', async () => {
    const { settings } = await plan({ definition: file, log_dir: path.join(dir, 'logs') });
    expect(settings.samples).toEqual(RAMP_DEFAULT);
    expect(settings.maxWorkers).toBeNull();
    expect(settings.tendIntervalMs).toBe(60_000);
    expect(settings.connections).toEqual({ type: 'fixed', n: 5 });
  });

  test("the input's settings win over the definition's", async () => {
    const { settings } = await plan({
      definition: file,
      log_dir: path.join(dir, 'logs'),
      settings: { max_samples: 12, max_connections: 8 },
    });
    expect(settings.samples).toEqual({ type: 'pinned', value: 12 });
    expect(settings.connections).toEqual({ type: 'fixed', n: 8 });
    expect(settings.maxWorkers).toBeNull();
  });

  test('bad settings in the input are refused for good, by their path in the input', async () => {
    const refusal = plan({
      definition: file,
      log_dir: path.join(dir, 'logs'),
      settings: { max_samples: 0, rnage: [1, 2] } as never,
    });
    await expect(refusal).rejects.toMatchObject({ type: ErrorType.config, nonRetryable: true });
    await expect(refusal).rejects.toThrow('settings.max_samples: must be at least 1 (0)');
    await expect(refusal).rejects.toThrow('settings: unknown key "rnage"');
  });
});

describe('end to end: a fleet started elsewhere serves an eval set launched here', () => {
  let client: Client;

  beforeAll(async () => {
    const connection = await openConnection({ address: process.env.TEMPORAL_ADDRESS });
    client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE });
  });

  afterAll(async () => {
    await client.connection.close();
  });

  test("a fleet in another directory, with other variables, plans with the input's settings", async () => {
    const dir = await tempDir('steward-plan-e2e-');
    const name = uniqueName('plan-e2e');
    const file = await writeEvalSet(dir, name, [{ name: 't', samples: 400, latencyMs: 2_000 }]);
    const stranger = await strangerDir();
    // The only control worker on this server: another directory, another environment.
    const fleet = spawnFleet({
      name,
      cwd: stranger,
      env: { ...process.env, ...STRANGER_ENV, STEWARD_HOME: stranger },
    });
    const handle = await client.workflow.start('evalSet', {
      taskQueue: STEWARD_TASK_QUEUE,
      workflowId: evalSetWorkflowId(name),
      args: [
        { definition: file, log_dir: path.join(dir, 'logs'), settings: { max_connections: 6 } },
      ],
    });
    try {
      const status = await waitFor('the plan', async () => {
        const s = await handle.query(statusQuery).catch(() => undefined);
        return s?.settings ? s : undefined;
      });
      expect(status.settings).toEqual({
        maxTasks: null,
        samples: RAMP_DEFAULT,
        maxSandboxes: null,
        connections: { type: 'fixed', n: 6 },
        maxWorkers: null,
        tendIntervalMs: 60_000,
        limits: {},
      });
    } finally {
      await handle.terminate('test over').catch(() => undefined);
      await fleet.stop();
    }
  });

  test('`steward launch` sends the knobs it chose from its flags, variables and _steward.yaml', async () => {
    const dir = await tempDir('steward-plan-launch-');
    const name = uniqueName('plan-launch');
    const file = await writeEvalSet(dir, name, [{ name: 't', samples: 400, latencyMs: 2_000 }], {
      samples_ramp: [10, 20],
      max_connections: 99,
    });
    await fs.writeFile(path.join(dir, '_steward.yaml'), 'max_tasks: 1\nmax_workers: 5\n');
    const handle = client.workflow.getHandle(evalSetWorkflowId(name));
    try {
      const launch = await runCli(
        ['launch', file, '--detach', '--max-connections', '6', '--log-dir', path.join(dir, 'l')],
        { cwd: dir, env: { ...process.env, STEWARD_MAX_WORKERS: '2', STEWARD_HOME: dir } },
      );
      expect(launch.stderr).not.toContain('internal error');
      expect(launch.code).toBe(0);
      const history = await handle.fetchHistory();
      const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
      const payload = started?.input?.payloads?.[0]?.data as Uint8Array;
      const input = JSON.parse(Buffer.from(payload).toString('utf8')) as EvalSetInput;
      // After precedence, defaults left out: the definition's samples_ramp is carried too.
      expect(input.settings).toEqual({
        max_connections: 6,
        max_workers: 2,
        max_tasks: 1,
        samples_ramp: [10, 20],
      });
    } finally {
      await handle.terminate('test over').catch(() => undefined);
    }
  });
});

/**
 * How the task activities fail when the definition is not what the workflow names: at once and
 * for good (a non-retryable `ApplicationFailure` with a stable type and the user's message), while
 * what the world may fix (a disk error) stays retryable. Called directly with injected
 * dependencies and a real log store on disk.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { ActivityDeps } from '../src/activities/deps';
import { createTaskActivities, type TaskRef } from '../src/activities/task';
import { loadDefinition } from '../src/loader/definition';
import { SnapshotError } from '../src/loader/snapshot';
import type { EvalSetDefinition } from '../src/definition/types';
import { ConfigError, ErrorType } from '../src/errors';
import { openLogStore } from '../src/logs/store';
import { tempDir, writeEvalSet } from './helpers/cli';

function depsWith(definition: () => Promise<EvalSetDefinition>): ActivityDeps {
  return {
    definition,
    model: () => {
      throw new Error('no model calls here');
    },
    logStore: openLogStore,
    env: {},
    now: () => Date.parse('2026-12-01T12:00:00Z'),
    worker: { pid: 1, host: 'test' },
  };
}

/** The activity as a worker runs it: in an activity context, which it heartbeats through. */
function planTask(deps: ActivityDeps, taskRef: TaskRef) {
  return new MockActivityEnvironment().run(createTaskActivities(deps).planTask, taskRef);
}

describe('planTask', () => {
  let dir: string;
  let file: string;
  let definition: EvalSetDefinition;

  beforeEach(async () => {
    dir = await tempDir('steward-activities-');
    file = await writeEvalSet(dir, 'acts', [{ name: 't', samples: 3 }]);
    definition = await loadDefinition(file);
  });

  const ref = (task: string) => ({
    evalSet: 'acts',
    task,
    definition: file,
    definitionHash: 'a'.repeat(64),
    logDir: path.join(dir, 'logs'),
  });

  test.each([
    {
      what: 'a task the definition does not have',
      load: async () => definition,
      task: 'nope',
      failure: () => ({
        type: ErrorType.config,
        message: `task "nope" is not in the definition ${file}`,
      }),
    },
    {
      what: 'a definition that does not load',
      load: async () => {
        throw new ConfigError([{ file: 'x.yaml', message: 'definition file not found' }]);
      },
      task: 't',
      failure: () => ({ type: ErrorType.config, message: 'x.yaml: definition file not found' }),
    },
    {
      what: 'a snapshot changed after launch',
      load: async () => {
        throw new SnapshotError('the snapshot was changed');
      },
      task: 't',
      failure: () => ({ type: ErrorType.snapshot, message: 'the snapshot was changed' }),
    },
  ])('fails for good on $what', async ({ load, task, failure }) => {
    const error = await planTask(depsWith(load), ref(task)).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect(error).toMatchObject({ nonRetryable: true, ...failure() });
  });

  test('leaves a disk error retryable', async () => {
    const eio = Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' });
    const error = await planTask(
      depsWith(async () => {
        throw eio;
      }),
      ref('t'),
    ).catch((err: unknown) => err);
    expect(error).toBe(eio);
  });

  test('records the task identity on its first run, and refuses a different task later', async () => {
    const deps = depsWith(async () => definition);
    expect(await planTask(deps, ref('t'))).toEqual({
      total: 3,
      pending: [[0, 3]],
      resumed: 0,
    });
    const recorded = JSON.parse(
      await fs.readFile(path.join(dir, 'logs', 't', 'task.json'), 'utf8'),
    );
    expect(recorded).toMatchObject({
      eval_set: 'acts',
      task: 't',
      recorded_at: '2026-12-01T12:00:00.000Z',
      identity: { epochs: 1, dataset: { samples: 3 } },
    });
    // The same task plans again (a relaunch); another one under its name does not.
    await expect(planTask(deps, ref('t'))).resolves.toMatchObject({ total: 3 });
    const changed = { ...definition.identities.t, model: 'openai/gpt-4o' };
    const other = depsWith(async () => ({ ...definition, identities: { t: changed } }));
    const error = await planTask(other, ref('t')).catch((err: unknown) => err);
    expect(error).toMatchObject({
      nonRetryable: true,
      type: ErrorType.config,
      message:
        `task "t" differs from the one whose records are in ${path.join(dir, 'logs')}: ` +
        'model "mockllm/model" → "openai/gpt-4o". Use a new log dir (--log-dir) for the changed ' +
        `task, or remove ${path.join(dir, 'logs')}/t to discard its records.`,
    });
  });
});

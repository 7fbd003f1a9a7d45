/**
 * A signal that reaches an eval set's run before its first workflow task (a task's `taskDone` as
 * the eval set continues-as-new, or any signal-with-start) is buffered, and goes to its own
 * handler once the workflow registers it, never to the handler of unknown signals: registering that
 * one first handed it every buffered signal, and a task's `taskDone` was recorded as refused.
 */
import * as path from 'node:path';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { loadDefinitionFiles, writeSnapshot } from '../src/loader/snapshot';
import {
  evalSetWorkflowId,
  STEWARD_TASK_QUEUE,
  taskDoneSignal,
  type EvalSetInput,
  type EvalSetResult,
} from '../src/workflows/types';
import { tempDir, uniqueName, writeEvalSet } from './helpers/cli';
import { spawnFleet, type TestFleet } from './helpers/fleet';
import { within } from './helpers/processes';
import { rampHistory } from './helpers/results';

describe('a signal buffered before the first workflow task', () => {
  let client: Client;
  let fleet: TestFleet;

  beforeAll(async () => {
    client = new Client({
      connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS! }),
      namespace: process.env.TEMPORAL_NAMESPACE,
    });
    // `steward workers` serves every running eval set, this one included.
    fleet = spawnFleet({
      env: { ...process.env, STEWARD_HOME: path.join(await tempDir(), '.steward') },
    });
  });

  afterAll(async () => {
    await fleet?.stop();
    await client?.connection.close();
  });

  test("a task's taskDone goes to its handler, not to the refusal of unknown signals", async () => {
    const name = uniqueName('early-signal');
    const dir = await tempDir();
    const file = await writeEvalSet(dir, name, [{ name: 't', samples: 2 }]);
    const logDir = path.join(dir, 'logs');
    const { used } = await loadDefinitionFiles(file);
    const input: EvalSetInput = {
      definition: file,
      definition_hash: await writeSnapshot(used, logDir),
      log_dir: logDir,
    };
    const handle = await client.workflow.signalWithStart('evalSet', {
      workflowId: evalSetWorkflowId(name),
      taskQueue: STEWARD_TASK_QUEUE,
      args: [input],
      signal: taskDoneSignal,
      signalArgs: [{ task: 't' }],
    });
    const result = (await within('the eval set to end', handle.result(), 120_000)) as EvalSetResult;
    expect(result).toMatchObject({ status: 'success', tasks: [{ name: 't', completed: 2 }] });
    const refused = (await rampHistory(logDir)).filter((e) => e.kind === 'refused');
    expect(refused.map((e) => e.reason)).toEqual([]);
  });
});

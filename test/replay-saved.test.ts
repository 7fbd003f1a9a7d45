/**
 * Histories written by an earlier build (`npm run record:histories`, kept in
 * test/fixtures/histories) replay against this build's workflow bundle. A change to workflow code
 * that alters its commands without a `patched()` guard fails here, before it can fail the workflow
 * tasks of eval sets that were running when it was deployed (README, "Changing workflow code").
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Worker } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_PATH } from '../src/workers/bundle';

const DIR = path.join(__dirname, 'fixtures', 'histories');

describe('histories saved from an earlier build', () => {
  test.each(['evalSet', 'evalTask', 'sampleWorkflow', 'sampleGroup'])(
    '%s replays with this build',
    async (type) => {
      const saved = JSON.parse(await fs.readFile(path.join(DIR, `${type}.json`), 'utf8')) as {
        workflowId: string;
        history: unknown;
      };
      await Worker.runReplayHistory(
        { workflowBundle: { codePath: WORKFLOW_BUNDLE_PATH } },
        saved.history,
        saved.workflowId,
      );
    },
  );

  test('the saved eval set was steered by update and by signal, so its handlers are covered', async () => {
    const saved = await fs.readFile(path.join(DIR, 'evalSet.json'), 'utf8');
    for (const name of ['holdRamp', 'setSamplesRamp', 'resumeRamp']) {
      expect(saved).toContain(`"signalName":"${name}"`);
      expect(saved).toMatch(new RegExp(`"acceptedRequest":\\{[^]*?"name":"${name}"`));
    }
  });
});

/**
 * Issue 28's two runs, saved as they failed. Their tasks decided on part of a workflow task's
 * events: a query answered by a worker without the run cached ran the task on the signals that
 * had come in so far, and what it decided went out with the next task (src/workflows/
 * sequenced-only.ts, test/sequenced-only.test.ts). A replay delivers a task's events together, so
 * no workflow code that decides from its history can make those commands again; these stay as the
 * record of the failure, failing where they first failed.
 */
describe('histories that decided on events outside a workflow task', () => {
  test.each([
    ['evalTask-1', /No command scheduled for event HistoryEvent\(id: 456, ActivityTaskScheduled\)/],
    [
      'evalTask-2',
      /Activity type of scheduled event 'startSamples' does not match activity type of activity command 'writeInspectLog'/,
    ],
  ])('%s fails to replay where the run first failed', async (name, error) => {
    const saved = JSON.parse(
      await fs.readFile(path.join(DIR, 'unsequenced', `${name}.json`), 'utf8'),
    ) as { workflowId: string; history: unknown };
    await expect(
      Worker.runReplayHistory(
        { workflowBundle: { codePath: WORKFLOW_BUNDLE_PATH } },
        saved.history,
        saved.workflowId,
      ),
    ).rejects.toThrow(error);
  });
});

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

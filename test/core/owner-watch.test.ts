/** What a worker cancels when the owner of running work is gone: a table over observations. */
import type { WorkflowExecutionStatusName } from '@temporalio/client';
import { ownerless, ownersToDescribe, sampleOwner, taskOwner } from '../../src/workers/owner-watch';

const EVAL_SET = 'steward-set';
const TASK = `${EVAL_SET}/t`;
const sample = (chain: string, index: number): string => `${TASK}/${chain}/${index}`;

function owners(
  entries: Array<[string, WorkflowExecutionStatusName, string?]>,
): Map<string, { status: WorkflowExecutionStatusName; firstRunId: string }> {
  return new Map(
    entries.map(([id, status, firstRunId]) => [id, { status, firstRunId: firstRunId ?? '' }]),
  );
}

test('ids name their owners', () => {
  expect(sampleOwner(sample('run-1', 7))).toEqual({ taskId: TASK, chain: 'run-1' });
  expect(taskOwner(TASK)).toBe(EVAL_SET);
  expect(ownersToDescribe([TASK], [sample('run-1', 1), sample('run-1', 2)])).toEqual([
    EVAL_SET,
    TASK,
  ]);
});

test.each<[string, WorkflowExecutionStatusName | undefined, boolean]>([
  ['running', 'RUNNING', false],
  ['between two runs', 'CONTINUED_AS_NEW', false],
  ['terminated', 'TERMINATED', true],
  ['cancelled', 'CANCELLED', true],
  // A failed eval set's relaunch takes its tasks over.
  ['failed', 'FAILED', false],
  ['completed', 'COMPLETED', false],
  ['not found', undefined, false],
])('a task whose eval set is %s: cancelled %s', (_, status, cancelled) => {
  const observed = {
    tasks: [TASK],
    samples: [],
    owners: owners(status ? [[EVAL_SET, status]] : []),
  };
  expect(ownerless(observed).tasks).toEqual(cancelled ? [TASK] : []);
});

test.each<[string, WorkflowExecutionStatusName | undefined, string, boolean]>([
  ['runs the same chain', 'RUNNING', 'run-1', false],
  ['runs another chain (a relaunch)', 'RUNNING', 'run-2', true],
  ['does not say its chain', 'RUNNING', '', false],
  ['was terminated', 'TERMINATED', 'run-1', true],
  ['failed', 'FAILED', 'run-1', true],
  ['was cancelled', 'CANCELLED', 'run-1', true],
  ['completed', 'COMPLETED', 'run-1', true],
  ['is not found', undefined, 'run-1', false],
])('a sample whose task %s: cancelled %s', (_, status, firstRunId, cancelled) => {
  const id = sample('run-1', 3);
  const observed = {
    tasks: [],
    samples: [id],
    owners: owners(status ? [[TASK, status, firstRunId]] : []),
  };
  expect(ownerless(observed).samples).toEqual(cancelled ? [id] : []);
});

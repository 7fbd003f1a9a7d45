/**
 * Steering updates sent again when a hand-over dropped them unapplied, and only then: the errors
 * as the Temporal client raises them (a gRPC error inside the client's ServiceError).
 */
import { Metadata } from '@grpc/grpc-js';
import { ServiceError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { droppedAtHandOver, steerAcrossHandOvers } from '../src/client/steer-retry';

/** What the client throws for a gRPC error of `code` with `details` from the server. */
function rpcError(code: number, name: string, details: string): ServiceError {
  const grpc = Object.assign(new Error(`${code} ${name}: ${details}`), {
    code,
    details,
    metadata: new Metadata(),
  });
  return new ServiceError('Workflow Update failed', { cause: grpc });
}

const taskFailed = () =>
  rpcError(
    9,
    'FAILED_PRECONDITION',
    'Unable to perform workflow execution update due to unexpected workflow task failure.',
  );
const closing = () => rpcError(14, 'UNAVAILABLE', 'workflow is closing');
const refused = () =>
  new WorkflowUpdateFailedError(
    'Workflow Update failed',
    ApplicationFailure.create({ message: 'no task "ghost" in this eval set' }),
  );

test('what a hand-over drops is told from what the workflow or the server refused', () => {
  expect(droppedAtHandOver(taskFailed())).toBe(true);
  expect(droppedAtHandOver(closing())).toBe(true);
  // The workflow's answer, and other preconditions, are not the hand-over's doing.
  expect(droppedAtHandOver(refused())).toBe(false);
  expect(droppedAtHandOver(rpcError(9, 'FAILED_PRECONDITION', 'no poller seen'))).toBe(false);
  expect(droppedAtHandOver(rpcError(5, 'NOT_FOUND', 'workflow execution already completed'))).toBe(
    false,
  );
  expect(droppedAtHandOver(new Error('boom'))).toBe(false);
  expect(droppedAtHandOver(undefined)).toBe(false);
});

test('a dropped update is sent again until it lands; a refusal is not sent again', async () => {
  const sends: string[] = [];
  const answer = await steerAcrossHandOvers(async () => {
    sends.push('sent');
    if (sends.length === 1) throw taskFailed();
    if (sends.length === 2) throw closing();
    return 'recorded';
  });
  expect(answer).toBe('recorded');
  expect(sends).toHaveLength(3);

  let refusals = 0;
  await expect(
    steerAcrossHandOvers(async () => {
      refusals++;
      throw refused();
    }),
  ).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
  expect(refusals).toBe(1);
});

test('it gives up after five attempts, with the last error', async () => {
  let sends = 0;
  await expect(
    steerAcrossHandOvers(async () => {
      sends++;
      throw taskFailed();
    }),
  ).rejects.toThrow('Workflow Update failed');
  expect(sends).toBe(5);
});

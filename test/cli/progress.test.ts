import { createProgress } from '../../src/cli/progress';
import type { EvalSetStatus, TaskStatus } from '../../src/workflows/types';
import { taskStatus } from '../helpers/task-status';

function fakeStream(): { stream: NodeJS.WriteStream; lines: () => string[] } {
  let text = '';
  const stream = {
    isTTY: false,
    write: (chunk: string) => {
      text += chunk;
      return true;
    },
  } as unknown as NodeJS.WriteStream;
  return { stream, lines: () => text.split('\n').filter(Boolean) };
}

function status(completed: number, state: TaskStatus['state']): EvalSetStatus {
  const task = taskStatus({
    name: 't',
    state,
    taskQueue: 'q',
    samples: 2,
    completed,
    in_flight: 2 - completed,
    setpoint: 4,
    ramp_state: 'climbing',
  });
  return {
    eval_set: 'e',
    state: 'running',
    tasks: [task],
    ramp_history: [],
    holds: { global: null, tasks: {} },
  };
}

describe('plain progress', () => {
  it('prints a changed task, and its finish at once', () => {
    const { stream, lines } = fakeStream();
    const progress = createProgress(stream);
    progress.update(status(0, 'running'));
    progress.update(status(1, 'running')); // within the quiet interval: not printed
    progress.update(status(2, 'done'));
    expect(lines()).toEqual([
      '[e] t: 0/2 done, 2 in flight, setpoint 4, 0 errors',
      '[e] t: 2/2 done, 0 in flight, setpoint 4, 0 errors (finished)',
    ]);
  });

  it('prints nothing once stopped: a reading that lands after the summary stays silent', () => {
    const { stream, lines } = fakeStream();
    const progress = createProgress(stream);
    progress.update(status(0, 'running'));
    progress.stop();
    progress.update(status(2, 'done'));
    progress.stop();
    expect(lines()).toEqual(['[e] t: 0/2 done, 2 in flight, setpoint 4, 0 errors']);
  });
});

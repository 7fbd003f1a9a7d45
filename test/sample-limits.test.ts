/**
 * Per-sample limits in one sample's run (src/eval/limits.ts, src/eval/run-sample.ts), with a
 * model whose every call costs a known number of tokens: each limit trips at its value, the
 * sample is scored on the state it had, and a solver that ignores its signal is left behind. The
 * same limits end to end, through the CLI, the dev server, Docker and the simulated provider, are
 * in test/limits.test.ts.
 */
import { DEFAULT_SCORING } from '../src/core/reducers';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SampleLimits } from '../src/config/knobs';
import type {
  ChatMessage,
  Model,
  Sample,
  SampleContext,
  Solver,
  TaskDefinition,
  TaskState,
} from '../src/definition/types';
import { effectiveLimits, WorkingClock } from '../src/eval/limits';
import { runSample } from '../src/eval/run-sample';
import { match } from '../src/eval/scorers';

const sample: Sample = { id: 's1', input: 'Keep talking.', target: 'never' };
const TOKENS_PER_CALL = 10;

/** A model whose every call costs 10 tokens; `wait` and `work` are spent in each call. */
function countingModel(calls: ChatMessage[][], timing: { waitMs?: number; workMs?: number } = {}) {
  const model: Model = {
    name: 'test/counting',
    async generate(messages, options = {}) {
      calls.push(messages);
      if (timing.waitMs) {
        const waited = sleep(timing.waitMs, undefined, { signal: options.signal });
        await (options.waiting ? options.waiting.during(waited) : waited);
      }
      if (timing.workMs) await sleep(timing.workMs, undefined, { signal: options.signal });
      const content = `reply ${calls.length}`;
      return {
        completion: content,
        message: { role: 'assistant', content },
        usage: { input_tokens: 6, output_tokens: 4, total_tokens: TOKENS_PER_CALL },
        stop_reason: 'stop',
      };
    },
  };
  return model;
}

/** Talks for ever: each reply is followed by a user turn, and the state is published as it grows. */
const chatty: Solver = async (state, ctx) => {
  let current = state;
  for (;;) {
    const output = await ctx.model.generate(current.messages, { signal: ctx.signal });
    current = {
      ...current,
      output,
      messages: [...current.messages, output.message],
      usage: { ...current.usage, total_tokens: current.usage.total_tokens + TOKENS_PER_CALL },
    };
    ctx.progress?.(current);
    current = { ...current, messages: [...current.messages, { role: 'user', content: 'more' }] };
    ctx.progress?.(current);
  }
};

function task(solver: Solver, limits: SampleLimits): TaskDefinition {
  return {
    name: 't',
    dataset: [sample],
    solver: [solver],
    scorer: match(),
    scorerName: 'match',
    epochs: 1,
    scoring: DEFAULT_SCORING,
    model: 'test/counting',
    modelArgs: {},
    config: {},
    limits,
  };
}

function context(model: Model, signal = new AbortController().signal): SampleContext {
  return { model, heartbeat: () => undefined, signal };
}

describe('message_limit', () => {
  test('no call is made on a conversation at the limit, and it never grows past it', async () => {
    const calls: ChatMessage[][] = [];
    const run = await runSample(
      task(chatty, { message_limit: 5 }),
      sample,
      1,
      context(countingModel(calls)),
    );
    expect(run.limit).toEqual({ type: 'message', limit: 5 });
    expect(calls.map((c) => c.length)).toEqual([1, 3]);
    expect(run.state.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
    ]);
    // Scored on what it had: the last reply is the completion the scorer saw.
    expect(run.score).toMatchObject({ value: 'I', answer: 'reply 2' });
  });

  test('a conversation one message short of the limit gets its reply, then stops', async () => {
    const calls: ChatMessage[][] = [];
    const run = await runSample(
      task(chatty, { message_limit: 4 }),
      sample,
      1,
      context(countingModel(calls)),
    );
    expect(run.limit).toEqual({ type: 'message', limit: 4 });
    expect(calls).toHaveLength(2);
    // The user turn after the second reply would have made 5: it was refused, the reply kept.
    expect(run.state.messages).toHaveLength(4);
  });
});

describe('token_limit', () => {
  test('reached exactly: the calls that reach it are kept, no further call is made', async () => {
    const calls: ChatMessage[][] = [];
    const run = await runSample(
      task(chatty, { token_limit: 3 * TOKENS_PER_CALL }),
      sample,
      1,
      context(countingModel(calls)),
    );
    expect(run.limit).toEqual({ type: 'token', limit: 30 });
    expect(calls).toHaveLength(3);
    expect(run.state.usage.total_tokens).toBe(30);
    expect(run.state.messages.filter((m) => m.role === 'assistant')).toHaveLength(3);
  });

  test('passed: the call that goes past it stops the sample; its tokens count, its reply not', async () => {
    const calls: ChatMessage[][] = [];
    const run = await runSample(
      task(chatty, { token_limit: 25 }),
      sample,
      1,
      context(countingModel(calls)),
    );
    expect(run.limit).toEqual({ type: 'token', limit: 25 });
    expect(calls).toHaveLength(3);
    expect(run.state.usage).toEqual({ input_tokens: 18, output_tokens: 12, total_tokens: 30 });
    expect(run.state.messages.filter((m) => m.role === 'assistant')).toHaveLength(2);
  });
});

describe('time_limit', () => {
  test('interrupts a model call in flight, and the sample is scored', async () => {
    const calls: ChatMessage[][] = [];
    const started = Date.now();
    const run = await runSample(
      task(chatty, { time_limit: 0.5 }),
      sample,
      1,
      context(countingModel(calls, { workMs: 60_000 })),
    );
    const elapsed = Date.now() - started;
    expect(run.limit).toEqual({ type: 'time', limit: 0.5 });
    expect(elapsed).toBeGreaterThanOrEqual(500);
    expect(elapsed).toBeLessThan(3_000);
    expect(run.state.messages).toHaveLength(1);
    expect(run.score.value).toBe('I');
  });

  test('leaves behind a solver that ignores its signal', async () => {
    let published: TaskState | undefined;
    const stubborn: Solver = async (state, ctx) => {
      published = { ...state, messages: [...state.messages, { role: 'user', content: 'halfway' }] };
      ctx.progress?.(published);
      await sleep(60_000, undefined, { ref: false });
      return state;
    };
    const started = Date.now();
    const run = await runSample(
      task(stubborn, { time_limit: 0.3 }),
      sample,
      1,
      context(countingModel([])),
    );
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(run.limit).toEqual({ type: 'time', limit: 0.3 });
    expect(run.state.messages).toEqual(published?.messages);
  });
});

describe('working_limit', () => {
  test('counts the calls’ work, not their waits for a slot or a backoff', async () => {
    const calls: ChatMessage[][] = [];
    const started = Date.now();
    const run = await runSample(
      task(chatty, { working_limit: 0.6 }),
      sample,
      1,
      context(countingModel(calls, { waitMs: 300, workMs: 100 })),
    );
    const elapsed = Date.now() - started;
    expect(run.limit).toEqual({ type: 'working', limit: 0.6 });
    // 100 ms of work a call: the limit falls in the sixth or seventh call, after 5 or 6 waits.
    expect(calls.length).toBeGreaterThanOrEqual(6);
    expect(calls.length).toBeLessThanOrEqual(7);
    expect(elapsed).toBeGreaterThan(6 * 300);
  });

  test('a time limit of the same value counts the waits and stops much sooner', async () => {
    const calls: ChatMessage[][] = [];
    const run = await runSample(
      task(chatty, { time_limit: 0.6 }),
      sample,
      1,
      context(countingModel(calls, { waitMs: 300, workMs: 100 })),
    );
    expect(run.limit).toEqual({ type: 'time', limit: 0.6 });
    expect(calls.length).toBeLessThanOrEqual(2);
  });
});

describe('what a limit is not', () => {
  test('a cancellation of the sample stays a cancellation', async () => {
    const controller = new AbortController();
    const cancelled = runSample(
      task(chatty, { time_limit: 30 }),
      sample,
      1,
      context(countingModel([], { workMs: 60_000 }), controller.signal),
    );
    controller.abort(new Error('cancelled by Temporal'));
    await expect(cancelled).rejects.toThrow('cancelled by Temporal');
  });

  test('a scorer that cannot run fails the sample, limit or not', async () => {
    const definition = {
      ...task(chatty, { message_limit: 3 }),
      scorer: async () => {
        throw new Error('the scorer broke');
      },
    };
    await expect(runSample(definition, sample, 1, context(countingModel([])))).rejects.toThrow(
      'the scorer broke',
    );
  });

  test("the limits handed in (the task's under the eval set's) are the ones enforced", async () => {
    const run = await runSample(task(chatty, {}), sample, 1, context(countingModel([])), {
      message_limit: 3,
    });
    // The eval set's limits, handed in, are the ones that count.
    expect(run.limit).toEqual({ type: 'message', limit: 3 });
  });
});

test.each([
  ['task only', { time_limit: 5, token_limit: 10 }, {}, { time_limit: 5, token_limit: 10 }],
  ['eval set replaces', { time_limit: 5 }, { time_limit: 9 }, { time_limit: 9 }],
  ['both kept', { message_limit: 4 }, { working_limit: 2 }, { message_limit: 4, working_limit: 2 }],
])('effectiveLimits: %s', (_name, taskLimits, setLimits, expected) => {
  expect(effectiveLimits(taskLimits, setLimits)).toEqual(expected);
});

test('WorkingClock: overlapping waits count once, work goes on around them', () => {
  const clock = new WorkingClock(1_000);
  clock.begin(1_100);
  clock.begin(1_150);
  clock.end(1_200);
  expect(clock.workedMs(1_250)).toBe(100);
  clock.end(1_300);
  expect(clock.workedMs(1_500)).toBe(300);
  clock.end(1_600); // an unmatched end changes nothing
  expect(clock.workedMs(1_600)).toBe(400);
});

import type {
  ChatMessage,
  Model,
  Sample,
  SampleContext,
  Scorer,
  Solver,
  TaskDefinition,
} from '../src/definition/types';
import { DEFAULT_SCORING } from '../src/core/reducers';
import { runSample, stageOf } from '../src/eval/run-sample';
import { match } from '../src/eval/scorers';
import { generate, initialState, systemMessage } from '../src/eval/solvers';
import { createModel } from '../src/models';

const arithmetic: Sample = {
  id: 'q1',
  input: 'What is 6 x 7?',
  target: '42',
  metadata: { style: 'tersely' },
};

function task(overrides: Partial<TaskDefinition>): TaskDefinition {
  return {
    name: 'arithmetic',
    dataset: [arithmetic],
    solver: [generate()],
    scorer: match(),
    scorerName: 'match',
    epochs: 1,
    scoring: DEFAULT_SCORING,
    model: 'mockllm/model',
    modelArgs: {},
    config: {},
    ...overrides,
  };
}

function context(model: Model, signal = new AbortController().signal) {
  const heartbeats = { count: 0 };
  const ctx: SampleContext = { model, heartbeat: () => void heartbeats.count++, signal };
  return { ctx, heartbeats };
}

/** mockllm scripted with `outputs`, or with its default reply. */
function mockllm(outputs?: unknown[]): Model {
  return createModel('mockllm/model', outputs ? { outputs } : {}, {});
}

describe('runSample', () => {
  it('runs system_message + generate + match on mockllm to a score and usage', async () => {
    const definition = task({
      solver: [systemMessage('You are a calculator. Answer {style}.'), generate()],
    });
    const { ctx, heartbeats } = context(mockllm(['The answer is {target}.']));

    const { state, score } = await runSample(definition, arithmetic, 2, ctx);

    expect(score).toEqual({
      value: 'C',
      answer: 'The answer is 42.',
      explanation: 'The answer is 42.',
    });
    expect(state.epoch).toBe(2);
    expect(state.messages).toEqual([
      { role: 'system', content: 'You are a calculator. Answer tersely.' },
      { role: 'user', content: 'What is 6 x 7?' },
      { role: 'assistant', content: 'The answer is 42.' },
    ]);
    // mockllm counts words: 6 + 5 in, 4 out.
    expect(state.usage).toEqual({ input_tokens: 11, output_tokens: 4, total_tokens: 15 });
    expect(state.output?.stop_reason).toBe('stop');
    // After each solver, and once more by generate after its model call.
    expect(heartbeats.count).toBe(3);
  });

  it('numbers model calls within the sample and sums their usage', async () => {
    const definition = task({ solver: [generate(), generate()], scorer: match() });
    const { ctx } = context(mockllm(['wrong', 'still {target}']));

    const { state, score } = await runSample(definition, arithmetic, 1, ctx);

    expect(state.messages.slice(1).map((message) => message.content)).toEqual([
      'wrong',
      'still 42',
    ]);
    // Call 1: 5 words in, 1 out. Call 2: 5 + 1 in, 2 out.
    expect(state.usage).toEqual({ input_tokens: 11, output_tokens: 3, total_tokens: 14 });
    expect(score.value).toBe('C');
  });

  it('starts the numbering again for each sample', async () => {
    const model = mockllm(['first', 'second']);
    const definition = task({ solver: [generate()], scorer: match({ location: 'any' }) });
    const other: Sample = { id: 'q2', input: 'Again?', target: 'first' };
    const { ctx } = context(model);

    await runSample(definition, arithmetic, 1, ctx);
    const { score } = await runSample(definition, other, 1, ctx);

    expect(score.answer).toBe('first');
  });

  it("layers the solver's generate config over the task's, and gives the sample context", async () => {
    const calls: unknown[] = [];
    const recording: Model = {
      name: 'recording',
      generate: async (_messages, options) => {
        calls.push({ config: options?.config, sample: options?.sample });
        return {
          completion: '42',
          message: { role: 'assistant', content: '42' },
          usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 },
          stop_reason: 'stop',
        };
      },
    };
    const definition = task({
      config: { max_tokens: 100, temperature: 0.5 },
      solver: [generate({ temperature: 0 }), generate({ temperature: undefined })],
    });

    await runSample(definition, arithmetic, 1, context(recording).ctx);

    expect(calls).toEqual([
      { config: { max_tokens: 100, temperature: 0 }, sample: { sample: arithmetic, call: 0 } },
      { config: { max_tokens: 100, temperature: 0.5 }, sample: { sample: arithmetic, call: 1 } },
    ]);
  });

  it('stops the chain once a solver marks the state completed', async () => {
    const submit: Solver = async (state) => ({ ...state, completed: true });
    const never = jest.fn<ReturnType<Solver>, Parameters<Solver>>();
    const definition = task({ solver: [submit, never] });

    const { state, score } = await runSample(definition, arithmetic, 1, context(mockllm()).ctx);

    expect(never).not.toHaveBeenCalled();
    expect(state.completed).toBe(true);
    expect(score.value).toBe('I');
  });

  it('hands the scorer every target as a list', async () => {
    const seen: string[][] = [];
    const recordTargets: Scorer = async (_state, targets) => {
      seen.push(targets);
      return { value: 1 };
    };
    const { ctx } = context(mockllm());

    await runSample(task({ scorer: recordTargets }), arithmetic, 1, ctx);
    await runSample(task({ scorer: recordTargets }), { ...arithmetic, target: ['a', 'b'] }, 1, ctx);

    expect(seen).toEqual([['42'], ['a', 'b']]);
  });

  it('lets solver and scorer errors propagate unchanged', async () => {
    const failure = new Error('tool crashed');
    const failing: Solver = async () => {
      throw failure;
    };
    const { ctx } = context(mockllm());

    await expect(runSample(task({ solver: [failing] }), arithmetic, 1, ctx)).rejects.toBe(failure);
    await expect(
      runSample(task({ scorer: () => Promise.reject(failure) }), arithmetic, 1, ctx),
    ).rejects.toBe(failure);
  });

  it("says whether an error left a solver or the scorer (the error record's failed_in)", async () => {
    const { ctx } = context(mockllm());
    const inSolver = new Error('tool crashed');
    const inScorer = new Error('scorer broke');
    const solverFailed = runSample(
      task({ solver: [() => Promise.reject(inSolver)] }),
      arithmetic,
      1,
      ctx,
    );
    await expect(solverFailed).rejects.toBe(inSolver);
    const scorerFailed = runSample(
      task({ scorer: () => Promise.reject(inScorer) }),
      arithmetic,
      1,
      ctx,
    );
    await expect(scorerFailed).rejects.toBe(inScorer);
    expect([stageOf(inSolver), stageOf(inScorer), stageOf(new Error('x'))]).toEqual([
      'solver',
      'scorer',
      undefined,
    ]);
  });

  it('runs nothing once the sample is cancelled', async () => {
    const controller = new AbortController();
    controller.abort(new Error('sample cancelled'));
    const solver = jest.fn<ReturnType<Solver>, Parameters<Solver>>();
    const { ctx } = context(mockllm(), controller.signal);

    await expect(runSample(task({ solver: [solver] }), arithmetic, 1, ctx)).rejects.toThrow(
      'sample cancelled',
    );
    expect(solver).not.toHaveBeenCalled();
  });
});

describe('solvers', () => {
  it('initialState copies a chat input, so solvers cannot edit the dataset', async () => {
    const input: ChatMessage[] = [
      { role: 'system', content: 'Be terse.' },
      { role: 'user', content: 'Hi' },
    ];
    const chat: Sample = { id: 3, input, target: 'hello' };
    const state = initialState(chat, 1);

    state.messages[0].content = 'edited';

    expect(input[0].content).toBe('Be terse.');
  });

  it('system_message goes after the system messages a chat input already has', async () => {
    const chat: Sample = {
      id: 3,
      input: [
        { role: 'system', content: 'Be terse.' },
        { role: 'user', content: 'Hi' },
      ],
      target: 'hello',
      metadata: { name: 'Ada', tags: ['x'] },
    };
    const solve = systemMessage('Greet {name} {{literally}}; {missing} stays; tags {tags}.');

    const state = await solve(initialState(chat, 1), context(mockllm()).ctx);

    expect(state.messages).toEqual([
      { role: 'system', content: 'Be terse.' },
      { role: 'system', content: 'Greet Ada {literally}; {missing} stays; tags ["x"].' },
      { role: 'user', content: 'Hi' },
    ]);
  });
});

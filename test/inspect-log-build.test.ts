/**
 * The Inspect log builder and the rebuild cadence, as tables: no Temporal, no files. Whether
 * Inspect itself reads the result is test/inspect-logs.test.ts's question.
 */
import type { Scoring } from '../src/core/reducers';
import type { TaskIdentityRecord } from '../src/definition/identity';
import { taskMetrics, type TaskMetrics } from '../src/eval/metrics';
import {
  buildInspectLog,
  evalSetManifest,
  inspectJson,
  inspectLogFileName,
  namedStep,
  taskId,
  type TaskLogSource,
} from '../src/logs/inspect/build';
import { completedSample, sampleSummary, shortId, toMessages } from '../src/logs/inspect/samples';
import type { SampleErrorRecord, SampleRecord, TaskSummary } from '../src/logs/store';
import { InspectLogCadence, rebuildEvery } from '../src/workflows/inspect-log';

const identity: TaskIdentityRecord = {
  version: 1,
  eval_set: 'demo',
  task: 'sums_2',
  identity: {
    model: 'mockllm/model',
    model_args: {},
    solver: [{ system_message: 'Be brief.' }, { generate: {} }],
    scorer: { match: { location: 'end' } },
    dataset: { samples: 3, sha256: 'abc' },
    epochs: 2,
    config: {},
    sandbox: null,
  },
  recorded_at: '2026-12-01T10:20:30.456Z',
};

function record(id: string | number, epoch: number, value: 'C' | 'I'): SampleRecord {
  return {
    version: 1,
    eval_set: 'demo',
    task: 'sums_2',
    sample_id: id,
    epoch,
    input: `q${id}`,
    target: 't',
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: `q${id}` },
      { role: 'assistant', content: 'a' },
    ],
    output: 'a',
    score: { value, answer: 'a' },
    scorer: 'match',
    usage: { input_tokens: 3, output_tokens: 1, total_tokens: 4 },
    model: 'mockllm/model',
    started_at: `2026-12-01T10:21:0${epoch}.000Z`,
    completed_at: `2026-12-01T10:21:0${epoch}.250Z`,
    worker: { pid: 1, host: 'h' },
    attempt: 1,
  };
}

const failure: SampleErrorRecord = {
  version: 1,
  eval_set: 'demo',
  task: 'sums_2',
  sample_id: 'b',
  epoch: 2,
  input: 'qb',
  target: 't',
  error: 'provider said 400',
  error_type: 'StewardModelFatalError',
  failed_at: '2026-12-01T10:22:00.000Z',
  worker: { pid: 1, host: 'h' },
  attempt: 1,
  error_retries: [
    {
      error: 'scorer threw',
      error_type: 'StewardSampleError',
      failed_at: '2026-12-01T10:21:00.000Z',
    },
  ],
};

const summary: TaskSummary = {
  version: 1,
  eval_set: 'demo',
  name: 'sums_2',
  samples: 6,
  completed: 5,
  errored: 1,
  resumed: 0,
  metrics: {
    accuracy: 0.5,
    stderr: 0.28867513459481287,
    reducer: 'mean',
    samples_scored: 3,
    samples_unscored: 0,
    scores: [
      {
        reducer: 'mean',
        samples_scored: 3,
        samples_unscored: 0,
        metrics: { accuracy: 0.5, stderr: 0.28867513459481287 },
      },
    ],
  },
  scorer: 'match',
  model: 'mockllm/model',
  completed_at: '2026-12-01T10:23:00.000Z',
};

const samples = [
  record(1, 1, 'C'),
  record(1, 2, 'C'),
  record('a', 1, 'I'),
  record('a', 2, 'C'),
  record('b', 1, 'I'),
];

function build(extra: Partial<TaskLogSource> = {}) {
  return buildInspectLog({
    identity,
    samples,
    errors: [failure],
    sampleIds: [1, 'a', 'b'],
    stewardVersion: '0.1.0',
    ...extra,
  });
}

function entry(log: ReturnType<typeof build>, name: string): Record<string, unknown> {
  const found = log.entries.find((e) => e.name === name);
  if (!found) throw new Error(`no entry ${name}`);
  return found.json as Record<string, unknown>;
}

describe('ids and names', () => {
  test('shortId: 22 characters of base62, the same for the same seed', () => {
    expect(shortId('x')).toMatch(/^[0-9A-Za-z]{22}$/);
    expect(shortId('x')).toBe(shortId('x'));
    expect(shortId('x')).not.toBe(shortId('y'));
  });

  test("the file is named as Inspect names a log, with the task's name cleaned as Inspect does", () => {
    const id = taskId('demo', 'sums_2', identity.identity);
    expect(inspectLogFileName(identity)).toBe(`2026-12-01T10-20-30-00-00_sums-2_${id}.eval`);
  });

  test('a changed identity is another task id; the same identity, reordered keys, the same one', () => {
    const reordered = { ...identity.identity, epochs: 2, model: 'mockllm/model' };
    expect(taskId('demo', 'sums_2', reordered)).toBe(taskId('demo', 'sums_2', identity.identity));
    expect(taskId('demo', 'sums_2', { ...identity.identity, epochs: 3 })).not.toBe(
      taskId('demo', 'sums_2', identity.identity),
    );
  });

  test.each([
    ['generate', { name: 'generate', params: {} }],
    [{ generate: {} }, { name: 'generate', params: {} }],
    [{ system_message: 'Hi' }, { name: 'system_message', params: { template: 'Hi' } }],
    [{ agent: { max_turns: 6 } }, { name: 'agent', params: { max_turns: 6 } }],
    [{ function: 'mine' }, { name: 'mine', params: {} }],
  ])('step %j is %j', (step, expected) => {
    expect(namedStep(step)).toEqual(expected);
  });
});

describe('a running task', () => {
  const log = build();

  test('has the journal and the samples, and no header: Inspect reads it as started', () => {
    expect(log.status).toBe('started');
    expect(log.entries.map((e) => e.name)).toEqual([
      '_journal/start.json',
      'samples/1_epoch_1.json',
      'samples/a_epoch_1.json',
      'samples/b_epoch_1.json',
      'samples/1_epoch_2.json',
      'samples/a_epoch_2.json',
      'samples/b_epoch_2.json',
      '_journal/summaries/1.json',
    ]);
  });

  test('its spec names the dataset ids, the epochs, the plan and the scorer', () => {
    const start = entry(log, '_journal/start.json') as {
      version: number;
      eval: Record<string, unknown>;
      plan: { steps: Array<{ solver: string }> };
    };
    expect(start.version).toBe(2);
    expect(start.eval).toMatchObject({
      task: 'sums_2',
      created: '2026-12-01T10:20:30+00:00',
      dataset: { name: 'sums_2', samples: 3, sample_ids: [1, 'a', 'b'] },
      config: { epochs: 2, epochs_reducer: ['mean'] },
      scorers: [
        {
          name: 'match',
          options: { location: 'end' },
          metrics: [
            { name: 'inspect_ai/accuracy', options: {} },
            { name: 'inspect_ai/stderr', options: {} },
          ],
        },
      ],
    });
    expect(start.plan.steps.map((s) => s.solver)).toEqual(['system_message', 'generate']);
  });
});

describe('an ended task', () => {
  const log = build({ summary });
  const header = entry(log, 'header.json') as Record<string, never>;

  test('with a sample that did not complete is an error, and says which', () => {
    expect(log.status).toBe('error');
    expect(header.status).toBe('error');
    expect(header.error).toMatchObject({
      message: '1 of 6 samples did not complete (sample b, epoch 2: provider said 400)',
    });
  });

  test("its results are the summary's numbers, exactly", () => {
    expect(header.results).toEqual({
      total_samples: 6,
      completed_samples: 5,
      scores: [
        {
          name: 'match',
          scorer: 'match',
          reducer: 'mean',
          scored_samples: 3,
          unscored_samples: 0,
          params: {},
          metrics: {
            accuracy: { name: 'accuracy', value: 0.5, params: {} },
            stderr: { name: 'stderr', value: 0.28867513459481287, params: {} },
          },
        },
      ],
    });
    expect(header.stats).toEqual({
      started_at: '2026-12-01T10:21:01.000Z',
      completed_at: '2026-12-01T10:23:00.000Z',
      model_usage: { 'mockllm/model': { input_tokens: 15, output_tokens: 5, total_tokens: 20 } },
      role_usage: {},
    });
  });

  test('its reductions average each sample over its epochs', () => {
    expect(entry(log, 'reductions.json')).toEqual([
      {
        scorer: 'match',
        reducer: 'mean',
        samples: [
          { value: 1, history: [], sample_id: 1 },
          { value: 0.5, history: [], sample_id: 'a' },
          { value: 0, history: [], sample_id: 'b' },
        ],
      },
    ]);
  });

  test('the failed sample carries its error, its earlier attempts, input and target, and no score', () => {
    expect(entry(log, 'samples/b_epoch_2.json')).toMatchObject({
      id: 'b',
      epoch: 2,
      input: 'qb',
      target: 't',
      scores: null,
      error: { message: 'provider said 400' },
      error_retries: [
        {
          message: 'scorer threw',
          traceback: expect.stringContaining('StewardSampleError: scorer threw'),
        },
      ],
    });
    const summaries = entry(log, 'summaries.json') as unknown as Array<Record<string, unknown>>;
    expect(summaries.find((s) => s.id === 'b' && s.epoch === 2)).toMatchObject({
      error: 'provider said 400',
      retries: 1,
    });
  });

  test("a sample stopped by a limit carries Inspect's limit, and its summary the limit's type", () => {
    expect(entry(log, 'samples/a_epoch_1.json')).toMatchObject({ limit: null });
    const limited = { ...record('a', 1, 'I'), limit: { type: 'message' as const, limit: 7 } };
    const stopped = completedSample(limited, 'eval-id');
    expect(stopped.limit).toEqual({ type: 'message', limit: 7 });
    expect(stopped.scores).toEqual({ match: expect.objectContaining({ value: 'I' }) });
    expect(sampleSummary(stopped).limit).toBe('message');
  });

  test('a failure that a later attempt completed is not shown: the record wins', () => {
    const completed = build({ summary, errors: [{ ...failure, sample_id: 'a', epoch: 1 }] });
    expect(entry(completed, 'samples/a_epoch_1.json')).toMatchObject({ error: null });
  });

  test('without the dataset ids, the recorded ids stand in', () => {
    const start = entry(build({ sampleIds: undefined }), '_journal/start.json') as {
      eval: { dataset: { sample_ids: unknown } };
    };
    expect(start.eval.dataset.sample_ids).toEqual([1, 'a', 'b']);
  });

  test('with every sample completed it is a success', () => {
    const ok = build({ summary: { ...summary, completed: 6, errored: 0 }, errors: [] });
    expect(ok.status).toBe('success');
    expect((entry(ok, 'header.json') as { error?: unknown }).error).toBeUndefined();
  });
});

describe('messages', () => {
  test("tool calls get Inspect's shape: parsed arguments, and tool results their function", () => {
    const messages = toMessages(
      [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [
            { id: 'c1', name: 'bash', arguments: '{"cmd":"ls"}' },
            { id: 'c2', name: 'submit', arguments: 'not json' },
          ],
        },
        { role: 'tool', content: 'a b', tool_call_id: 'c1' },
        { role: 'user', content: 'more' },
      ],
      'm',
      'seed',
    );
    expect(messages).toMatchObject([
      { role: 'user', content: 'go', source: 'input' },
      {
        role: 'assistant',
        source: 'generate',
        model: 'm',
        tool_calls: [
          { id: 'c1', function: 'bash', arguments: { cmd: 'ls' }, type: 'function' },
          { id: 'c2', function: 'submit', arguments: {}, parse_error: expect.any(String) },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', function: 'bash' },
      { role: 'user', content: 'more' },
    ]);
    expect(messages[3]).not.toHaveProperty('source');
    expect(new Set(messages.map((m) => m.id)).size).toBe(4);
  });
});

test("eval-set.json lists the set's tasks in order, with the ids their logs carry", () => {
  expect(evalSetManifest('demo', [{ name: 'sums_2', identity: identity.identity }])).toEqual({
    eval_set_id: shortId('eval-set:demo'),
    tasks: [
      {
        name: 'sums_2',
        task_id: taskId('demo', 'sums_2', identity.identity),
        task_file: null,
        task_args: {},
        model: 'mockllm/model',
        model_args: {},
        model_roles: null,
        sequence: 0,
      },
    ],
  });
});

describe('the rebuild cadence', () => {
  test('every 1/20 of the task, at least 10 samples', () => {
    expect([1, 200, 400, 3000].map(rebuildEvery)).toEqual([10, 10, 20, 150]);
  });

  test('due by count at once, by time after the interval, never while one is in progress', () => {
    const cadence = new InspectLogCadence(3, 0, 10_000);
    expect(cadence.due(60_000)).toBe(false); // nothing unwritten
    expect(cadence.wakeIn(0)).toBeUndefined();
    cadence.noteSample();
    expect(cadence.due(1_000)).toBe(false);
    expect(cadence.wakeIn(1_000)).toBe(9_000);
    expect(cadence.due(10_000)).toBe(true); // by time
    cadence.start(10_000);
    cadence.noteSample();
    cadence.noteSample();
    cadence.noteSample();
    expect(cadence.due(10_001)).toBe(false); // by count, but one is in progress
    expect(cadence.wakeIn(10_001)).toBeUndefined();
    cadence.finish(10_001);
    expect(cadence.due(10_004)).toBe(true); // by count, once its cost (1 ms) is waited out 3 times
    cadence.start(10_004);
    cadence.finish(10_005);
    expect(cadence.due(50_000)).toBe(false); // all written
  });

  test('a costly rebuild holds the next back three times as long, whatever the count says', () => {
    const cadence = new InspectLogCadence(3, 0, 10_000);
    cadence.noteSample();
    cadence.start(10_000);
    cadence.finish(18_000); // 8 s to write
    for (let i = 0; i < 5; i++) cadence.noteSample();
    expect(cadence.due(20_000)).toBe(false);
    expect(cadence.wakeIn(20_000)).toBe(22_000); // 18 s + 3 × 8 s
    expect(cadence.due(42_000)).toBe(true);
  });
});

describe('a task reduced by pass_at_2 and mode, with mean and std', () => {
  const scoring: Scoring = { reducers: ['pass_at_2', 'mode'], metrics: ['mean', 'std'] };
  // Sample b's second epoch failed: pass_at_2 cannot score it (one epoch), mode can.
  const metrics = taskMetrics(
    samples.map((r) => ({ sampleId: r.sample_id, epoch: r.epoch, value: r.score.value })),
    scoring,
  );
  const log = build({ summary: { ...summary, metrics }, scoring });
  const header = entry(log, 'header.json') as Record<string, never>;

  test('the summary has one score per reducer, the first as its headline', () => {
    expect(metrics).toEqual({
      mean: 1,
      std: 0,
      reducer: 'pass_at_2',
      samples_scored: 2,
      samples_unscored: 1,
      scores: [
        {
          reducer: 'pass_at_2',
          samples_scored: 2,
          samples_unscored: 1,
          metrics: { mean: 1, std: 0 },
        },
        {
          reducer: 'mode',
          samples_scored: 3,
          samples_unscored: 0,
          metrics: { mean: 1 / 3, std: expect.closeTo(Math.sqrt(1 / 3), 12) },
        },
      ],
    });
  });

  test('the header names each reducer and its metrics', () => {
    expect(header.eval).toMatchObject({
      config: { epochs: 2, epochs_reducer: ['pass_at_2', 'mode'] },
      scorers: [
        {
          metrics: [
            { name: 'inspect_ai/mean', options: {} },
            { name: 'inspect_ai/std', options: {} },
          ],
        },
      ],
    });
    expect((header.results as { scores: unknown[] }).scores).toEqual([
      {
        name: 'match',
        scorer: 'match',
        reducer: 'pass_at_2',
        scored_samples: 2,
        unscored_samples: 1,
        params: {},
        metrics: {
          mean: { name: 'mean', value: 1, params: {} },
          std: { name: 'std', value: 0, params: {} },
        },
      },
      {
        name: 'match',
        scorer: 'match',
        reducer: 'mode',
        scored_samples: 3,
        unscored_samples: 0,
        params: {},
        metrics: {
          mean: { name: 'mean', value: 1 / 3, params: {} },
          std: { name: 'std', value: expect.closeTo(Math.sqrt(1 / 3), 12), params: {} },
        },
      },
    ]);
  });

  test("reductions: each reducer's value per sample, NaN where it scored none, a tie going to the first epoch", () => {
    expect(entry(log, 'reductions.json')).toEqual([
      {
        scorer: 'match',
        reducer: 'pass_at_2',
        samples: [
          { value: 1, history: [], sample_id: 1 },
          { value: 1, history: [], sample_id: 'a' },
          { value: NaN, history: [], sample_id: 'b' },
        ],
      },
      {
        scorer: 'match',
        reducer: 'mode',
        samples: [
          { value: 'C', history: [], sample_id: 1 },
          { value: 'I', history: [], sample_id: 'a' },
          { value: 'I', history: [], sample_id: 'b' },
        ],
      },
    ]);
  });

  test('the spec of the running task takes the scoring from the definition', () => {
    const running = entry(build({ scoring }), '_journal/start.json') as { eval: unknown };
    expect(running.eval).toMatchObject({ config: { epochs_reducer: ['pass_at_2', 'mode'] } });
  });

  test('a metric over no scored sample is NaN, written as Inspect writes it', () => {
    const none = taskMetrics([{ sampleId: 1, epoch: 1, value: 'C' }], {
      reducers: ['pass_at_2'],
      metrics: ['accuracy'],
    });
    expect(none).toMatchObject({ accuracy: null, samples_scored: 0, samples_unscored: 1 });
    const results = entry(build({ summary: { ...summary, metrics: none } }), 'header.json').results;
    expect(inspectJson(results)).toContain('"value":NaN');
    expect(inspectJson({ a: [NaN, 1, 'NaN'] })).toBe('{"a":[NaN,1,"NaN"]}');
  });
});

describe('a summary written before reducers were configurable', () => {
  test('reads as the mean, with its accuracy and stderr', () => {
    const old = { accuracy: 0.5, stderr: 0.25, samples_scored: 3 } as unknown as TaskMetrics;
    const header = entry(build({ summary: { ...summary, metrics: old } }), 'header.json');
    expect(header.results).toMatchObject({
      scores: [
        {
          reducer: 'mean',
          scored_samples: 3,
          metrics: { accuracy: { value: 0.5 }, stderr: { value: 0.25 } },
        },
      ],
    });
  });
});

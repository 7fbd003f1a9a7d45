import { inspect } from 'node:util';
import { APIConnectionError, APIError, APIUserAbortError } from 'openai';
import type { ChatMessage, Model, Sample, ToolDefinition } from '../src/definition/types';
import { ConfigError, ExitCode, StewardError } from '../src/errors';
import {
  checkModelEnvironment,
  createModel,
  modelCredentials,
  parseModelName,
} from '../src/models';
import { mockLatency } from '../src/models/mockllm';
import {
  chatCompletion,
  startOpenAIServer,
  type OpenAIServer,
  type Reply,
} from './fixtures/models/openai-server';

const API_KEY = 'sk-test-5f0e1d2c3b4a';

describe('parseModelName', () => {
  it.each([
    ['mockllm/model', { provider: 'mockllm', model: 'model' }],
    ['openai/gpt-4o-mini', { provider: 'openai', model: 'gpt-4o-mini' }],
    ['openai/ft:gpt-4o-mini:acme::abc', { provider: 'openai', model: 'ft:gpt-4o-mini:acme::abc' }],
    [
      'openai-api/together/meta-llama/Llama-3-70b',
      { provider: 'openai-api', service: 'together', model: 'meta-llama/Llama-3-70b' },
    ],
    ['anthropic/claude-sonnet-4-5', { provider: 'anthropic', model: 'claude-sonnet-4-5' }],
  ])('%s', (name, parsed) => {
    expect(parseModelName(name)).toEqual(parsed);
  });

  it.each([
    [
      'foo/bar',
      'unknown model provider "foo" in "foo/bar" (known: mockllm, openai, openai-api, anthropic)',
    ],
    [
      'gpt-4o',
      'malformed model name "gpt-4o": expected <provider>/<model> (providers: mockllm, openai, openai-api, anthropic)',
    ],
    ['openai/', 'malformed model name "openai/": expected openai/<model>'],
    ['openai-api/together', 'malformed model name "openai-api/together": expected openai-api/'],
    ['openai-api/my.svc/m', 'malformed model name "openai-api/my.svc/m": expected openai-api/'],
  ])('refuses %s', (name, message) => {
    expect(() => parseModelName(name)).toThrow(StewardError);
    expect(() => parseModelName(name)).toThrow(message);
  });
});

describe('modelCredentials and checkModelEnvironment', () => {
  it('reads openai from OPENAI_* and defaults the base URL to OpenAI', () => {
    expect(modelCredentials('openai/gpt-4o', { OPENAI_API_KEY: API_KEY })).toEqual({
      apiKey: API_KEY,
      baseURL: 'https://api.openai.com/v1',
      keyVar: 'OPENAI_API_KEY',
      baseUrlVar: 'OPENAI_BASE_URL',
    });
    expect(
      modelCredentials('openai/gpt-4o', { OPENAI_API_KEY: API_KEY, OPENAI_BASE_URL: 'http://p/v1' })
        .baseURL,
    ).toBe('http://p/v1');
  });

  it('reads anthropic from ANTHROPIC_* and defaults the base URL to Anthropic', () => {
    expect(modelCredentials('anthropic/claude-sonnet-4-5', { ANTHROPIC_API_KEY: API_KEY })).toEqual(
      {
        apiKey: API_KEY,
        baseURL: 'https://api.anthropic.com',
        keyVar: 'ANTHROPIC_API_KEY',
        baseUrlVar: 'ANTHROPIC_BASE_URL',
      },
    );
    const env = { ANTHROPIC_API_KEY: API_KEY, ANTHROPIC_BASE_URL: 'http://a' };
    expect(modelCredentials('anthropic/claude-sonnet-4-5', env).baseURL).toBe('http://a');
  });

  it('names an OpenAI-compatible service variables after the service', () => {
    const env = { TOGETHER_AI_API_KEY: API_KEY, TOGETHER_AI_BASE_URL: 'http://t/v1' };
    expect(modelCredentials('openai-api/together-ai/llama', env)).toEqual({
      apiKey: API_KEY,
      baseURL: 'http://t/v1',
      keyVar: 'TOGETHER_AI_API_KEY',
      baseUrlVar: 'TOGETHER_AI_BASE_URL',
    });
  });

  it.each<[string, NodeJS.ProcessEnv, string | undefined]>([
    ['mockllm/model', {}, undefined],
    ['openai/gpt-4o-mini', { OPENAI_API_KEY: API_KEY }, undefined],
    ['openai/gpt-4o-mini', {}, 'model openai/gpt-4o-mini needs OPENAI_API_KEY in the environment'],
    [
      'openai/gpt-4o-mini',
      { OPENAI_API_KEY: '' },
      'model openai/gpt-4o-mini needs OPENAI_API_KEY in the environment',
    ],
    [
      'openai-api/together-ai/llama',
      {},
      'model openai-api/together-ai/llama needs TOGETHER_AI_API_KEY and TOGETHER_AI_BASE_URL in the environment',
    ],
    [
      'openai-api/vllm/llama',
      { VLLM_API_KEY: API_KEY },
      'model openai-api/vllm/llama needs VLLM_BASE_URL in the environment',
    ],
    ['openai-api/vllm/llama', { VLLM_API_KEY: API_KEY, VLLM_BASE_URL: 'http://v/v1' }, undefined],
    ['anthropic/claude-sonnet-4-5', { ANTHROPIC_API_KEY: API_KEY }, undefined],
    [
      'anthropic/claude-sonnet-4-5',
      { ANTHROPIC_BASE_URL: 'http://a' },
      'model anthropic/claude-sonnet-4-5 needs ANTHROPIC_API_KEY in the environment',
    ],
    [
      'foo/bar',
      {},
      'unknown model provider "foo" in "foo/bar" (known: mockllm, openai, openai-api, anthropic)',
    ],
  ])('%s with %j', (name, env, message) => {
    expect(checkModelEnvironment(name, env)).toBe(message);
  });
});

describe('createModel', () => {
  it('refuses a model whose environment lacks its key, as an environment problem', () => {
    const attempt = () => createModel('openai/gpt-4o-mini', {}, {});
    expect(attempt).toThrow('model openai/gpt-4o-mini needs OPENAI_API_KEY in the environment');
    expect(catchError(attempt)).toMatchObject({ exitCode: ExitCode.environment });
  });

  it('builds anthropic, checking its model_args', () => {
    const env = { ANTHROPIC_API_KEY: API_KEY };
    expect(createModel('anthropic/claude-sonnet-4-5', { timeout_ms: 1000 }, env).name).toBe(
      'anthropic/claude-sonnet-4-5',
    );
    expect(() => createModel('anthropic/claude-sonnet-4-5', { top_k: 5 }, env)).toThrow(
      'model_args.top_k: unknown model argument (5)',
    );
  });

  it('reports every bad model argument by its path', () => {
    const error = catchError(() =>
      createModel('mockllm/model', { outputs: ['ok', 42], latency_ms: -1, temprature: 0.5 }, {}),
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues.map((issue) => [issue.path, issue.value])).toEqual([
      ['model_args.outputs.1', 42],
      ['model_args.latency_ms', -1],
      ['model_args.temprature', 0.5],
    ]);
    expect((error as Error).message).toContain(
      'model_args.temprature: unknown model argument (0.5)',
    );
  });

  it('refuses a non-positive openai timeout_ms', () => {
    const env = { OPENAI_API_KEY: API_KEY };
    expect(() => createModel('openai/gpt-4o-mini', { timeout_ms: 0 }, env)).toThrow(
      'model_args.timeout_ms',
    );
  });
});

describe('openai provider over HTTP', () => {
  let server: OpenAIServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function openAIModel(replies: Reply[], args: Record<string, unknown> = {}): Promise<Model> {
    server = await startOpenAIServer(replies);
    return createModel('openai/gpt-test', args, {
      OPENAI_API_KEY: API_KEY,
      OPENAI_BASE_URL: server.baseURL,
    });
  }

  it('sends the conversation and config, and maps the text reply and usage', async () => {
    const model = await openAIModel([
      {
        status: 200,
        body: chatCompletion({
          content: 'Paris.',
          usage: { prompt_tokens: 21, completion_tokens: 3, total_tokens: 24 },
        }),
      },
    ]);
    const output = await model.generate(
      [
        { role: 'system', content: 'Answer briefly.' },
        { role: 'user', content: 'Capital of France?' },
      ],
      { config: { max_tokens: 64, temperature: 0 } },
    );

    expect(output).toEqual({
      completion: 'Paris.',
      message: { role: 'assistant', content: 'Paris.' },
      usage: { input_tokens: 21, output_tokens: 3, total_tokens: 24 },
      stop_reason: 'stop',
    });
    const [request] = server!.requests;
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/v1/chat/completions');
    expect(request.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(request.body).toEqual({
      model: 'gpt-test',
      messages: [
        { role: 'system', content: 'Answer briefly.' },
        { role: 'user', content: 'Capital of France?' },
      ],
      max_completion_tokens: 64,
      temperature: 0,
    });
  });

  it('round-trips native tool calls', async () => {
    const weather: ToolDefinition = {
      name: 'get_weather',
      description: 'Current weather in a city.',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    };
    const model = await openAIModel([
      {
        status: 200,
        body: chatCompletion({
          toolCalls: [{ id: 'call_abc', name: 'get_weather', arguments: '{"city":"Oslo"}' }],
        }),
      },
      { status: 200, body: chatCompletion({ content: 'It is 4°C in Oslo.' }) },
    ]);
    const messages: ChatMessage[] = [{ role: 'user', content: 'Weather in Oslo?' }];

    const first = await model.generate(messages, { tools: [weather] });
    expect(first.stop_reason).toBe('tool_calls');
    expect(first.completion).toBe('');
    expect(first.message).toEqual({
      role: 'assistant',
      content: '',
      tool_calls: [{ id: 'call_abc', name: 'get_weather', arguments: '{"city":"Oslo"}' }],
    });
    expect(first.usage).toEqual({ input_tokens: 0, output_tokens: 0, total_tokens: 0 });
    expect(server!.requests[0].body.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Current weather in a city.',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
    ]);

    const second = await model.generate(
      [...messages, first.message, { role: 'tool', content: '4°C', tool_call_id: 'call_abc' }],
      { tools: [weather] },
    );
    expect(second.completion).toBe('It is 4°C in Oslo.');
    expect(server!.requests[1].body.messages).toEqual([
      { role: 'user', content: 'Weather in Oslo?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_abc',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
          },
        ],
      },
      { role: 'tool', content: '4°C', tool_call_id: 'call_abc' },
    ]);
  });

  it('maps a length cut-off to max_tokens', async () => {
    const model = await openAIModel([
      { status: 200, body: chatCompletion({ content: 'Once upon', finishReason: 'length' }) },
    ]);
    const output = await model.generate([{ role: 'user', content: 'Tell a story.' }]);
    expect(output.stop_reason).toBe('max_tokens');
  });

  it.each([
    [429, 'Rate limit reached for requests'],
    [503, 'The server is overloaded'],
  ])(
    'surfaces a %i as the SDK error after exactly one request, without the key',
    async (status, message) => {
      const model = await openAIModel([
        {
          status,
          headers: { 'retry-after': '7', 'x-request-id': 'req_1' },
          body: { error: { message, type: 'requests', code: 'rate_limit_exceeded' } },
        },
        { status: 200, body: chatCompletion({ content: 'a retry happened' }) },
      ]);
      const error = await model.generate([{ role: 'user', content: 'Hi' }]).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );

      expect(error).toBeInstanceOf(APIError);
      const apiError = error as APIError;
      expect(apiError.status).toBe(status);
      expect(apiError.headers?.get('retry-after')).toBe('7');
      expect(apiError.message).toBe(`${status} ${message}`);
      expect(server!.requests).toHaveLength(1);
      expect(server!.requests[0].headers.authorization).toBe(`Bearer ${API_KEY}`);
      expect(apiError.message).not.toContain(API_KEY);
      expect(inspect(apiError, { depth: 10 })).not.toContain(API_KEY);
      expect(inspect(model, { depth: 10 })).not.toContain(API_KEY);
    },
  );

  it('times out a hung request after timeout_ms, once', async () => {
    const model = await openAIModel([{ hang: true }], { timeout_ms: 200 });
    const started = performance.now();
    // Outside Jest this is an APIConnectionTimeoutError. Under Jest the SDK sees fetch's
    // AbortError from another realm, fails to recognise it, and reports its parent class.
    await expect(model.generate([{ role: 'user', content: 'Hi' }])).rejects.toBeInstanceOf(
      APIConnectionError,
    );
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect(server!.requests).toHaveLength(1);
  });

  it('stops waiting when the signal aborts', async () => {
    const model = await openAIModel([{ hang: true }]);
    const controller = new AbortController();
    const pending = model.generate([{ role: 'user', content: 'Hi' }], {
      signal: controller.signal,
    });
    await waitFor(() => server!.requests.length === 1);
    controller.abort();
    await expect(pending).rejects.toBeInstanceOf(APIUserAbortError);
  });

  it('refuses a 200 that is not a chat completion, naming the model', async () => {
    const model = await openAIModel([{ status: 200, body: { object: 'nonsense' } }]);
    await expect(model.generate([{ role: 'user', content: 'Hi' }])).rejects.toMatchObject({
      name: 'ModelResponseError',
      message: 'model openai/gpt-test answered without a completion choice: {"object":"nonsense"}',
    });
  });

  it('sends openai-api requests to the service base URL with max_tokens', async () => {
    server = await startOpenAIServer([{ status: 200, body: chatCompletion({ content: 'ok' }) }]);
    const model = createModel(
      'openai-api/local-vllm/meta-llama/Llama-3-8b',
      {},
      { LOCAL_VLLM_API_KEY: API_KEY, LOCAL_VLLM_BASE_URL: server.baseURL },
    );
    await model.generate([{ role: 'user', content: 'Hi' }], { config: { max_tokens: 5 } });
    expect(model.name).toBe('openai-api/local-vllm/meta-llama/Llama-3-8b');
    expect(server.requests[0].headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(server.requests[0].body).toMatchObject({
      model: 'meta-llama/Llama-3-8b',
      max_tokens: 5,
    });
  });
});

describe('mockllm', () => {
  const sample: Sample = { id: 'q1', input: 'What is 6 x 7?', target: ['42', 'forty-two'] };
  const ask: ChatMessage[] = [{ role: 'user', content: 'What is 6 x 7?' }];

  function mock(args: Record<string, unknown> = {}): Model {
    return createModel('mockllm/model', args, {});
  }

  it("answers Inspect's default output when nothing is scripted", async () => {
    const output = await mock().generate(ask);
    expect(output).toEqual({
      completion: 'Default output from mockllm/model',
      message: { role: 'assistant', content: 'Default output from mockllm/model' },
      // 5 words in, 4 words out.
      usage: { input_tokens: 5, output_tokens: 4, total_tokens: 9 },
      stop_reason: 'stop',
    });
  });

  it('fills {target} with the first target and {input} with the input text', async () => {
    const model = mock({ outputs: ['Q: {input} A: {target} ($& stays)'] });
    const output = await model.generate(ask, { sample: { sample, call: 0 } });
    expect(output.completion).toBe('Q: What is 6 x 7? A: 42 ($& stays)');

    const chatSample: Sample = {
      id: 2,
      input: [
        { role: 'system', content: 'Be terse.' },
        { role: 'user', content: 'Name a colour.' },
      ],
      target: 'red',
    };
    const chat = await model.generate([], { sample: { sample: chatSample, call: 0 } });
    expect(chat.completion).toBe('Q: Name a colour. A: red ($& stays)');
  });

  it('leaves placeholders alone when called outside a sample', async () => {
    const output = await mock({ outputs: ['{target}'] }).generate(ask);
    expect(output.completion).toBe('{target}');
  });

  it('cycles the script by call index within each sample', async () => {
    const model = mock({ outputs: ['one', 'two'] });
    const other: Sample = { ...sample, id: 'q2' };
    const replies = [];
    for (const [s, call] of [
      [sample, 0],
      [other, 0],
      [sample, 1],
      [sample, 2],
      [other, 1],
    ] as const) {
      replies.push((await model.generate(ask, { sample: { sample: s, call } })).completion);
    }
    expect(replies).toEqual(['one', 'one', 'two', 'one', 'two']);
  });

  it('counts calls per model instance outside a sample', async () => {
    const model = mock({ outputs: ['one', 'two'] });
    const replies = [];
    for (let i = 0; i < 3; i++) replies.push((await model.generate(ask)).completion);
    expect(replies).toEqual(['one', 'two', 'one']);
  });

  it('scripts tool calls with deterministic ids', async () => {
    const model = mock({
      outputs: [
        'thinking',
        {
          content: 'Let me check.',
          tool_calls: [
            { name: 'bash', arguments: { cmd: 'ls -la' } },
            { name: 'submit', arguments: { answer: 42 } },
          ],
        },
      ],
    });
    const output = await model.generate(ask, { sample: { sample, call: 1 } });
    expect(output).toEqual({
      completion: 'Let me check.',
      message: {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [
          { id: 'call_1_0', name: 'bash', arguments: '{"cmd":"ls -la"}' },
          { id: 'call_1_1', name: 'submit', arguments: '{"answer":42}' },
        ],
      },
      // Out: "Let me check." (3) + "bash {"cmd":"ls -la"}" (3) + "submit {"answer":42}" (2).
      usage: { input_tokens: 5, output_tokens: 8, total_tokens: 13 },
      stop_reason: 'tool_calls',
    });
  });

  it('gives the same outputs from separate instances', async () => {
    const args = { outputs: ['{target}', { tool_calls: [{ name: 'f', arguments: { x: 1 } }] }] };
    const run = async (model: Model) =>
      Promise.all([0, 1, 2].map((call) => model.generate(ask, { sample: { sample, call } })));
    expect(await run(mock(args))).toEqual(await run(mock(args)));
  });

  describe('mockLatency', () => {
    it('is the latency itself without jitter', () => {
      expect(mockLatency(250, 0, 'q1', 3)).toBe(250);
    });

    it('is reproducible, within +/- jitter, and varies across calls', () => {
      const delays = Array.from({ length: 20 }, (_, call) => mockLatency(100, 40, 'q1', call));
      expect(delays).toEqual(
        Array.from({ length: 20 }, (_, call) => mockLatency(100, 40, 'q1', call)),
      );
      for (const delay of delays) {
        expect(delay).toBeGreaterThanOrEqual(60);
        expect(delay).toBeLessThanOrEqual(140);
      }
      expect(new Set(delays).size).toBeGreaterThan(10);
      expect(mockLatency(100, 40, 'q1', 0)).not.toBe(mockLatency(100, 40, 'q2', 0));
    });

    it('never goes below zero', () => {
      const delays = Array.from({ length: 20 }, (_, call) => mockLatency(10, 1000, 7, call));
      expect(Math.min(...delays)).toBe(0);
    });
  });

  it('waits latency_ms before answering', async () => {
    const started = performance.now();
    await mock({ latency_ms: 80 }).generate(ask, { sample: { sample, call: 0 } });
    // Timers may fire a millisecond early after rounding; never much earlier.
    expect(performance.now() - started).toBeGreaterThanOrEqual(78);
  });

  it('stops waiting when the signal aborts', async () => {
    const controller = new AbortController();
    const started = performance.now();
    const pending = mock({ latency_ms: 60_000 }).generate(ask, { signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('refuses to start when the signal has already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(mock().generate(ask, { signal: controller.signal })).rejects.toMatchObject({
      name: 'AbortError',
    });
  });
});

function catchError(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  if (!condition()) throw new Error('condition not met in 2 s');
}

import OpenAI, { APIError } from 'openai';
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionTool } from 'openai/resources';
import { simProviderCommand } from '../src/cli/commands/sim-provider';
import { ConfigError } from '../src/errors';
import { createRateLimiter, formatResetDuration, type Admission } from '../src/sim/limits';
import { startSimProvider, type SimProvider, type SimProviderOptions } from '../src/sim/provider';
import { defaultScript, promptTokens, type SimRequest } from '../src/sim/script';

describe('formatResetDuration', () => {
  test.each([
    [0, '0s'],
    [0.2, '1ms'],
    [20, '20ms'],
    [999, '999ms'],
    [1000, '1s'],
    [8640, '8.64s'],
    [59_999, '59.999s'],
    [60_000, '1m0s'],
    [360_000, '6m0s'],
    [90_500, '1m30.5s'],
    [3_600_000, '1h0m0s'],
    [3_723_004, '1h2m3.004s'],
  ])('%p ms -> %p', (ms, text) => {
    expect(formatResetDuration(ms)).toBe(text);
  });
});

describe('createRateLimiter', () => {
  function limiterAt(limits: Parameters<typeof createRateLimiter>[0]) {
    let time = 1_000_000;
    const limiter = createRateLimiter(limits, () => time);
    return { limiter, advance: (ms: number) => (time += ms) };
  }
  function refused(admission: Admission): Extract<Admission, { admitted: false }> {
    if (admission.admitted) throw new Error('expected a refusal');
    return admission;
  }

  test('rpm: a full minute bursts, then refills one request per 60/rpm seconds', () => {
    const { limiter, advance } = limiterAt({ rpm: 3 });
    expect(limiter.admit(1).headers).toEqual({
      'x-ratelimit-limit-requests': '3',
      'x-ratelimit-remaining-requests': '2',
      'x-ratelimit-reset-requests': '20s',
    });
    expect(limiter.admit(1).admitted).toBe(true);
    expect(limiter.admit(1).admitted).toBe(true);
    const refusal = refused(limiter.admit(1));
    expect(refusal).toMatchObject({
      kind: 'requests',
      retryAfterMs: 20_000,
      retryAfterSeconds: 20,
      tooLarge: false,
      message:
        'Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.',
    });
    expect(refusal.headers['x-ratelimit-remaining-requests']).toBe('0');
    expect(refusal.headers['x-ratelimit-reset-requests']).toBe('1m0s');

    advance(19_999);
    expect(refused(limiter.admit(1)).retryAfterMs).toBe(1);
    advance(1);
    expect(limiter.admit(1).admitted).toBe(true);
    advance(60_000);
    expect(limiter.headers()['x-ratelimit-remaining-requests']).toBe('3');
    expect(limiter.headers()['x-ratelimit-reset-requests']).toBe('0s');
  });

  test('rpm refill is exact for limits that do not divide a minute', () => {
    const { limiter, advance } = limiterAt({ rpm: 7 });
    for (let i = 0; i < 7; i++) expect(limiter.admit(1).admitted).toBe(true);
    const wait = refused(limiter.admit(1)).retryAfterMs;
    expect(wait).toBe(Math.ceil(60_000 / 7));
    advance(wait);
    expect(limiter.admit(1).admitted).toBe(true);
  });

  test('tpm: admission charges the prompt, charge() the completion, and debt is waited out', () => {
    const { limiter, advance } = limiterAt({ tpm: 100 });
    expect(limiter.admit(40).admitted).toBe(true);
    limiter.charge(10);
    expect(limiter.admit(40).admitted).toBe(true);
    expect(limiter.headers()['x-ratelimit-remaining-tokens']).toBe('10');
    expect(refused(limiter.admit(20))).toMatchObject({ kind: 'tokens', retryAfterMs: 6_000 });

    limiter.charge(100);
    expect(limiter.headers()).toEqual({
      'x-ratelimit-limit-tokens': '100',
      'x-ratelimit-remaining-tokens': '0',
      'x-ratelimit-reset-tokens': '1m54s',
    });
    expect(refused(limiter.admit(1)).retryAfterMs).toBe(54_600);
    advance(54_600);
    expect(limiter.admit(1).admitted).toBe(true);
  });

  test('tpm: a request larger than the whole minute is refused as too large', () => {
    const { limiter } = limiterAt({ tpm: 100 });
    expect(refused(limiter.admit(101))).toMatchObject({
      kind: 'tokens',
      tooLarge: true,
      message: 'Request too large on tokens per min (TPM): Limit 100, Requested 101.',
    });
    expect(limiter.admit(100).admitted).toBe(true);
  });

  test('concurrency: one more than the limit is refused until a slot is released', () => {
    const { limiter } = limiterAt({ concurrency: 2 });
    const first = limiter.admit(1);
    const second = limiter.admit(1);
    expect(limiter.inFlight).toBe(2);
    expect(refused(limiter.admit(1))).toMatchObject({
      kind: 'concurrency',
      retryAfterMs: 1_000,
      retryAfterSeconds: 1,
      headers: {},
    });
    if (!first.admitted || !second.admitted) throw new Error('expected admissions');
    first.release();
    first.release();
    expect(limiter.inFlight).toBe(1);
    expect(limiter.admit(1).admitted).toBe(true);
    expect(limiter.admit(1).admitted).toBe(false);
  });

  test('a refusal consumes nothing, and the longest wait is the one reported', () => {
    const { limiter } = limiterAt({ rpm: 10, tpm: 1_000, concurrency: 1 });
    expect(limiter.admit(500).admitted).toBe(true);
    expect(refused(limiter.admit(100)).kind).toBe('concurrency');
    expect(limiter.headers()['x-ratelimit-remaining-requests']).toBe('9');
    expect(limiter.headers()['x-ratelimit-remaining-tokens']).toBe('500');
    // Over tokens (wait 6 s) and concurrency (1 s) at once: the client must wait 6 s.
    expect(refused(limiter.admit(600))).toMatchObject({ kind: 'tokens', retryAfterMs: 6_000 });
  });

  test('no limits: everything is admitted and no headers are sent', () => {
    const { limiter } = limiterAt({});
    for (let i = 0; i < 100; i++) expect(limiter.admit(1_000_000).admitted).toBe(true);
    expect(limiter.headers()).toEqual({});
  });

  test.each([{ rpm: 0 }, { tpm: -1 }, { concurrency: Number.NaN }])('rejects %p', (limits) => {
    expect(() => createRateLimiter(limits, () => 0)).toThrow(RangeError);
  });
});

const agentTools: ChatCompletionTool[] = [
  tool('bash', { cmd: { type: 'string' } }, ['cmd']),
  tool('submit', { answer: { type: 'string' } }, ['answer']),
];

function tool(
  name: string,
  properties: Record<string, unknown>,
  required?: string[],
): ChatCompletionTool {
  return {
    type: 'function',
    function: { name, description: name, parameters: { type: 'object', properties, required } },
  };
}

describe('defaultScript', () => {
  const ask = (content: string, extra: Partial<SimRequest> = {}): SimRequest => ({
    model: 'sim',
    messages: [{ role: 'user', content }],
    ...extra,
  });

  test.each([
    ['Say something.', 'Simulated reply.'],
    ['What is 6 x 7?\nANSWER: 42', '42'],
    ['  ANSWER:   spaced out  \nANSWER: second', 'spaced out'],
  ])('without agent tools, %p is answered %p', (content, answer) => {
    expect(defaultScript(ask(content))).toEqual({ content: answer });
  });

  test('tools other than bash and submit do not make an agent', () => {
    const tools = [agentTools[0], tool('lookup', {})] as SimRequest['tools'];
    expect(defaultScript(ask('ANSWER: x', { tools }))).toEqual({ content: 'x' });
  });

  test.each([
    ['Write hi.\nRUN: echo hi > /tmp/out.txt', 'echo hi > /tmp/out.txt'],
    ['Run this:\n```bash\nls -l /tmp\n```\nthen stop', 'ls -l /tmp'],
    ['RUN: date\n```\nls\n```', 'date'],
    ['Do your best.', 'echo done'],
  ])('the first agent turn for %p runs %p', (content, cmd) => {
    const tools = agentTools as SimRequest['tools'];
    expect(defaultScript(ask(content, { tools }))).toEqual({
      tool_calls: [{ name: 'bash', arguments: { cmd } }],
    });
  });

  test('argument names follow the tool schemas', () => {
    const tools = [
      tool('bash', { command: { type: 'string' }, timeout: { type: 'number' } }),
      tool('submit', {}),
    ] as SimRequest['tools'];
    expect(defaultScript(ask('x', { tools }))).toEqual({
      tool_calls: [{ name: 'bash', arguments: { command: 'echo done' } }],
    });
    const afterTool: SimRequest = {
      ...ask('x', { tools }),
      messages: [
        { role: 'user', content: 'x' },
        { role: 'tool', tool_call_id: 'a', content: [{ type: 'text', text: ' out \n' }] },
      ],
    };
    expect(defaultScript(afterTool)).toEqual({
      tool_calls: [{ name: 'submit', arguments: { answer: 'out' } }],
    });
  });

  test('prompt tokens grow with messages and tool definitions, at about four characters each', () => {
    expect(promptTokens(ask('x'.repeat(400)))).toBe(100);
    expect(promptTokens(ask(''))).toBe(1);
    const withTools = promptTokens(
      ask('x'.repeat(400), { tools: agentTools as SimRequest['tools'] }),
    );
    expect(withTools).toBeGreaterThan(100);
  });
});

describe('startSimProvider over HTTP', () => {
  const running: SimProvider[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((provider) => provider.close()));
  });

  async function start(options: SimProviderOptions = {}) {
    const provider = await startSimProvider(options);
    running.push(provider);
    const client = new OpenAI({ baseURL: provider.url, apiKey: 'sim', maxRetries: 0 });
    return { provider, client };
  }

  test('x-ratelimit-* headers on every answer, as OpenAI sends them; none with rateLimitHeaders: false', async () => {
    const { client } = await start({ rpm: 2 });
    const { response } = await client.chat.completions.create(chat('hi')).withResponse();
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('1');
    expect(response.headers.get('x-ratelimit-reset-requests')).toMatch(/^(30|29\.\d+)s$/);

    const quiet = await start({ rpm: 1, rateLimitHeaders: false });
    const answered = await quiet.client.chat.completions.create(chat('hi')).withResponse();
    expect(answered.response.headers.get('x-ratelimit-limit-requests')).toBeNull();
    const refusal = await failure(quiet.client.chat.completions.create(chat('hi')));
    expect(refusal.status).toBe(429);
    expect(refusal.headers?.get('retry-after')).toBe('60');
    expect(refusal.headers?.get('x-ratelimit-remaining-requests')).toBeNull();
  });

  function chat(text: string, extra: Partial<ChatCompletionCreateParamsNonStreaming> = {}) {
    return {
      model: 'sim-model',
      messages: [{ role: 'user' as const, content: text }],
      ...extra,
    };
  }

  async function failure(promise: Promise<unknown>): Promise<APIError> {
    const error = await promise.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    if (!(error instanceof APIError)) throw new Error(`expected an API error, got ${error}`);
    return error;
  }

  async function waitFor(condition: () => boolean): Promise<void> {
    for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setTimeout(r, 5));
    expect(condition()).toBe(true);
  }

  test('a plain reply with usage', async () => {
    const { provider, client } = await start();
    const completion = await client.chat.completions.create(chat('What is 6 x 7?\nANSWER: 42'));
    expect(provider.url).toBe(`http://127.0.0.1:${provider.port}/v1`);
    expect(completion.model).toBe('sim-model');
    expect(completion.choices[0].message.content).toBe('42');
    expect(completion.choices[0].finish_reason).toBe('stop');
    expect(completion.usage).toEqual({ prompt_tokens: 7, completion_tokens: 1, total_tokens: 8 });

    const plain = await client.chat.completions.create(chat('Hello'));
    expect(plain.choices[0].message.content).toBe('Simulated reply.');
  });

  test('a tool-call round trip follows the default agent script', async () => {
    const { client } = await start();
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Write hi to /tmp/out.txt.\nRUN: echo hi > /tmp/out.txt' },
    ];
    const first = await client.chat.completions.create({ model: 'm', messages, tools: agentTools });
    const call = first.choices[0].message.tool_calls?.[0];
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    expect(call?.type === 'function' && call.function).toEqual({
      name: 'bash',
      arguments: JSON.stringify({ cmd: 'echo hi > /tmp/out.txt' }),
    });

    messages.push(first.choices[0].message, {
      role: 'tool',
      tool_call_id: call?.id ?? '',
      content: 'hi\n',
    });
    const second = await client.chat.completions.create({
      model: 'm',
      messages,
      tools: agentTools,
    });
    const submit = second.choices[0].message.tool_calls?.[0];
    expect(submit?.type === 'function' && submit.function).toEqual({
      name: 'submit',
      arguments: JSON.stringify({ answer: 'hi' }),
    });
    expect(submit?.id).not.toBe(call?.id);
  });

  test('over the RPM limit: 429 with retry-after and x-ratelimit headers', async () => {
    const { client } = await start({ rpm: 2 });
    const ok = await client.chat.completions.create(chat('hi')).withResponse();
    expect(ok.response.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect(ok.response.headers.get('x-ratelimit-remaining-requests')).toBe('1');
    await client.chat.completions.create(chat('hi'));

    const error = await failure(client.chat.completions.create(chat('hi')));
    expect(error.status).toBe(429);
    expect(error.type).toBe('requests');
    expect(error.code).toBe('rate_limit_exceeded');
    expect(error.message).toContain('Limit 2, Used 2, Requested 1');
    expect(error.headers?.get('retry-after')).toBe('30');
    expect(Number(error.headers?.get('retry-after-ms'))).toBeGreaterThan(29_000);
    expect(error.headers?.get('x-ratelimit-limit-requests')).toBe('2');
    expect(error.headers?.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(error.headers?.get('x-ratelimit-reset-requests')).toMatch(/^(59\.\d+s|1m0s)$/);
  });

  test('over the concurrency limit: 429 while N are in flight, admitted again after', async () => {
    // Long enough that the third request surely arrives while the first two wait.
    const { provider, client } = await start({ concurrency: 2, latencyMs: 1_000 });
    const slow = [1, 2].map(() => client.chat.completions.create(chat('hi')));
    await waitFor(() => provider.stats().in_flight === 2);

    const error = await failure(client.chat.completions.create(chat('hi')));
    expect(error.status).toBe(429);
    expect(error.type).toBe('requests');
    expect(error.headers?.get('retry-after')).toBe('1');
    expect(error.message).toContain('Too many concurrent requests: Limit 2, In flight 2');

    await Promise.all(slow);
    await client.chat.completions.create(chat('hi'));
    expect(provider.stats()).toMatchObject({
      by_status: { 200: 3, 429: 1 },
      peak_in_flight: 2,
      in_flight: 0,
    });
  });

  test('over the TPM limit: prompt and completion tokens both count', async () => {
    const { client } = await start({ tpm: 60 });
    // 80 characters: 20 prompt tokens; "Simulated reply." is 4 completion tokens.
    const prompt = 'x'.repeat(80);
    const first = await client.chat.completions.create(chat(prompt));
    expect(first.usage?.total_tokens).toBe(24);
    const second = await client.chat.completions.create(chat(prompt)).withResponse();
    expect(second.response.headers.get('x-ratelimit-limit-tokens')).toBe('60');
    expect(second.response.headers.get('x-ratelimit-remaining-tokens')).toBe('12');

    const error = await failure(client.chat.completions.create(chat(prompt)));
    expect(error.status).toBe(429);
    expect(error.type).toBe('tokens');
    expect(error.code).toBe('rate_limit_exceeded');
    expect(error.headers?.get('retry-after')).toBe('8');

    const tooLarge = await failure(client.chat.completions.create(chat('x'.repeat(400))));
    expect(tooLarge.status).toBe(429);
    expect(tooLarge.message).toContain('Request too large');
  });

  test('the error rate gives the same 500s for the same seed', async () => {
    const statuses = async (seed: number) => {
      const { provider, client } = await start({ errorRate: 0.3, seed });
      const seen: number[] = [];
      for (let i = 0; i < 100; i++) {
        const result = await client.chat.completions.create(chat('hi')).then(
          () => 200,
          (error: APIError) => error.status ?? 0,
        );
        seen.push(result);
      }
      expect(provider.stats().by_status).toEqual({
        200: 100 - count(seen, 500),
        500: count(seen, 500),
      });
      return seen;
    };
    const count = (values: number[], value: number) => values.filter((v) => v === value).length;

    const first = await statuses(42);
    // Pinned: the draws are part of the contract (benchmarks compare runs by seed).
    expect(count(first, 500)).toBe(32);
    expect(await statuses(42)).toEqual(first);
    expect(await statuses(7)).not.toEqual(first);

    const { client } = await start({ errorRate: 1 });
    const error = await failure(client.chat.completions.create(chat('hi')));
    expect(error.status).toBe(500);
    expect(error.type).toBe('server_error');
  });

  test('latency and jitter are honoured', async () => {
    const { client } = await start({ latencyMs: 200, jitterMs: 50 });
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      await client.chat.completions.create(chat('hi'));
      expect(performance.now() - started).toBeGreaterThanOrEqual(195);
    }
  });

  test('stats count exactly what was answered, also over GET /stats', async () => {
    const { provider, client } = await start({ rpm: 3, apiKey: 'sim' });
    const usages = await Promise.all(
      ['a', 'bb'.repeat(50), 'ANSWER: yes'].map((text) =>
        client.chat.completions.create(chat(text)).then((c) => c.usage),
      ),
    );
    await failure(client.chat.completions.create(chat('over')));
    const wrongKey = new OpenAI({ baseURL: provider.url, apiKey: 'nope', maxRetries: 0 });
    await failure(wrongKey.chat.completions.create(chat('hi')));
    await failure(client.chat.completions.create({ model: 'm', messages: [] }));

    const stats = provider.stats();
    const sum = (key: 'prompt_tokens' | 'completion_tokens') =>
      usages.reduce((total, usage) => total + (usage?.[key] ?? 0), 0);
    expect(stats).toMatchObject({
      requests: 6,
      by_status: { 200: 3, 429: 1, 401: 1, 400: 1 },
      rate_limited: 1,
      in_flight: 0,
      prompt_tokens: sum('prompt_tokens'),
      completion_tokens: sum('completion_tokens'),
      total_tokens: sum('prompt_tokens') + sum('completion_tokens'),
    });
    expect(stats.peak_in_flight).toBeGreaterThanOrEqual(1);
    expect(stats.series.reduce((total, point) => total + point.requests, 0)).toBe(6);
    expect(stats.series.reduce((total, point) => total + point.rate_limited, 0)).toBe(1);

    const served = await fetch(`http://127.0.0.1:${provider.port}/stats`).then((r) => r.json());
    expect(served).toMatchObject({ requests: 6, by_status: stats.by_status });

    provider.resetStats();
    expect(provider.stats()).toMatchObject({ requests: 0, by_status: {}, total_tokens: 0 });
    expect(provider.stats().series).toEqual([{ t: 0, in_flight: 0, requests: 0, rate_limited: 0 }]);
  });

  test('the series is bounded and fills quiet seconds', async () => {
    const { provider, client } = await start({ seriesSeconds: 2, latencyMs: 1_100 });
    await client.chat.completions.create(chat('hi'));
    await client.chat.completions.create(chat('hi'));
    const series = provider.stats().series;
    expect(series).toHaveLength(2);
    expect(series.map((point) => point.t)).toEqual([series[0].t, series[0].t + 1]);
    expect(series[0].t).toBeGreaterThanOrEqual(1);
  });

  test('401 for a wrong or missing key, 404 for an unknown path', async () => {
    const { provider } = await start({ apiKey: 'right' });
    const wrong = new OpenAI({ baseURL: provider.url, apiKey: 'wrong', maxRetries: 0 });
    const error = await failure(wrong.chat.completions.create(chat('hi')));
    expect(error.status).toBe(401);
    expect(error.code).toBe('invalid_api_key');
    expect(error.message).not.toContain('wrong');
    expect((await failure(wrong.models.list())).status).toBe(401);

    const right = new OpenAI({ baseURL: provider.url, apiKey: 'right', maxRetries: 0 });
    expect((await right.models.list()).data.map((model) => model.id)).toEqual(['sim']);

    const anonymous = await fetch(`${provider.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify(chat('hi')),
    });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ error: { type: 'invalid_request_error' } });

    const missing = await fetch(`${provider.url}/embeddings`, { method: 'POST' });
    expect(missing.status).toBe(404);
  });

  test('400 for a malformed body, naming the field', async () => {
    const { provider, client } = await start();
    const garbage = await fetch(`${provider.url}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sim', 'content-type': 'application/json' },
      body: '{"model": "m", "messages": [',
    });
    expect(garbage.status).toBe(400);
    expect(await garbage.json()).toMatchObject({
      error: { type: 'invalid_request_error', message: expect.stringContaining('JSON body') },
    });

    const badRole = await failure(
      client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'robot', content: 'hi' }],
      } as unknown as ChatCompletionCreateParamsNonStreaming),
    );
    expect(badRole.status).toBe(400);
    expect(badRole.param).toBe('messages.0.role');

    const streaming = await failure(
      client.chat.completions.create({ ...chat('hi'), stream: true }),
    );
    expect(streaming.status).toBe(400);
    expect(streaming.param).toBe('stream');
  });

  test('a custom script decides replies and can force errors; max_tokens cuts the reply', async () => {
    const { provider, client } = await start({
      script: (request) =>
        request.model === 'broken'
          ? { status: 503, body: { error: { message: 'overloaded', type: 'server_error' } } }
          : { content: `echo ${request.messages.length}: ${'y'.repeat(100)}` },
    });
    const reply = await client.chat.completions.create(chat('hi'));
    expect(reply.choices[0].message.content).toBe(`echo 1: ${'y'.repeat(100)}`);

    const cut = await client.chat.completions.create(chat('hi', { max_tokens: 3 }));
    expect(cut.choices[0]).toMatchObject({
      finish_reason: 'length',
      message: { content: 'echo 1: yyyy' },
    });
    expect(cut.usage?.completion_tokens).toBe(3);

    const error = await failure(client.chat.completions.create({ ...chat('hi'), model: 'broken' }));
    expect(error.status).toBe(503);
    expect(error.message).toContain('overloaded');
    expect(provider.stats().by_status).toEqual({ 200: 2, 503: 1 });
  });

  test('a script that throws is answered 500, and the connection stays usable', async () => {
    const { provider, client } = await start({
      script: (request) => {
        if (request.model === 'bug') throw new Error('script bug');
        return { content: 'fine' };
      },
    });
    const error = await failure(client.chat.completions.create({ ...chat('hi'), model: 'bug' }));
    expect(error.status).toBe(500);
    expect(error.message).toContain('script bug');
    const reply = await client.chat.completions.create(chat('hi'));
    expect(reply.choices[0].message.content).toBe('fine');
    expect(provider.stats()).toMatchObject({ by_status: { 200: 1, 500: 1 }, in_flight: 0 });
  });

  test('hundreds of concurrent requests over keep-alive all succeed', async () => {
    const { provider, client } = await start({ latencyMs: 1_000 });
    const replies = await Promise.all(
      Array.from({ length: 300 }, () => client.chat.completions.create(chat('hi'))),
    );
    expect(replies.every((reply) => reply.choices[0].message.content === 'Simulated reply.')).toBe(
      true,
    );
    expect(provider.stats().by_status).toEqual({ 200: 300 });
    expect(provider.stats().peak_in_flight).toBeGreaterThan(100);
  });
});

describe('simProviderCommand', () => {
  test('rejects bad numbers, naming every flag', async () => {
    const attempt = simProviderCommand({
      port: 70_000,
      rpm: 0,
      latencyMs: -1,
      errorRate: 1.5,
      overloadRate: 2,
      seed: Number.NaN,
    });
    await expect(attempt).rejects.toThrow(ConfigError);
    await expect(attempt).rejects.toThrow(
      [
        '--port: must be an integer from 0 to 65535 (70000)',
        '--rpm: must be a positive integer (0)',
        '--latency-ms: must be a whole number of milliseconds, 0 or more (-1)',
        '--error-rate: must be a fraction from 0 to 1 (1.5)',
        '--overload-rate: must be a fraction from 0 to 1 (2)',
        '--seed: must be an integer, not a number',
      ].join('\n'),
    );
  });

  test('prints how to point Steward at it, serves until told to stop, then prints stats', async () => {
    const lines: string[] = [];
    let stop = () => {};
    const until = new Promise<void>((resolve) => (stop = resolve));
    const running = simProviderCommand(
      { port: 0, rpm: 100 },
      { print: (line) => lines.push(line), until },
    );
    await new Promise<void>((resolve) => {
      const poll = () => (lines.length > 0 ? resolve() : setTimeout(poll, 5));
      poll();
    });
    const url = /listening on (\S+)/.exec(lines[0])?.[1] ?? '';
    expect(lines).toContain(`  export SIM_BASE_URL=${url} SIM_API_KEY=sim`);
    expect(lines.join('\n')).toContain('openai-api/sim/<any name>');
    expect(lines).toContain(
      `  or export ANTHROPIC_BASE_URL=${url.replace(/\/v1$/, '')} ANTHROPIC_API_KEY=sim`,
    );

    const client = new OpenAI({ baseURL: url, apiKey: 'sim', maxRetries: 0 });
    await client.chat.completions.create({
      model: 'x',
      messages: [{ role: 'user', content: 'hi' }],
    });
    stop();
    await running;
    expect(lines).toContain('Served 1 requests (200: 1).');
    await expect(fetch(`${url}/models`)).rejects.toThrow();
  });
});

/**
 * Anthropic, short of a workflow: the simulator's `POST /v1/messages` as the real API answers
 * (raw HTTP), and the `anthropic/<model>` provider through the real `@anthropic-ai/sdk` over real
 * HTTP to it: the message mapping both ways, usage, the rate-limit headers handed to pacing, and
 * each failure classified the way Anthropic means it.
 */
import { readRateLimitHeaders } from '../src/core/pacing';
import { classifyError } from '../src/core/retry';
import type { ChatMessage, ToolDefinition } from '../src/definition/types';
import { createModel } from '../src/models';
import { requestBody } from '../src/models/anthropic';
import { anthropicHeaders } from '../src/sim/limits';
import { anthropicError } from '../src/sim/messages';
import { startSimProvider, type SimProvider } from '../src/sim/provider';
import { startFaultyProvider } from './helpers/faulty-provider';
import { defaultScript, type SimRequest, type SimScript } from '../src/sim/script';

const KEY = 'sk-ant-test-3c1e';
const MODEL = 'anthropic/claude-sim';

const BASH: ToolDefinition = {
  name: 'bash',
  description: 'Run a shell command.',
  parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
};
const SUBMIT: ToolDefinition = {
  name: 'submit',
  description: 'Submit an answer.',
  parameters: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] },
};

/** A provider that records what each script call saw. */
async function recording(
  options: Parameters<typeof startSimProvider>[0] = {},
  script?: SimScript,
): Promise<{ provider: SimProvider; seen: SimRequest[] }> {
  const seen: SimRequest[] = [];
  const provider = await startSimProvider({
    apiKey: KEY,
    ...options,
    script: (request) => {
      seen.push(request);
      return (script ?? defaultScript)(request);
    },
  });
  return { provider, seen };
}

function post(
  provider: SimProvider,
  body: unknown,
  headers: Record<string, string> = { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' },
): Promise<Response> {
  return fetch(`${provider.anthropicUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

const hello = { model: 'claude-sim', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };

describe("the simulator's Messages API", () => {
  let provider: SimProvider | undefined;
  afterEach(async () => {
    await provider?.close();
    provider = undefined;
  });

  test('requires a key (x-api-key, or Bearer as SDK 1.x sends it) and anthropic-version', async () => {
    provider = await startSimProvider({ apiKey: KEY });
    const cases: [Record<string, string>, number, string, string][] = [
      [
        { 'anthropic-version': '2023-06-01' },
        401,
        'authentication_error',
        'x-api-key header is required',
      ],
      [
        { 'x-api-key': 'wrong', 'anthropic-version': '2023-06-01' },
        401,
        'authentication_error',
        'invalid x-api-key',
      ],
      [{ 'x-api-key': KEY }, 400, 'invalid_request_error', 'anthropic-version: header is required'],
      [
        { 'x-api-key': KEY, 'anthropic-version': '2024-13-01' },
        400,
        'invalid_request_error',
        'anthropic-version: unknown version "2024-13-01" (the simulator speaks 2023-06-01, 2026-10-21)',
      ],
      [
        { authorization: 'Bearer wrong', 'anthropic-version': '2026-10-21' },
        401,
        'authentication_error',
        'invalid x-api-key',
      ],
    ];
    for (const [headers, status, type, message] of cases) {
      const response = await post(provider, hello, headers);
      expect(response.status).toBe(status);
      expect(await response.json()).toEqual({ type: 'error', error: { type, message } });
    }
    expect((await post(provider, hello)).status).toBe(200);
    const bearer = { authorization: `Bearer ${KEY}`, 'anthropic-version': '2026-10-21' };
    expect((await post(provider, hello, bearer)).status).toBe(200);
  });

  test('answers a Message, with usage and anthropic-ratelimit-* headers (RFC 3339 resets)', async () => {
    provider = await startSimProvider({ apiKey: KEY, rpm: 10, tpm: 10_000 });
    const sent = performance.now();
    const response = await post(provider, {
      ...hello,
      messages: [{ role: 'user', content: 'ANSWER: 42' }],
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      id: 'msg_sim_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sim',
      content: [{ type: 'text', text: '42' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: {
        input_tokens: 3,
        output_tokens: 1,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    });
    const h = response.headers;
    expect(h.get('request-id')).toMatch(/^req_sim_\d+$/);
    expect(h.get('anthropic-ratelimit-requests-limit')).toBe('10');
    expect(h.get('anthropic-ratelimit-requests-remaining')).toBe('9');
    expect(h.get('anthropic-ratelimit-requests-reset')).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
    );
    expect(h.get('anthropic-ratelimit-tokens-limit')).toBe('10000');
    // The 4 tokens are spent, less what the bucket refilled while the call ran (one per 6 ms).
    const refilled = Math.ceil(((performance.now() - sent) * 10_000) / 60_000);
    const tokensLeft = Number(h.get('anthropic-ratelimit-tokens-remaining'));
    expect(tokensLeft).toBeGreaterThanOrEqual(10_000 - 3 - 1);
    expect(tokensLeft).toBeLessThanOrEqual(10_000 - 3 - 1 + refilled);
    // No OpenAI spelling on Anthropic's API.
    expect(h.get('x-ratelimit-limit-requests')).toBeNull();
  });

  test('over the limit: 429 rate_limit_error with retry-after; overloaded: 529 overloaded_error', async () => {
    provider = await startSimProvider({ apiKey: KEY, rpm: 1 });
    expect((await post(provider, hello)).status).toBe(200);
    const limited = await post(provider, hello);
    expect(limited.status).toBe(429);
    const body = (await limited.json()) as {
      type: string;
      error: { type: string; message: string };
    };
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('rate_limit_error');
    expect(body.error.message).toMatch(/rate limit.*Limit 1/);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
    expect(limited.headers.get('retry-after-ms')).toBeNull();
    expect(limited.headers.get('anthropic-ratelimit-requests-remaining')).toBe('0');
    await provider.close();

    provider = await startSimProvider({ apiKey: KEY, overloadRate: 1 });
    const overloaded = await post(provider, hello);
    expect(overloaded.status).toBe(529);
    expect(await overloaded.json()).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
    });
    expect(provider.stats().by_status).toEqual({ 529: 1 });
    // OpenAI's overload is a 503 server_error: transient there, not pushback.
    const openAi = await fetch(`${provider.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(openAi.status).toBe(503);
    expect(((await openAi.json()) as { error: { type: string } }).error.type).toBe('server_error');
  });

  test('refuses what the real API refuses, in its words', async () => {
    const sim = (provider = await startSimProvider({ apiKey: KEY }));
    const refusal = async (body: unknown) => {
      const response = await post(sim, body);
      expect(response.status).toBe(400);
      const json = (await response.json()) as { error: { type: string; message: string } };
      expect(json.error.type).toBe('invalid_request_error');
      return json.error.message;
    };
    const { max_tokens: _, ...noMaxTokens } = hello;
    expect(await refusal(noMaxTokens)).toBe('max_tokens: Field required');
    expect(await refusal({ ...hello, messages: [{ role: 'system', content: 'x' }] })).toMatch(
      /^messages\.0\.role: /,
    );
    expect(await refusal({ ...hello, messages: [{ role: 'user', content: '' }] })).toBe(
      'messages.0.content.0: text content blocks must be non-empty',
    );
    const toolUse = { type: 'tool_use', id: 'toolu_1', name: 'bash', input: { cmd: 'ls' } };
    expect(
      await refusal({
        ...hello,
        messages: [
          { role: 'user', content: 'go' },
          { role: 'assistant', content: [toolUse] },
          { role: 'user', content: 'and?' },
        ],
      }),
    ).toMatch(
      /^messages\.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1\./,
    );
    expect(
      await refusal({
        ...hello,
        messages: [
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: 'x' }],
          },
        ],
      }),
    ).toMatch(/^messages\.0\.content\.0: unexpected `tool_use_id`/);
  });

  test('anthropicHeaders spells a limit snapshot the way pacing reads it back', () => {
    const now = Date.parse('2026-12-01T12:00:00.250Z');
    const headers = anthropicHeaders(
      {
        requests: { limit: 50, remaining: 49, resetMs: 1_200 },
        tokens: { limit: 40_000, remaining: 39_000, resetMs: 0 },
      },
      now,
    );
    expect(headers).toEqual({
      'anthropic-ratelimit-requests-limit': '50',
      'anthropic-ratelimit-requests-remaining': '49',
      'anthropic-ratelimit-requests-reset': '2026-12-01T12:00:02Z',
      'anthropic-ratelimit-tokens-limit': '40000',
      'anthropic-ratelimit-tokens-remaining': '39000',
      'anthropic-ratelimit-tokens-reset': '2026-12-01T12:00:01Z',
    });
    expect(readRateLimitHeaders((name) => headers[name], now)).toEqual({
      requests: { limit: 50, remaining: 49, resetAt: Date.parse('2026-12-01T12:00:02Z') },
      tokens: { limit: 40_000, remaining: 39_000, resetAt: Date.parse('2026-12-01T12:00:01Z') },
    });
  });
});

describe('requestBody: Steward messages as a Messages request', () => {
  test('system to `system`, parallel tool results and the next words in one user turn', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'system', content: 'Use tools.' },
      { role: 'user', content: 'Go.' },
      {
        role: 'assistant',
        content: 'Two at once.',
        tool_calls: [
          { id: 'toolu_a', name: 'bash', arguments: '{"cmd":"ls"}' },
          // Arguments from elsewhere that are not an object are kept, not dropped.
          { id: 'toolu_b', name: 'bash', arguments: 'pwd' },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_a', content: 'a.txt' },
      { role: 'tool', tool_call_id: 'toolu_b', content: '/root' },
      { role: 'user', content: 'Now submit.' },
      // A turn with nothing to say is left out (the API refuses empty content).
      { role: 'assistant', content: '' },
      { role: 'user', content: 'Please.' },
    ];
    expect(requestBody('claude-x', messages, [BASH], { temperature: 0 })).toEqual({
      model: 'claude-x',
      max_tokens: 4096,
      temperature: 0,
      system: [
        { type: 'text', text: 'Be brief.' },
        { type: 'text', text: 'Use tools.' },
      ],
      tools: [{ name: 'bash', description: BASH.description, input_schema: BASH.parameters }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Go.' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Two at once.' },
            { type: 'tool_use', id: 'toolu_a', name: 'bash', input: { cmd: 'ls' } },
            { type: 'tool_use', id: 'toolu_b', name: 'bash', input: { input: 'pwd' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_a', content: 'a.txt' },
            { type: 'tool_result', tool_use_id: 'toolu_b', content: '/root' },
            { type: 'text', text: 'Now submit.' },
            { type: 'text', text: 'Please.' },
          ],
        },
      ],
    });
  });

  test("the task's max_tokens is sent as is; nothing optional is sent unasked", () => {
    expect(
      requestBody('claude-x', [{ role: 'user', content: 'hi' }], [], { max_tokens: 50 }),
    ).toEqual({
      model: 'claude-x',
      max_tokens: 50,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    });
  });
});

describe('the anthropic provider through @anthropic-ai/sdk', () => {
  let provider: SimProvider | undefined;
  afterEach(async () => {
    await provider?.close();
    provider = undefined;
  });

  const env = (sim: SimProvider) => ({
    ANTHROPIC_API_KEY: KEY,
    ANTHROPIC_BASE_URL: sim.anthropicUrl,
  });

  test('system messages go to `system`; max_tokens defaults to 4096; text and usage come back', async () => {
    const sim = await recording();
    provider = sim.provider;
    const model = createModel(MODEL, {}, env(provider));
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'ANSWER: Paris' },
    ];
    const output = await model.generate(messages);
    expect(output).toEqual({
      completion: 'Paris',
      message: { role: 'assistant', content: 'Paris' },
      usage: { input_tokens: 6, output_tokens: 2, total_tokens: 8 },
      stop_reason: 'stop',
    });
    // The simulator refuses a system role in `messages`: the system prompt came as `system`.
    expect(sim.seen[0].messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'ANSWER: Paris' },
    ]);
    expect(sim.seen[0].max_tokens).toBe(4096);

    const cut = await model.generate([{ role: 'user', content: `ANSWER: ${'long '.repeat(40)}` }], {
      config: { max_tokens: 5 },
    });
    expect(sim.seen[1].max_tokens).toBe(5);
    expect(cut.stop_reason).toBe('max_tokens');
    expect(cut.completion).toHaveLength(20);
  });

  test('tool calls round-trip as tool_use / tool_result blocks', async () => {
    const sim = await recording();
    provider = sim.provider;
    const model = createModel(MODEL, {}, env(provider));
    const history: ChatMessage[] = [
      { role: 'system', content: 'You are an agent.' },
      { role: 'user', content: 'RUN: echo hi' },
    ];
    const first = await model.generate(history, { tools: [BASH, SUBMIT] });
    expect(first.stop_reason).toBe('tool_calls');
    expect(first.message).toEqual({
      role: 'assistant',
      content: '',
      tool_calls: [{ id: 'toolu_sim_1_0', name: 'bash', arguments: '{"cmd":"echo hi"}' }],
    });
    // The tools arrived with their schemas as input_schema.
    expect(sim.seen[0].tools?.map((t) => [t.function.name, t.function.parameters])).toEqual([
      ['bash', BASH.parameters],
      ['submit', SUBMIT.parameters],
    ]);

    // The result goes back; the simulator checks that it answers the tool_use in the turn before.
    history.push(first.message, { role: 'tool', tool_call_id: 'toolu_sim_1_0', content: 'hi\n' });
    const second = await model.generate(history, { tools: [BASH, SUBMIT] });
    expect(second.message.tool_calls).toEqual([
      { id: 'toolu_sim_2_0', name: 'submit', arguments: '{"answer":"hi"}' },
    ]);
    expect(sim.seen[1].messages.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          {
            id: 'toolu_sim_1_0',
            type: 'function',
            function: { name: 'bash', arguments: '{"cmd":"echo hi"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_sim_1_0', content: 'hi\n' },
    ]);
  });

  test("hands every answer's anthropic-ratelimit-* headers to pacing, refusals included", async () => {
    provider = await startSimProvider({ apiKey: KEY, rpm: 2, tpm: 100_000 });
    const readings: ReturnType<typeof readRateLimitHeaders>[] = [];
    const model = createModel(MODEL, {}, env(provider), {
      onResponseHeaders: (get) => readings.push(readRateLimitHeaders(get, Date.now())),
    });
    await model.generate([{ role: 'user', content: 'hi' }]);
    await model.generate([{ role: 'user', content: 'hi' }]);
    await expect(model.generate([{ role: 'user', content: 'hi' }])).rejects.toMatchObject({
      status: 429,
    });
    expect(readings.map((r) => r.requests?.remaining)).toEqual([1, 0, 0]);
    expect(readings.every((r) => r.requests?.limit === 2 && r.tokens?.limit === 100_000)).toBe(
      true,
    );
    // The reset is an RFC 3339 time within the minute the bucket takes to refill.
    const wait = readings[2].requests!.resetAt - Date.now();
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(61_000);
  });

  test.each<[string, Parameters<typeof startSimProvider>[0], object]>([
    [
      '429 rate_limit_error: a rate limit, honouring retry-after',
      { rpm: 1 },
      { kind: 'rateLimit' },
    ],
    ['529 overloaded_error: pushback, like a 429', { overloadRate: 1 }, { kind: 'rateLimit' }],
    ['500 api_error: transient', { errorRate: 1 }, { kind: 'transient' }],
  ])('%s', async (_, options, decision) => {
    provider = await startSimProvider({ apiKey: KEY, ...options });
    const model = createModel(MODEL, {}, env(provider));
    if (options?.rpm) await model.generate([{ role: 'user', content: 'hi' }]);
    const err = await model.generate([{ role: 'user', content: 'hi' }]).catch((e: unknown) => e);
    const classified = classifyError(err, Date.now());
    expect(classified).toMatchObject(decision);
    if (options?.rpm) {
      expect(classified).toMatchObject({ retryAfterMs: expect.any(Number) });
      expect((classified as { retryAfterMs: number }).retryAfterMs).toBeGreaterThanOrEqual(59_000);
    }
  });

  test('400 invalid_request_error (a prompt too long) is fatal, and says why', async () => {
    const tooLong = anthropicError(
      'invalid_request_error',
      'prompt is too long: 212345 tokens > 200000 maximum',
    );
    provider = (await recording({}, () => ({ status: 400, body: tooLong }))).provider;
    const model = createModel(MODEL, {}, env(provider));
    const err = await model.generate([{ role: 'user', content: 'hi' }]).catch((e: unknown) => e);
    expect(classifyError(err, Date.now())).toEqual({ kind: 'no' });
    expect((err as Error).message).toBe(
      '400 invalid_request_error: prompt is too long: 212345 tokens > 200000 maximum',
    );
  });

  test('a wrong key is fatal; a hung answer times out after timeout_ms as a transient failure', async () => {
    provider = await startSimProvider({ apiKey: KEY, latencyMs: 2_000 });
    const wrongKey = createModel(MODEL, {}, { ...env(provider), ANTHROPIC_API_KEY: 'nope' });
    const refused = await wrongKey.generate([{ role: 'user', content: 'hi' }]).catch((e) => e);
    expect(refused).toMatchObject({ status: 401 });
    expect(classifyError(refused, Date.now())).toEqual({ kind: 'no' });
    expect((refused as Error).message).not.toContain('nope');

    const slow = createModel(MODEL, { timeout_ms: 200 }, env(provider));
    const timedOut = await slow.generate([{ role: 'user', content: 'hi' }]).catch((e) => e);
    expect((timedOut as Error).message).toBe(
      `model ${MODEL}: no answer within 200 ms (model_args.timeout_ms sets the limit)`,
    );
    expect(classifyError(timedOut, Date.now())).toEqual({ kind: 'transient' });
  });

  test('a 200 that is not a Message, or is cut short, says what the endpoint did', async () => {
    const faulty = await startFaultyProvider();
    try {
      const env = { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: faulty.url.replace(/\/v1$/, '') };
      const failure = (fault: string) =>
        createModel(`anthropic/${fault}`, {}, env)
          .generate([{ role: 'user', content: 'hi' }])
          .catch((e: unknown) => e as Error);

      const html = await failure('html');
      expect(html).toMatchObject({ name: 'ModelResponseError' });
      expect(html.message).toMatch(/^model anthropic\/html answered without a message's content: /);
      expect(classifyError(html, Date.now())).toEqual({ kind: 'no' });

      const badJson = await failure('bad-json');
      expect(badJson).toMatchObject({ name: 'ModelResponseError' });
      expect(badJson.message).toMatch(
        /^model anthropic\/bad-json answered with a body that is not valid JSON/,
      );

      const truncated = await failure('truncated');
      expect(truncated.message).toMatch(
        /^model anthropic\/truncated: the connection closed before the whole answer arrived/,
      );
      expect(classifyError(truncated, Date.now())).toEqual({ kind: 'transient' });
      expect(faulty.requests('html') + faulty.requests('bad-json')).toBe(2);
    } finally {
      await faulty.close();
    }
  });
});

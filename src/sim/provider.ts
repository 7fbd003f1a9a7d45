/**
 * A simulated OpenAI-compatible model provider over real HTTP, for tests, demos, benchmarks
 * and dry runs that size a fleet without spending tokens.
 *
 * It speaks the wire protocol the `openai` client speaks: `POST /v1/chat/completions`
 * (non-streaming, with tool calls), `GET /v1/models`, OpenAI-shaped error bodies, `429` with
 * `retry-after`, `retry-after-ms` and `x-ratelimit-*` headers when over a limit (see
 * `limits.ts`), and `usage` in every completion. What it answers is decided by a script (see
 * `script.ts`). `GET /stats` returns {@link SimStats} as JSON.
 *
 * A request goes through, in order: auth (401), body validation (400), rate limits (429),
 * then, holding a concurrency slot, the simulated latency, then a seeded error roll (500) or
 * the script's reply.
 */
import { setMaxListeners } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRateLimiter, type RateLimitHeaders } from './limits';
import { mulberry32 } from '../util/random';
import {
  completionBody,
  defaultScript,
  isFailure,
  openAiError,
  parseRequest,
  promptTokens,
  serverError,
  type CompletionBody,
  type OpenAiErrorBody,
  type SimFailure,
  type SimRequest,
  type SimScript,
} from './script';

export interface SimProviderOptions {
  /** Port on 127.0.0.1. @default 0 (any free port) */
  port?: number;
  /** Requests per minute. @default unlimited */
  rpm?: number;
  /** Tokens per minute (prompt + completion, estimated). @default unlimited */
  tpm?: number;
  /** Requests in progress at once. @default unlimited */
  concurrency?: number;
  /** Time every admitted request takes before it is answered. @default 0 */
  latencyMs?: number;
  /** Extra time per admitted request, uniform in [0, jitterMs], drawn from the seed. @default 0 */
  jitterMs?: number;
  /** Fraction of admitted requests answered 500, drawn from the seed. @default 0 */
  errorRate?: number;
  /** Seed of the error and jitter draws; the same seed gives the same draws in arrival order. @default 1 */
  seed?: number;
  /** When set, the only accepted API key; otherwise any non-empty key is accepted. */
  apiKey?: string;
  /** Decides the replies. @default {@link defaultScript} */
  script?: SimScript;
  /**
   * Send OpenAI's `x-ratelimit-*` headers with every answer, as OpenAI does. False simulates the
   * many compatible servers that send none (a 429's `retry-after` is still sent). @default true
   */
  rateLimitHeaders?: boolean;
  /** Seconds of {@link SimStats.series} kept. @default 3600 */
  seriesSeconds?: number;
}

/** One second of traffic. */
export interface SimStatsPoint {
  /** Seconds since the stats started (server start or last reset). */
  t: number;
  /** Highest number of requests in progress during that second. */
  in_flight: number;
  /** Chat completion requests received during that second. */
  requests: number;
  /** Of those, answered 429. */
  rate_limited: number;
}

/** What the provider has seen, for `GET /stats`. Counts cover chat completion requests only. */
export interface SimStats {
  /** Requests received (answered or still in progress). */
  requests: number;
  /** Answered requests by HTTP status, e.g. `{ "200": 10, "429": 2 }`. */
  by_status: Record<string, number>;
  /** Requests answered 429. */
  rate_limited: number;
  in_flight: number;
  peak_in_flight: number;
  /** Tokens of the requests answered 200. */
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Per-second samples, oldest first, at most `seriesSeconds` of them. */
  series: SimStatsPoint[];
}

export interface SimProvider {
  /** Base URL for an OpenAI client, e.g. `http://127.0.0.1:4000/v1`. */
  url: string;
  port: number;
  stats(): SimStats;
  /** Zeroes the counters and the series; rate-limit buckets and in-flight requests carry on. */
  resetStats(): void;
  /** Stops listening and drops open connections; requests still waiting are abandoned. */
  close(): Promise<void>;
}

/** Starts a simulated provider on 127.0.0.1. */
export async function startSimProvider(options: SimProviderOptions = {}): Promise<SimProvider> {
  const now = () => Date.now();
  const limiter = createRateLimiter(
    { rpm: options.rpm, tpm: options.tpm, concurrency: options.concurrency },
    now,
  );
  const seed = options.seed ?? 1;
  // Separate streams, so how many errors a seed gives does not depend on the jitter setting.
  const errorDraw = mulberry32(seed);
  const jitterDraw = mulberry32(seed ^ 0x5bd1e995);
  const script = options.script ?? defaultScript;
  const recorder = new StatsRecorder(now, options.seriesSeconds ?? 3600);
  const closing = new AbortController();
  // Every waiting request listens for the close; hundreds at once is the point, not a leak.
  setMaxListeners(0, closing.signal);
  let nextId = 0;

  async function chat(req: IncomingMessage, res: ServerResponse): Promise<void> {
    recorder.received();
    const reply = (status: number, body: unknown, headers: RateLimitHeaders = {}) => {
      recorder.answered(status);
      const sent =
        options.rateLimitHeaders === false
          ? Object.fromEntries(
              Object.entries(headers).filter(([name]) => !name.startsWith('x-ratelimit-')),
            )
          : headers;
      send(res, status, body, sent);
    };
    const keyProblem = checkKey(req, options.apiKey);
    if (keyProblem) return reply(401, keyProblem);
    const parsed = parseRequest(await readBody(req));
    if ('error' in parsed) return reply(400, parsed);

    const request = parsed.request;
    const prompt = promptTokens(request);
    const admission = limiter.admit(prompt);
    if (!admission.admitted) {
      return reply(
        429,
        openAiError(
          admission.message,
          admission.kind === 'tokens' ? 'tokens' : 'requests',
          'rate_limit_exceeded',
        ),
        {
          ...admission.headers,
          'retry-after': String(admission.retryAfterSeconds),
          'retry-after-ms': String(admission.retryAfterMs),
        },
      );
    }

    recorder.started();
    try {
      const answered = await answer(request, prompt);
      if (!('completion' in answered)) return reply(answered.status, answered.body);
      const { usage } = answered.completion;
      limiter.charge(usage.completion_tokens);
      recorder.tokens(usage.prompt_tokens, usage.completion_tokens);
      reply(200, answered.completion, limiter.headers());
    } finally {
      admission.release();
      recorder.finished();
    }
  }

  /** What an admitted request gets, after its latency: a seeded 500, or the script's reply. */
  async function answer(
    request: SimRequest,
    prompt: number,
  ): Promise<{ completion: CompletionBody } | SimFailure> {
    // Both draws happen for every admitted request, so a seed gives the same sequence whatever
    // the script does.
    const fails = errorDraw() < (options.errorRate ?? 0);
    const jitterMs = Math.floor(jitterDraw() * ((options.jitterMs ?? 0) + 1));
    const delayMs = (options.latencyMs ?? 0) + jitterMs;
    const [reply] = await Promise.all([
      fails ? undefined : script(request),
      delayMs > 0 ? sleep(delayMs, undefined, { signal: closing.signal }) : undefined,
    ]);
    if (!reply) return { status: 500, body: serverError };
    if (isFailure(reply)) return reply;
    const created = Math.floor(now() / 1000);
    return {
      completion: completionBody(request, reply, {
        serial: ++nextId,
        created,
        promptTokens: prompt,
      }),
    };
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'POST' && path === '/v1/chat/completions') return chat(req, res);
    if (req.method === 'GET' && path === '/v1/models') {
      const keyProblem = checkKey(req, options.apiKey);
      if (keyProblem) return send(res, 401, keyProblem);
      return send(res, 200, {
        object: 'list',
        data: [{ id: 'sim', object: 'model', created: 0, owned_by: 'steward-sim' }],
      });
    }
    if (req.method === 'GET' && path === '/stats') return send(res, 200, recorder.snapshot());
    send(res, 404, openAiError(`Invalid URL (${req.method} ${path})`, 'invalid_request_error'));
  }

  const server = createServer((req, res) => {
    route(req, res).catch((error: unknown) => {
      // Closing, or the client went away mid-request: nobody is left to answer.
      if (closing.signal.aborted || res.destroyed || res.headersSent) return res.destroy();
      // A throwing custom script is the likeliest cause; answer rather than hang the client.
      recorder.answered(500);
      send(res, 500, openAiError(`Simulated provider failed: ${String(error)}`, 'server_error'));
    });
  });
  await listen(server, options.port ?? 0);
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    stats: () => recorder.snapshot(),
    resetStats: () => recorder.reset(),
    close: () =>
      new Promise<void>((resolve, reject) => {
        closing.abort();
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

function listen(server: ReturnType<typeof createServer>, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    // The bench opens hundreds of connections at once; do not let the accept queue refuse them.
    server.listen({ port, host: '127.0.0.1', backlog: 1024 }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function checkKey(req: IncomingMessage, expected: string | undefined): OpenAiErrorBody | undefined {
  const key = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1]?.trim();
  if (!key) {
    return openAiError(
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
      'invalid_request_error',
    );
  }
  if (expected !== undefined && key !== expected) {
    // Unlike OpenAI, do not echo any of the key: it may end up in logs.
    return openAiError('Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key');
  }
  return undefined;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: RateLimitHeaders = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Counters and the per-second series behind {@link SimStats}. */
class StatsRecorder {
  private startedAt = 0;
  private counts = { requests: 0, rateLimited: 0, peak: 0, prompt: 0, completion: 0 };
  private byStatus: Record<string, number> = {};
  private series: SimStatsPoint[] = [];
  private inFlight = 0;

  constructor(
    private readonly now: () => number,
    private readonly seriesSeconds: number,
  ) {
    this.reset();
  }

  /** Zeroes everything but the requests in progress, which are still there. */
  reset(): void {
    this.startedAt = this.now();
    this.counts = { requests: 0, rateLimited: 0, peak: this.inFlight, prompt: 0, completion: 0 };
    this.byStatus = {};
    this.series = [{ t: 0, in_flight: this.inFlight, requests: 0, rate_limited: 0 }];
  }

  received(): void {
    this.counts.requests += 1;
    this.current().requests += 1;
  }

  answered(status: number): void {
    this.byStatus[status] = (this.byStatus[status] ?? 0) + 1;
    if (status === 429) {
      this.counts.rateLimited += 1;
      this.current().rate_limited += 1;
    }
  }

  started(): void {
    this.inFlight += 1;
    this.counts.peak = Math.max(this.counts.peak, this.inFlight);
    const point = this.current();
    point.in_flight = Math.max(point.in_flight, this.inFlight);
  }

  finished(): void {
    this.inFlight -= 1;
  }

  tokens(prompt: number, completion: number): void {
    this.counts.prompt += prompt;
    this.counts.completion += completion;
  }

  snapshot(): SimStats {
    this.current();
    return {
      requests: this.counts.requests,
      by_status: { ...this.byStatus },
      rate_limited: this.counts.rateLimited,
      in_flight: this.inFlight,
      peak_in_flight: this.counts.peak,
      prompt_tokens: this.counts.prompt,
      completion_tokens: this.counts.completion,
      total_tokens: this.counts.prompt + this.counts.completion,
      series: this.series.map((point) => ({ ...point })),
    };
  }

  /** The point of the current second, after adding points for the seconds since the last one. */
  private current(): SimStatsPoint {
    const second = Math.floor((this.now() - this.startedAt) / 1000);
    const last = this.series[this.series.length - 1];
    // Quiet seconds still get a point, so plots show the gaps; only the kept tail is generated.
    for (let t = Math.max(last.t + 1, second - this.seriesSeconds + 1); t <= second; t++) {
      this.series.push({ t, in_flight: this.inFlight, requests: 0, rate_limited: 0 });
    }
    if (this.series.length > this.seriesSeconds) {
      this.series.splice(0, this.series.length - this.seriesSeconds);
    }
    return this.series[this.series.length - 1];
  }
}

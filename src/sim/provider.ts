/**
 * A simulated model provider over real HTTP, for tests, demos, benchmarks and dry runs that size
 * a fleet without spending tokens.
 *
 * It speaks two wire protocols over one account (see `apis.ts`), non-streaming, with tool
 * calls and `usage` in every answer:
 * - OpenAI's, as the `openai` client speaks it: `POST /v1/chat/completions`, `GET /v1/models`,
 *   OpenAI-shaped error bodies, `429` with `retry-after`, `retry-after-ms` and `x-ratelimit-*`;
 * - Anthropic's, as `@anthropic-ai/sdk` speaks it: `POST /v1/messages` (with the key in
 *   `x-api-key` or as a Bearer token, and `anthropic-version`), `{ type: 'error', error: { type, message } }` bodies, `429`
 *   `rate_limit_error` with `retry-after`, `529` `overloaded_error`, and
 *   `anthropic-ratelimit-*` headers (base URL: the server's root, without `/v1`).
 *
 * Both share the limits (`limits.ts`), the script that decides the answers (`script.ts`) and the
 * stats. `GET /stats` returns {@link SimStats} as JSON.
 *
 * A request goes through, in order: auth (401), body validation (400), rate limits (429),
 * then, holding a concurrency slot, the simulated latency, then seeded error and overload rolls
 * (500; 529 on Anthropic's API, 503 on OpenAI's) or the script's reply.
 */
import { setMaxListeners } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { anthropicApi, openAiApi, type Api } from './apis';
import { createRateLimiter, type LimitSnapshot, type RateLimitHeaders } from './limits';
import { mulberry32 } from '../util/random';
import {
  completionBody,
  defaultScript,
  isFailure,
  promptTokens,
  type CompletionBody,
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
  /**
   * Fraction of admitted requests answered "overloaded", drawn from the seed: Anthropic's 529
   * `overloaded_error` (pushback, like a 429), OpenAI's 503 (transient). @default 0
   */
  overloadRate?: number;
  /** Seed of the error and jitter draws; the same seed gives the same draws in arrival order. @default 1 */
  seed?: number;
  /** When set, the only accepted API key; otherwise any non-empty key is accepted. */
  apiKey?: string;
  /** Decides the replies. @default {@link defaultScript} */
  script?: SimScript;
  /**
   * Send the rate-limit headers (`x-ratelimit-*`, `anthropic-ratelimit-*`) with every answer, as
   * both providers do. False simulates the many compatible servers that send none (a 429's
   * `retry-after` is still sent). @default true
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
  /** Model calls received during that second. */
  requests: number;
  /** Of those, answered 429. */
  rate_limited: number;
}

/** What the provider has seen, for `GET /stats`. Counts cover model calls (both APIs) only. */
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
  /** Base URL for an Anthropic client, e.g. `http://127.0.0.1:4000`. */
  anthropicUrl: string;
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
  const overloadDraw = mulberry32(seed ^ 0x27d4eb2f);
  const script = options.script ?? defaultScript;
  const recorder = new StatsRecorder(now, options.seriesSeconds ?? 3600);
  const closing = new AbortController();
  // Every waiting request listens for the close; hundreds at once is the point, not a leak.
  setMaxListeners(0, closing.signal);
  let nextId = 0;

  /**
   * One request of either API: the same admission, limits, latency, draws, script and stats;
   * only the wire (auth, bodies, header spellings) is the API's.
   */
  async function serve(api: Api, req: IncomingMessage, res: ServerResponse): Promise<void> {
    recorder.received();
    const reply = (status: number, body: unknown, headers: RateLimitHeaders = {}) => {
      recorder.answered(status);
      send(res, status, body, { ...api.extraHeaders(), ...headers });
    };
    const limitHeaders = (snapshot: LimitSnapshot): RateLimitHeaders =>
      options.rateLimitHeaders === false ? {} : api.limitHeaders(snapshot, now());
    const refused = api.refuse(req, options.apiKey);
    if (refused) return reply(refused.status, refused.body);
    const parsed = api.parse(await readBody(req));
    if (!('request' in parsed)) return reply(400, parsed);

    const request = parsed.request;
    const prompt = promptTokens(request);
    const admission = limiter.admit(prompt);
    if (!admission.admitted) {
      return reply(429, api.rateLimited(admission), {
        ...limitHeaders(admission.snapshot),
        ...api.retryAfter(admission),
      });
    }

    recorder.started();
    try {
      const answered = await answer(api, request, prompt);
      if (!('completion' in answered)) return reply(answered.status, answered.body);
      const { completion, serial } = answered;
      limiter.charge(completion.usage.completion_tokens);
      recorder.tokens(completion.usage.prompt_tokens, completion.usage.completion_tokens);
      reply(200, api.body(completion, serial), limitHeaders(limiter.snapshot()));
    } finally {
      admission.release();
      recorder.finished();
    }
  }

  /**
   * What an admitted request gets, after its latency: a seeded 500 or overload, or the script's
   * reply.
   */
  async function answer(
    api: Api,
    request: SimRequest,
    prompt: number,
  ): Promise<{ completion: CompletionBody; serial: number } | SimFailure> {
    // Every draw happens for every admitted request, so a seed gives the same sequence whatever
    // the script does.
    const fails = errorDraw() < (options.errorRate ?? 0);
    const jitterMs = Math.floor(jitterDraw() * ((options.jitterMs ?? 0) + 1));
    const overloaded = overloadDraw() < (options.overloadRate ?? 0);
    const delayMs = (options.latencyMs ?? 0) + jitterMs;
    const [reply] = await Promise.all([
      fails || overloaded ? undefined : script(request),
      delayMs > 0 ? sleep(delayMs, undefined, { signal: closing.signal }) : undefined,
    ]);
    if (fails) return api.serverError;
    if (overloaded) return api.overloaded;
    if (!reply) return api.serverError;
    if (isFailure(reply)) return reply;
    const created = Math.floor(now() / 1000);
    const serial = ++nextId;
    return {
      completion: completionBody(request, reply, { serial, created, promptTokens: prompt }),
      serial,
    };
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = pathOf(req);
    if (req.method === 'POST' && path === '/v1/chat/completions') return serve(openAiApi, req, res);
    if (req.method === 'POST' && path === '/v1/messages') return serve(anthropicApi, req, res);
    if (req.method === 'GET' && path === '/v1/models') {
      const refused = openAiApi.refuse(req, options.apiKey);
      if (refused) return send(res, refused.status, refused.body);
      return send(res, 200, {
        object: 'list',
        data: [{ id: 'sim', object: 'model', created: 0, owned_by: 'steward-sim' }],
      });
    }
    if (req.method === 'GET' && path === '/stats') return send(res, 200, recorder.snapshot());
    const api = path.startsWith('/v1/messages') ? anthropicApi : openAiApi;
    send(res, 404, api.notFound(`${req.method} ${path}`));
  }

  const server = createServer((req, res) => {
    route(req, res).catch((error: unknown) => {
      // Closing, or the client went away mid-request: nobody is left to answer.
      if (closing.signal.aborted || res.destroyed || res.headersSent) return res.destroy();
      // A throwing custom script is the likeliest cause; answer rather than hang the client.
      recorder.answered(500);
      const api = pathOf(req) === '/v1/messages' ? anthropicApi : openAiApi;
      send(res, 500, api.internalError(`Simulated provider failed: ${String(error)}`));
    });
  });
  await listen(server, options.port ?? 0);
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    anthropicUrl: `http://127.0.0.1:${port}`,
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

function pathOf(req: IncomingMessage): string {
  return (req.url ?? '/').split('?')[0];
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

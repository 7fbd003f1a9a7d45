/**
 * The two wire protocols the simulated provider speaks over one account (one limiter, one
 * script, one set of stats): OpenAI's chat completions and Anthropic's Messages. Each says how
 * a caller authenticates, how a request is read, and how refusals, errors, answers and the
 * rate-limit headers are written, as the real API writes them.
 */
import type { IncomingMessage } from 'node:http';
import {
  anthropicHeaders,
  openAiHeaders,
  type Admission,
  type LimitSnapshot,
  type RateLimitHeaders,
} from './limits';
import { anthropicError, messageBody, parseMessagesRequest } from './messages';
import {
  openAiError,
  parseRequest,
  serverError,
  type CompletionBody,
  type SimFailure,
  type SimRequest,
} from './script';

type Refusal = Extract<Admission, { admitted: false }>;

export interface Api {
  /** A 401 (or a 400 for a missing required header) when the caller may not call. */
  refuse(req: IncomingMessage, expectedKey: string | undefined): SimFailure | undefined;
  /** The request, or the body of a 400. */
  parse(text: string): { request: SimRequest } | object;
  /** The body of a 429. */
  rateLimited(refusal: Refusal): unknown;
  /** The headers a 429 says when to come back in. */
  retryAfter(refusal: Refusal): RateLimitHeaders;
  /** The rate-limit headers of an answer. */
  limitHeaders(snapshot: LimitSnapshot, now: number): RateLimitHeaders;
  /** Headers every answer carries. */
  extraHeaders(): RateLimitHeaders;
  /** The 200 body for a completion. */
  body(completion: CompletionBody, serial: number): unknown;
  /** A seeded server error (`errorRate`). */
  serverError: SimFailure;
  /** A seeded overload (`overloadRate`): what the provider says when it has no capacity. */
  overloaded: SimFailure;
  /** A failure of the simulator itself (a throwing custom script). */
  internalError(message: string): unknown;
  /** The body of a 404 for `what` (method and path). */
  notFound(what: string): unknown;
}

export const openAiApi: Api = {
  refuse(req, expectedKey) {
    const key = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1]?.trim();
    if (!key) {
      return unauthorised(
        openAiError(
          "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
          'invalid_request_error',
        ),
      );
    }
    if (expectedKey !== undefined && key !== expectedKey) {
      // Unlike OpenAI, do not echo any of the key: it may end up in logs.
      return unauthorised(
        openAiError('Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key'),
      );
    }
    return undefined;
  },
  parse: parseRequest,
  rateLimited: (refusal) =>
    openAiError(
      refusal.message,
      refusal.kind === 'tokens' ? 'tokens' : 'requests',
      'rate_limit_exceeded',
    ),
  retryAfter: (refusal) => ({
    'retry-after': String(refusal.retryAfterSeconds),
    'retry-after-ms': String(refusal.retryAfterMs),
  }),
  limitHeaders: (snapshot) => openAiHeaders(snapshot),
  extraHeaders: () => ({}),
  body: (completion) => completion,
  serverError: { status: 500, body: serverError },
  // OpenAI's overload is a 503 (transient, not a rate limit).
  overloaded: {
    status: 503,
    body: openAiError(
      'The engine is currently overloaded, please try again later.',
      'server_error',
    ),
  },
  internalError: (message) => openAiError(message, 'server_error'),
  notFound: (what) => openAiError(`Invalid URL (${what})`, 'invalid_request_error'),
};

/**
 * The Messages API versions the simulator speaks: the first, and the one `@anthropic-ai/sdk` 1.x
 * sends. A request without `anthropic-version` is refused, as the real API refuses it.
 */
const ANTHROPIC_VERSIONS = ['2023-06-01', '2026-10-21'];

export const anthropicApi: Api = {
  refuse(req, expectedKey) {
    // `x-api-key`, or (as SDK 1.x sends an API key under version 2026-10-21) a Bearer token.
    const key =
      header(req, 'x-api-key')?.trim() ||
      /^Bearer\s+(.+)$/i.exec(header(req, 'authorization') ?? '')?.[1]?.trim();
    if (!key) {
      return unauthorised(anthropicError('authentication_error', 'x-api-key header is required'));
    }
    if (expectedKey !== undefined && key !== expectedKey) {
      return unauthorised(anthropicError('authentication_error', 'invalid x-api-key'));
    }
    const version = header(req, 'anthropic-version');
    if (!version) {
      return {
        status: 400,
        body: anthropicError('invalid_request_error', 'anthropic-version: header is required'),
      };
    }
    if (!ANTHROPIC_VERSIONS.includes(version)) {
      return {
        status: 400,
        body: anthropicError(
          'invalid_request_error',
          `anthropic-version: unknown version "${version}" (the simulator speaks ${ANTHROPIC_VERSIONS.join(', ')})`,
        ),
      };
    }
    return undefined;
  },
  parse: parseMessagesRequest,
  rateLimited: (refusal) =>
    anthropicError(
      'rate_limit_error',
      `This request would exceed your organization's rate limit. ${refusal.message}`,
    ),
  // Anthropic sends whole seconds only.
  retryAfter: (refusal) => ({ 'retry-after': String(refusal.retryAfterSeconds) }),
  limitHeaders: (snapshot, now) => anthropicHeaders(snapshot, now),
  extraHeaders: () => ({ 'request-id': `req_sim_${(requestSerial += 1)}` }),
  body: (completion, serial) => messageBody(completion, serial),
  serverError: { status: 500, body: anthropicError('api_error', 'Internal server error') },
  overloaded: { status: 529, body: anthropicError('overloaded_error', 'Overloaded') },
  internalError: (message) => anthropicError('api_error', message),
  notFound: (what) => anthropicError('not_found_error', `Not found: ${what}`),
};

let requestSerial = 0;

function unauthorised(body: unknown): SimFailure {
  return { status: 401, body };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

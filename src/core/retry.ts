/**
 * Provider errors become a value (SPEC §2 "Retries"): {@link RetryDecision} says whether a failed
 * model call is retried, and whether the failure is a rate limit (which cuts the adaptive
 * controller and counts as ramp pushback) or transient (retried, never cuts).
 *
 * Errors are read structurally, never with `instanceof`: the openai and anthropic SDKs' errors
 * carry a numeric `status`, `headers` (a `Headers` or a plain record) and the body's
 * `error`/`code`/`type`; SDK errors all have `name === 'Error'`, so their class is read from the
 * constructor's name.
 */

export type RetryDecision =
  | { kind: 'no' }
  | { kind: 'transient'; retryAfterMs?: number }
  | { kind: 'rateLimit'; retryAfterMs?: number };

/** Body codes and types that mean the account is out of money, not out of rate: never retried. */
const QUOTA_EXHAUSTED = new Set(['insufficient_quota', 'billing_hard_limit_reached']);
/** Body codes, types and statuses that mean "slow down" whatever the HTTP status says. */
const RATE_LIMITED = new Set([
  'rate_limit_exceeded',
  'rate_limit_error',
  'overloaded_error',
  'RESOURCE_EXHAUSTED',
]);
/** Socket and DNS failures from Node and undici: the request may never have reached the server. */
const CONNECTION_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);
const CONNECTION_CLASSES = new Set([
  'APIConnectionError',
  'APIConnectionTimeoutError',
  'TimeoutError',
  'FetchError',
]);
/** Our own cancellation (a sample cancelled or timed out): retrying would defeat it. */
const ABORT_CLASSES = new Set(['AbortError', 'APIUserAbortError']);

/**
 * Classifies a failed model call.
 *
 * - our own abort (`AbortError`, the SDK's `APIUserAbortError`): no;
 * - quota exhausted (`insufficient_quota`), whatever the status: no;
 * - a server's `x-should-retry: false`: no (`true` makes any status transient);
 * - 429, 529, and rate-limit or overload errors in the body (also mid-stream, without a status):
 *   rate limit;
 * - 408, 409 (a lock timeout; both official SDKs retry it), 5xx, timeouts, connection resets:
 *   transient;
 * - any other 4xx, and anything unrecognised: no.
 *
 * @param now epoch milliseconds, to turn an HTTP-date `retry-after` into a wait.
 */
export function classifyError(err: unknown, now: number): RetryDecision {
  if (!isObject(err)) return { kind: 'no' };
  if (errorClasses(err).some((name) => ABORT_CLASSES.has(name))) return { kind: 'no' };

  const labels = bodyLabels(err);
  if (labels.some((label) => QUOTA_EXHAUSTED.has(label))) return { kind: 'no' };

  const status = typeof err.status === 'number' ? err.status : undefined;
  const headers = err.headers;
  const shouldRetry = headerValue(headers, 'x-should-retry');
  if (shouldRetry === 'false') return { kind: 'no' };

  const retryAfterMs = parseRetryAfter(headers, now);
  const hint = retryAfterMs === undefined ? {} : { retryAfterMs };
  if (status === 429 || status === 529 || labels.some((label) => RATE_LIMITED.has(label))) {
    return { kind: 'rateLimit', ...hint };
  }
  if (status !== undefined) {
    const transient = status === 408 || status === 409 || status >= 500 || shouldRetry === 'true';
    return transient ? { kind: 'transient', ...hint } : { kind: 'no' };
  }
  return isConnectionFailure(err) ? { kind: 'transient' } : { kind: 'no' };
}

/**
 * How long the server asked us to wait, in milliseconds, from (first match wins)
 * `retry-after-ms`, `retry-after` (seconds or an HTTP date), then OpenAI's
 * `x-ratelimit-reset-requests` / `x-ratelimit-reset-tokens` (Go-style durations such as `1s`,
 * `6m0s`, `20ms`). Of the two reset headers, the one whose `x-ratelimit-remaining-*` is 0 is the
 * limit we hit; when that is unknown, the sooner reset (a wrong guess costs one more 429 and the
 * backoff still grows; the later one could idle a call for minutes).
 *
 * @returns undefined when there is no usable hint.
 */
export function parseRetryAfter(headers: unknown, now: number): number | undefined {
  const retryAfterMs = Number(headerValue(headers, 'retry-after-ms') ?? Number.NaN);
  if (Number.isFinite(retryAfterMs) && retryAfterMs >= 0) return retryAfterMs;

  const retryAfter = headerValue(headers, 'retry-after')?.trim();
  if (retryAfter) {
    const seconds = Number(retryAfter);
    if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
    const date = Date.parse(retryAfter);
    if (Number.isFinite(date)) return Math.max(0, date - now);
  }

  const resets = (['requests', 'tokens'] as const).map((limit) => ({
    exhausted: headerValue(headers, `x-ratelimit-remaining-${limit}`)?.trim() === '0',
    wait: parseDuration(headerValue(headers, `x-ratelimit-reset-${limit}`)),
  }));
  const known = resets.filter((reset) => reset.wait !== undefined);
  const exhausted = known.filter((reset) => reset.exhausted);
  const waits = (exhausted.length > 0 ? exhausted : known).map((reset) => reset.wait as number);
  if (waits.length === 0) return undefined;
  return exhausted.length > 0 ? Math.max(...waits) : Math.min(...waits);
}

/**
 * Parses a Go-style duration (`1s`, `6m0s`, `1h2m3.5s`, `20ms`) into milliseconds.
 *
 * @returns undefined unless the whole string is a duration.
 */
export function parseDuration(text: string | undefined): number | undefined {
  const trimmed = text?.trim();
  if (!trimmed || !/^(\d+(\.\d+)?(ms|h|m|s))+$/.test(trimmed)) return undefined;
  const unitMs: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };
  let total = 0;
  for (const [, amount, , unit] of trimmed.matchAll(/(\d+(\.\d+)?)(ms|h|m|s)/g)) {
    total += Number(amount) * unitMs[unit];
  }
  return total;
}

/** Reads a header from a `Headers` (case-insensitive by nature) or a plain record (any case). */
function headerValue(headers: unknown, name: string): string | undefined {
  if (!isObject(headers)) return undefined;
  if (typeof headers.get === 'function') {
    const value: unknown = (headers as { get(key: string): unknown }).get(name);
    return typeof value === 'string' ? value : undefined;
  }
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    if (typeof value === 'string') return value;
    if (Array.isArray(value) && typeof value[0] === 'string') return value[0];
  }
  return undefined;
}

/**
 * The error's codes and types, wherever the SDKs put them: the openai SDK copies the body's
 * `code` and `type` onto the error and keeps the body in `error`; the anthropic SDK keeps the
 * whole body (`{ type: 'error', error: { type } }`) in `error`; Google puts a `status` in it.
 */
function bodyLabels(err: Record<string, unknown>): string[] {
  const body = isObject(err.error) ? err.error : undefined;
  const inner = body && isObject(body.error) ? body.error : undefined;
  const candidates = [err.code, err.type, body?.code, body?.type, body?.status, inner?.type];
  candidates.push(inner?.code, inner?.status);
  return candidates.filter((value): value is string => typeof value === 'string');
}

/** A socket, DNS or timeout failure, here or in the `cause` chain (fetch wraps the real one). */
function isConnectionFailure(err: Record<string, unknown>): boolean {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && isObject(current); depth += 1) {
    if (typeof current.code === 'string' && CONNECTION_CODES.has(current.code)) return true;
    if (errorClasses(current).some((name) => CONNECTION_CLASSES.has(name))) return true;
    current = current.cause;
  }
  return false;
}

/** The error's `name` and its constructor's name (the SDKs leave `name` as plain 'Error'). */
function errorClasses(err: Record<string, unknown>): string[] {
  const names = [err.name, (err.constructor as { name?: unknown } | undefined)?.name];
  return names.filter((name): name is string => typeof name === 'string');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/**
 * What the HTTP providers (`openai.ts`, `anthropic.ts`) share: their answers' headers reported to
 * the account, and failures that say what the endpoint did. Both official SDKs have the same
 * error classes (by name) and the same `withResponse()`, so one reading serves both.
 */
/** What a model reports as it answers, to whoever governs its calls. */
export interface ModelHooks {
  /**
   * Every HTTP answer's headers (success or error), by lower-case name, and how long ago its
   * request was sent (milliseconds).
   */
  onResponseHeaders?(get: (name: string) => string | null | undefined, sentMsAgo: number): void;
}

/**
 * A 2xx answer that is not a completion (no choices, an HTML page from a proxy, ...).
 * Match on `name`, not `instanceof`.
 */
/** How long a model call may take when its task's `model_args` set no `timeout_ms`. */
export const DEFAULT_TIMEOUT_MS = 10 * 60 * 1000;

export class ModelResponseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelResponseError';
  }
}

/**
 * Hands an answer's headers (a `Headers`, on a response or an SDK error) to the hooks, with the
 * time its request was sent (`performance.now()`).
 */
export function reportHeaders(hooks: ModelHooks, headers: unknown, sentAt: number): void {
  if (!hooks.onResponseHeaders || typeof headers !== 'object' || headers === null) return;
  const get = (headers as { get?: unknown }).get;
  if (typeof get !== 'function') return;
  hooks.onResponseHeaders(
    (name) => (headers as Headers).get(name),
    Math.max(0, performance.now() - sentAt),
  );
}

/**
 * The SDKs' errors for a request that got no usable answer say little ("Request timed out.",
 * "terminated", "Unexpected end of JSON input"). These say what the endpoint did, and keep what
 * the retry policy reads: a timeout stays a `TimeoutError`, a cut connection keeps its socket
 * error as `cause`, and a body that is not JSON is a {@link ModelResponseError} (not retried).
 * Anything else (HTTP errors, our own aborts) passes unchanged.
 */
export function explainFailure(name: string, err: unknown, timeoutMs: number): unknown {
  // By name, not instanceof: errors from another realm (fetch's, under test runners) are not ours.
  const { name: errorName, message } = (err ?? {}) as Partial<Error>;
  const className = (err as object | null)?.constructor?.name;
  if (className === 'APIConnectionTimeoutError') {
    const timeout = new Error(
      `model ${name}: no answer within ${timeoutMs} ms (model_args.timeout_ms sets the limit)`,
      { cause: err },
    );
    timeout.name = 'TimeoutError';
    return timeout;
  }
  if (errorName === 'SyntaxError') {
    return new ModelResponseError(
      `model ${name} answered with a body that is not valid JSON (${message})`,
    );
  }
  // undici's TypeError("terminated") when the connection closes mid-body.
  if (errorName === 'TypeError' && message === 'terminated') {
    const reason = ((err as Error).cause as Error | undefined)?.message;
    return new Error(
      `model ${name}: the connection closed before the whole answer arrived${reason ? ` (${reason})` : ''}`,
      { cause: err },
    );
  }
  return err;
}

/** A body, shortened for a message. */
export function describeBody(body: unknown): string {
  const text = typeof body === 'string' ? body : (JSON.stringify(body) ?? String(body));
  return text.length > 200 ? `${text.slice(0, 197)}...` : text;
}

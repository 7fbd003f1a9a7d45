/**
 * The errors Steward expects. Anything else that reaches the CLI is a bug and is reported as one.
 *
 * Errors that cross the workflow boundary travel as `ApplicationFailure`s whose `type` is one of
 * {@link ErrorType}; match on that string, never on `instanceof` (VM realms and Jest break it).
 */

export const ErrorType = {
  /** A definition, dataset or setting is invalid. Not retryable. */
  config: 'StewardConfigError',
  /** The model provider refused the request for good (bad request, quota exhausted, auth). */
  modelFatal: 'StewardModelFatalError',
  /** Retries against the model provider ran out. */
  modelRetriesExhausted: 'StewardModelRetriesExhausted',
  /** The sample's own code (solver, scorer) threw. */
  sample: 'StewardSampleError',
  /** Docker refused a network: the host is out of address pools. A capacity limit, not a model error. */
  networkPoolExhausted: 'StewardNetworkPoolExhausted',
  /** A workflow input (start input, signal, update) that does not parse: refused, not retried. */
  badInput: 'StewardBadInput',
  /** Results could not be written (permissions, full disk). */
  logWrite: 'StewardLogWriteError',
  /** The definition's snapshot in the log dir is missing or no longer matches its hash. */
  snapshot: 'StewardSnapshotError',
  /** The sample made no progress for `stuck_after`, twice (each time on a fresh sandbox). */
  stuck: 'StewardSampleStuck',
  /** The sample was cancelled (its task or eval set was, or it was by hand): run again on relaunch. */
  cancelled: 'StewardCancelled',
  /** A webhook delivery failed (README "Notifications"): retried, then logged and dropped. */
  notifyFailed: 'StewardNotifyFailed',
  /**
   * An activation carried events no workflow task had started (src/workflows/sequenced-only.ts):
   * refused, so the worker drops the run and replays it at its next workflow task.
   */
  unsequencedEvents: 'StewardUnsequencedEvents',
} as const;
export type ErrorType = (typeof ErrorType)[keyof typeof ErrorType];

/** Exit codes, one place. */
export const ExitCode = {
  ok: 0,
  /** The run finished but some samples did not complete. */
  samplesFailed: 1,
  /** Bad input: definition, dataset, flags, settings. */
  usage: 2,
  /** The environment is not usable: Temporal unreachable, Docker down, log dir unwritable. */
  environment: 3,
  /** The run cannot make progress: a workflow task of the eval set keeps failing. */
  stuck: 4,
  /** A bug in Steward. */
  internal: 70,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** An expected failure with a message for the user and the exit code the CLI should use. */
export class StewardError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode = ExitCode.usage,
  ) {
    super(message);
    this.name = 'StewardError';
  }
}

/** One problem found while validating input: where, what, and the offending value. */
export interface ConfigIssue {
  /** File the problem is in, if any. */
  file?: string;
  /** 1-based line, for line-oriented files (JSONL, CSV). */
  line?: number;
  /** Dotted path inside the document, e.g. `tasks.0.epochs`. */
  path?: string;
  message: string;
  value?: unknown;
}

/** Formats an issue as `file:line: path: message (value)`, leaving out the parts it lacks. */
export function formatIssue(issue: ConfigIssue): string {
  const where = [issue.file, issue.line].filter((part) => part !== undefined).join(':');
  const head = [where, issue.path].filter((part) => part).join(': ');
  const value = issue.value === undefined ? '' : ` (${describeValue(issue.value)})`;
  return `${head ? `${head}: ` : ''}${issue.message}${value}`;
}

function describeValue(value: unknown): string {
  // JSON has no Infinity or NaN: it would print them as null.
  const text =
    typeof value === 'string'
      ? JSON.stringify(value)
      : typeof value === 'number'
        ? String(value)
        : safeJson(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Invalid input, with every problem found (not only the first). */
export class ConfigError extends StewardError {
  constructor(readonly issues: ConfigIssue[]) {
    super(issues.map(formatIssue).join('\n'), ExitCode.usage);
    this.name = 'ConfigError';
  }
}

/** gRPC status codes of the failures a command meets in the field. */
const GRPC_UNAVAILABLE = 14;
const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_NOT_FOUND = 5;
const GRPC_PERMISSION_DENIED = 7;
const GRPC_UNAUTHENTICATED = 16;

/** The gRPC status code in an error or one of its causes (the client wraps them), if any. */
function grpcCode(err: unknown): number | undefined {
  // Matched by shape: the client's error classes may come from another copy of the SDK.
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) {
    const { code, details, metadata } = e as Error & {
      code?: unknown;
      details?: unknown;
      metadata?: unknown;
    };
    if (typeof code === 'number' && details !== undefined && metadata !== undefined) return code;
  }
  return undefined;
}

/** Whether `err` says Temporal could not be reached at all (the server is down or gone). */
export function isTemporalUnavailable(err: unknown): boolean {
  return grpcCode(err) === GRPC_UNAVAILABLE;
}

/**
 * The expected failure `err` is, when a command did not catch it itself: Temporal that went away
 * or did not answer in time mid-command, a namespace that does not exist, credentials Temporal
 * refuses, a workflow that another command started or closed meanwhile. Undefined for anything
 * else (a bug).
 */
export function expectedFailure(err: unknown): StewardError | undefined {
  const name = (err as Error | undefined)?.name;
  if (name === 'WorkflowExecutionAlreadyStartedError')
    return new StewardError(
      'another `steward launch` started this eval set at the same moment: launch again to re-attach to it',
      ExitCode.environment,
    );
  if (name === 'NamespaceNotFoundError')
    return new StewardError(
      `Temporal has no such namespace (${(err as Error).message}): check TEMPORAL_NAMESPACE`,
      ExitCode.environment,
    );
  if (name === 'WorkflowNotFoundError')
    return new StewardError(
      `the eval set's workflow is gone (${(err as Error).message}): \`steward status\` lists the running ones`,
      ExitCode.usage,
    );
  const code = grpcCode(err);
  let detail: unknown = err;
  while (detail instanceof Error && detail.cause instanceof Error) detail = detail.cause;
  const details = (detail as { details?: unknown }).details;
  const reason = typeof details === 'string' && details ? ` (${details})` : '';
  switch (code) {
    case GRPC_UNAVAILABLE:
    case GRPC_DEADLINE_EXCEEDED:
      return new StewardError(
        `Temporal ${code === GRPC_UNAVAILABLE ? 'stopped answering' : 'did not answer in time'}${reason}: ` +
          'check that it runs (`steward server`, or the cluster TEMPORAL_ADDRESS names) and retry; ' +
          'a running eval set loses nothing meanwhile',
        ExitCode.environment,
      );
    case GRPC_NOT_FOUND:
      if (!/namespace/i.test(String(details))) return undefined;
      return new StewardError(
        `Temporal has no such namespace${reason}: check TEMPORAL_NAMESPACE`,
        ExitCode.environment,
      );
    case GRPC_PERMISSION_DENIED:
    case GRPC_UNAUTHENTICATED:
      return new StewardError(
        `Temporal refused the request${reason}: check TEMPORAL_API_KEY and TEMPORAL_NAMESPACE`,
        ExitCode.environment,
      );
  }
  return undefined;
}

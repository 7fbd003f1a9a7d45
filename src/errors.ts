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
  /** Results could not be written (permissions, full disk). */
  logWrite: 'StewardLogWriteError',
  /** The definition's snapshot in the log dir is missing or no longer matches its hash. */
  snapshot: 'StewardSnapshotError',
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

/**
 * What a smoke run (`steward launch --smoke`) found, per task, in words for the user: pure, from
 * the smoke run's records (src/logs/store.ts) and whether its time cap was reached.
 */
import { ErrorType } from '../errors';

/** Why a task's smoke run failed, as the user fixes it. */
export const SMOKE_FAILURES = {
  credentials: 'credentials refused (401/403)',
  unknown_model: 'unknown model (404)',
  context_too_long: 'context too long',
  sandbox_image: 'sandbox image missing',
  scorer: 'scorer error',
  solver: 'solver error',
  time_cap: 'time cap reached',
  other: 'other error',
} as const;
export type SmokeFailure = keyof typeof SMOKE_FAILURES;

/** The fields of a sample's error record the classification reads. */
export interface SmokeError {
  error: string;
  error_type?: string;
  failed_in?: 'solver' | 'scorer';
}

/** A provider's refusal, as the model layer words it: `...refused the request: 401 ...`. */
const REFUSAL_STATUS = /refused the request: (\d{3})\b/;
/** A status at the start of the SDK's message, for messages worded otherwise. */
const LEADING_STATUS = /^(?:model \S+: )?(?:[^:]*: )?(\d{3}) /;
const CONTEXT_TOO_LONG =
  /context[_ ]length|maximum context|context window|prompt is too long|too many (input )?tokens/i;
const MODEL_NOT_FOUND = /model_not_found|not_found_error|model .*(does not exist|not found)/i;
const IMAGE_MISSING = /sandbox image \S+ is not on the Docker daemon and could not be pulled/;

/** Classifies one failed sample of a smoke run. */
export function classifySmokeError(record: SmokeError): SmokeFailure {
  const text = record.error;
  if (record.error_type === ErrorType.modelFatal) {
    const status = Number(REFUSAL_STATUS.exec(text)?.[1] ?? LEADING_STATUS.exec(text)?.[1]);
    if (status === 401 || status === 403) return 'credentials';
    if (status === 404 || MODEL_NOT_FOUND.test(text)) return 'unknown_model';
    if (
      ((status === 400 || status === 413) && CONTEXT_TOO_LONG.test(text)) ||
      /context_length_exceeded/.test(text)
    ) {
      return 'context_too_long';
    }
    return 'other';
  }
  if (IMAGE_MISSING.test(text)) return 'sandbox_image';
  if (record.failed_in === 'scorer') return 'scorer';
  if (record.failed_in === 'solver') return 'solver';
  return 'other';
}

/** What the smoke run left for one task. */
export interface SmokeTaskOutcome {
  task: string;
  /** Samples the smoke run gave the task. */
  samples: number;
  completed: number;
  /** The task's sample errors, first first. */
  errors: SmokeError[];
}

export type SmokeVerdict =
  | { task: string; passed: true; completed: number; samples: number }
  | {
      task: string;
      passed: false;
      failure: SmokeFailure;
      /** The first sample's error text, or what stopped the task without one. */
      detail: string;
      completed: number;
      samples: number;
    };

/** Each task's verdict: passed when every sample completed. */
export function smokeVerdicts(
  tasks: readonly SmokeTaskOutcome[],
  timedOut: { afterS: number } | undefined,
): SmokeVerdict[] {
  return tasks.map(({ task, samples, completed, errors }) => {
    if (completed >= samples) return { task, passed: true, completed, samples };
    const first = errors[0];
    if (first) {
      return {
        task,
        passed: false,
        failure: classifySmokeError(first),
        detail: first.error,
        completed,
        samples,
      };
    }
    const detail = timedOut
      ? `${samples - completed} sample(s) still running after ${timedOut.afterS} s (--smoke-timeout raises the cap)`
      : `${samples - completed} sample(s) did not complete and recorded no error`;
    return {
      task,
      passed: false,
      failure: timedOut ? 'time_cap' : 'other',
      detail,
      completed,
      samples,
    };
  });
}

/** The report's lines: one per task, the failing ones first. */
export function smokeReportLines(verdicts: readonly SmokeVerdict[]): string[] {
  const failing = verdicts.filter((v) => !v.passed);
  const passing = verdicts.filter((v) => v.passed);
  return [
    ...failing.map((v) =>
      v.passed
        ? ''
        : `  ${v.task}: FAILED, ${SMOKE_FAILURES[v.failure]} (${v.completed}/${v.samples} completed): ${firstLine(v.detail)}`,
    ),
    ...passing.map((v) => `  ${v.task}: passed (${v.completed}/${v.samples} completed)`),
  ];
}

function firstLine(text: string): string {
  const line = text.split('\n')[0];
  return line.length > 500 ? `${line.slice(0, 500)}…` : line;
}

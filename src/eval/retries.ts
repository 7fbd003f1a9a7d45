/**
 * Which failed attempts of a sample run again within the run, on a fresh sandbox:
 *
 * - a stuck attempt (`StewardSampleStuck`) once, whatever `retry_on_error` says;
 * - any other failure of the sample's solver, scorer or sandbox up to `retry_on_error` times, as
 *   Inspect's `retry_on_error` does; stuck attempts do not use up that budget;
 * - never an error that fails every attempt the same way: a model error fatal by class (a bad
 *   request, an exhausted quota, a refused key), a definition or input that does not load, a log
 *   dir that cannot be written, or a cancellation.
 *
 * A sample whose attempts run out fails with its last attempt's error, and a relaunch runs it
 * again as before. Pure: the sample activity decides, and its workflow follows.
 */
import { ErrorType } from '../errors';

/** A failed attempt of a sample, as its record and its `.eval` sample (`error_retries`) keep it. */
export interface AttemptError {
  error: string;
  error_type?: string;
  failed_at: string;
}

/** Stuck attempts run again this many times before the sample fails as stuck. */
export const STUCK_RETRIES = 1;

/** Failures that every attempt would meet again. */
const FINAL: ReadonlySet<string> = new Set([
  ErrorType.modelFatal,
  ErrorType.config,
  ErrorType.badInput,
  ErrorType.snapshot,
  ErrorType.logWrite,
  ErrorType.cancelled,
]);

/**
 * Whether an attempt that failed with `type`, after the failed attempts `before`, runs again.
 * `retryOnError` is the sample's `retry_on_error` (0 when unset).
 */
export function runsAgain(
  type: string | undefined,
  before: readonly Pick<AttemptError, 'error_type'>[],
  retryOnError: number,
): boolean {
  if (type !== undefined && FINAL.has(type)) return false;
  const stuck = before.filter((attempt) => attempt.error_type === ErrorType.stuck).length;
  if (type === ErrorType.stuck) return stuck < STUCK_RETRIES;
  return before.length - stuck < retryOnError;
}

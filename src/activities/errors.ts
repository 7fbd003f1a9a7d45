/** How activity errors cross into workflows: `ApplicationFailure`s with a stable type. */
import { ApplicationFailure } from '@temporalio/common';
import { ErrorType } from '../errors';

/** Errors that retrying the activity cannot fix become non-retryable failures with a type. */
export function toFailure(
  err: unknown,
  fallbackType: ErrorType = ErrorType.sample,
): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  const message = err instanceof Error ? err.message : String(err);
  const type =
    typeof (err as { type?: unknown })?.type === 'string'
      ? (err as { type: string }).type
      : fallbackType;
  return ApplicationFailure.create({
    message,
    type,
    nonRetryable: true,
    cause: err instanceof Error ? err : undefined,
  });
}

/**
 * A log dir that cannot be written (a full disk, permissions) does not heal by retrying every
 * 30 s for ever: such an error fails the activity at once, with its type, so the eval set stops
 * and says why. Everything already published stays, and launching again resumes.
 */
export function failOnLogWrite(err: unknown): unknown {
  if ((err as { type?: unknown } | undefined)?.type !== ErrorType.logWrite) return err;
  // No cause: the message is whole, and the launcher reports the innermost failure's.
  return ApplicationFailure.create({
    message: (err as Error).message,
    type: ErrorType.logWrite,
    nonRetryable: true,
  });
}

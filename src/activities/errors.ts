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

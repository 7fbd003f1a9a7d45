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

/**
 * A definition that does not load (invalid, or its snapshot missing or changed) fails the
 * activity at once, with a message for the user: retrying reads the same files. Anything else (a
 * disk error, say) stays retryable.
 */
export function failOnDefinition(err: unknown): unknown {
  const { name, type } = (err ?? {}) as { name?: unknown; type?: unknown };
  if (name === 'ConfigError') return toFailure(err, ErrorType.config);
  if (type === ErrorType.snapshot || type === ErrorType.logWrite) return toFailure(err);
  return err;
}

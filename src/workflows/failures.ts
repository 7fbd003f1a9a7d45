/** Failures as workflow code reports them: the stable type and message users read. */
import { ApplicationFailure } from '@temporalio/workflow';
import { ErrorType } from '../errors';

/** The innermost application failure of a failure: its message and stable type. */
export function failureCause(err: unknown): { message: string; type?: string } {
  let current: unknown = err;
  while (current instanceof Error) {
    if (current instanceof ApplicationFailure) {
      return { message: current.message, type: current.type ?? undefined };
    }
    if (!current.cause) break;
    current = current.cause;
  }
  return { message: current instanceof Error ? current.message : String(current) };
}

/** A workflow input that does not parse: refused for good, with the parser's message. */
export function badInput(message: string): ApplicationFailure {
  return ApplicationFailure.create({ message, type: ErrorType.badInput, nonRetryable: true });
}

/** Failures as workflow code reports them: the stable type and message users read. */
import { ApplicationFailure } from '@temporalio/workflow';
import { ErrorType } from '../errors';

/** The innermost application failure of a failure: its message and stable type. */
export function failureCause(err: unknown): { message: string; type?: string } {
  const app = innermostApplicationFailure(err);
  if (app) return { message: app.message, type: app.type ?? undefined };
  let current: unknown = err;
  while (current instanceof Error && current.cause) current = current.cause;
  return { message: current instanceof Error ? current.message : String(current) };
}

/** The first application failure down a failure's chain of causes, if there is one. */
export function innermostApplicationFailure(err: unknown): ApplicationFailure | undefined {
  let current: unknown = err;
  while (current instanceof Error) {
    if (current instanceof ApplicationFailure) return current;
    current = current.cause;
  }
  return undefined;
}

/** A workflow input that does not parse: refused for good, with the parser's message. */
export function badInput(message: string): ApplicationFailure {
  return ApplicationFailure.create({ message, type: ErrorType.badInput, nonRetryable: true });
}

/**
 * `sandbox_check`: a scorer that judges the sample by running a command in its sandbox after the
 * solver is done, e.g. to check a file the agent wrote or a test suite it had to make pass.
 */

import type { Score, Scorer } from '../definition/types';

/** The `sandbox_check` scorer's options, as written in a definition. */
export interface SandboxCheckOptions {
  /**
   * The check: a list is run as is, a string with `sh -c`. It sees `TARGET` (the target being
   * tried) and `ANSWER` (the sample's completion) in its environment, so it never has to splice
   * them into shell text.
   */
  cmd: string | string[];
  /** The exit code that means correct. @default 0 */
  expect_exit?: number;
  /** Seconds the check may run; a check that times out scores incorrect. @default 60 */
  timeout?: number;
}

export const SANDBOX_CHECK_DEFAULTS = { expect_exit: 0, timeout: 60 } as const;

/** Characters of the check's output kept in the score's explanation. */
const EXPLANATION_CHARS = 1_000;

/**
 * Runs the check once per target, in order: the sample is correct (`C`) as soon as one run exits
 * with `expect_exit`, as the built-in scorers accept any matching target.
 */
export function sandboxCheck(options: SandboxCheckOptions): Scorer {
  const cmd = typeof options.cmd === 'string' ? ['sh', '-c', options.cmd] : options.cmd;
  const expected = options.expect_exit ?? SANDBOX_CHECK_DEFAULTS.expect_exit;
  const timeoutMs = (options.timeout ?? SANDBOX_CHECK_DEFAULTS.timeout) * 1000;

  return async (state, targets, ctx): Promise<Score> => {
    const sandbox = ctx.sandbox;
    if (!sandbox) {
      throw new Error('the sandbox_check scorer needs a sandbox: set `sandbox` on the task');
    }
    const answer = state.output?.completion ?? '';
    let explanation = '';
    // No target still gets one run: the check may need none (a test suite that must pass).
    for (const target of targets.length > 0 ? targets : ['']) {
      const result = await sandbox.exec(cmd, {
        timeoutMs,
        env: { TARGET: target, ANSWER: answer },
      });
      ctx.heartbeat();
      const outcome = result.timedOut
        ? `timed out after ${timeoutMs / 1000} s`
        : `exit code ${result.exitCode ?? 'unknown'}`;
      const output = `${result.stdout}${result.stderr}`.trim().slice(0, EXPLANATION_CHARS);
      explanation = output ? `${outcome}: ${output}` : outcome;
      if (!result.timedOut && result.exitCode === expected) {
        return { value: 'C', answer, explanation };
      }
    }
    return { value: 'I', answer, explanation };
  };
}

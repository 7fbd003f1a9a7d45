import * as os from 'node:os';

/** `user@host`, recorded with each hold, resume and range so the history says who steered. */
export function whoIsSteering(): string {
  let user: string;
  try {
    user = os.userInfo().username;
  } catch {
    // A container user with no passwd entry has no name to look up.
    user = process.env.USER ?? `uid ${process.getuid?.() ?? '?'}`;
  }
  return `${user}@${os.hostname()}`;
}

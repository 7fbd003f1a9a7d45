import * as path from 'node:path';

/** Steward's working directory for this project: dev server data, worker logs. */
export function stewardHome(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string {
  return path.resolve(cwd, env.STEWARD_HOME || '.steward');
}

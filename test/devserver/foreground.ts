/**
 * `steward server` in miniature, for the signal-forwarding test: runs the dev server in the
 * foreground with the config given as JSON, and exits with its exit code.
 *
 * Usage: node --require tsx/cjs foreground.ts <config json> <steward dir>
 */
import type { TemporalDevConfig } from '../../src/temporal/config';
import { runDevServerForeground } from '../../src/temporal/devserver';

const [configJson, stewardDir] = process.argv.slice(2);
const config = JSON.parse(configJson) as TemporalDevConfig;
runDevServerForeground(config, { stewardDir }).then(
  (code) => process.exit(code),
  (error: Error) => {
    process.stderr.write(`${error.message}\n`);
    process.exit(70);
  },
);

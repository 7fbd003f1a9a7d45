/** `steward logs export <log_dir>`: Inspect AI logs (`.eval`, `eval-set.json`) from the records. */
import * as path from 'node:path';
import { ExitCode } from '../../errors';
import { exportInspectLogs } from '../../logs/inspect/export';

export async function logsExportCommand(logDir: string): Promise<number> {
  const dir = path.resolve(logDir);
  const { logs, evalSetFile, warnings } = await exportInspectLogs(dir);
  for (const warning of warnings) console.error(`warning: ${warning}`);
  for (const log of logs) {
    console.log(`${shown(log.file)}  ${log.status}, ${log.samples} samples`);
  }
  console.log(shown(evalSetFile));
  console.log(`open it with: inspect view --log-dir ${logDir}`);
  return ExitCode.ok;
}

/** A path as the user would type it: relative when under the working directory. */
function shown(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
}

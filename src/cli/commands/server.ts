/** `steward server`: the embedded Temporal dev server in the foreground. */
import { ExitCode } from '../../errors';
import { loadTemporalDevConfig } from '../../temporal/config';
import { runDevServerForeground } from '../../temporal/devserver';
import { stewardHome } from '../../util/home';

export async function serverCommand(): Promise<number> {
  const config = loadTemporalDevConfig();
  const code = await runDevServerForeground(config, {
    stewardDir: stewardHome(process.env),
    onProgress: (m: string) => console.error(m),
  });
  return code ?? ExitCode.ok;
}

/**
 * `steward sandbox cleanup [name]`: removes the containers and networks Steward's sandboxes left
 * behind (a killed run, a crashed worker), found by their labels.
 */
import Dockerode from 'dockerode';
import { ExitCode } from '../../errors';
import { reapSandboxes } from '../../sandbox/cleanup';

/**
 * Removes every sandbox of eval set `name`, or of every eval set. Samples still running lose
 * their sandbox and fail, so this is for runs that have stopped. Exits 3 when something could not
 * be removed.
 */
export async function sandboxCleanupCommand(name?: string): Promise<number> {
  const result = await reapSandboxes(new Dockerode(), name === undefined ? {} : { evalSet: name });
  const scope = name === undefined ? 'Steward sandboxes' : `sandboxes of eval set ${name}`;
  process.stdout.write(
    `Removed ${result.containers} container(s) and ${result.networks} network(s) of ${scope}.\n`,
  );
  if (result.errors.length === 0) return ExitCode.ok;
  for (const error of result.errors) process.stderr.write(`could not remove ${error}\n`);
  return ExitCode.environment;
}

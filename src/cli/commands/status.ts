/**
 * `steward status [name] [--json]`: reads the live workflow (or the finished result). With no
 * worker answering it shows what Temporal recorded, checked against the log dir, and exits 0:
 * workers that are down are a state of the run, not an error of this command.
 */
import { ExitCode, StewardError } from '../../errors';
import { readStatus, runningEvalSets } from '../../client/status';
import { connectClient, resolveTemporal } from '../../temporal/connection';
import { evalSetWorkflowId } from '../../workflows/types';
import { statusJson, statusText } from '../status-view';

export async function statusCommand(
  name: string | undefined,
  opts: { json?: boolean },
): Promise<number> {
  if (name !== undefined && name.trim() === '')
    throw new StewardError('steward status takes an eval set name, not an empty one');
  const client = await connectClient(
    await resolveTemporal(process.env, { onProgress: (m) => console.error(m) }),
  );
  try {
    const ids = name ? [evalSetWorkflowId(name)] : await runningEvalSets(client);
    if (ids.length === 0) {
      console.error('no eval set is running');
      if (opts.json) process.stdout.write('[]\n');
      return ExitCode.ok;
    }
    const statuses = await Promise.all(
      ids.map(async (id) => ({ id, status: await readStatus(client, id, { thorough: true }) })),
    );
    if (name && statuses[0].status.kind === 'missing') {
      throw new StewardError(
        `no eval set named "${name}" (workflow ${ids[0]} not found): ` +
          '`steward status` with no name lists the running ones',
        ExitCode.usage,
      );
    }
    if (opts.json) {
      const out = statuses.map(({ id, status }) => statusJson(id, status));
      process.stdout.write(`${JSON.stringify(name ? out[0] : out, null, 2)}\n`);
    } else {
      for (const { id, status } of statuses) process.stdout.write(`${statusText(id, status)}\n`);
    }
    return ExitCode.ok;
  } finally {
    await client.connection.close();
  }
}

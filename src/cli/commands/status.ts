/** `steward status [name] [--json]`: reads the live workflow (or the finished result). */
import { ExitCode, StewardError } from '../../errors';
import { readStatus } from '../../client/status';
import { connectClient, resolveTemporal } from '../../temporal/connection';
import { evalSetWorkflowId } from '../../workflows/types';
import { runningEvalSets } from '../../client/status';
import { statusJson, statusText } from '../status-view';

export async function statusCommand(
  name: string | undefined,
  opts: { json?: boolean },
): Promise<number> {
  const client = await connectClient(
    await resolveTemporal(process.env, { onProgress: (m) => console.error(m) }),
  );
  const ids = name ? [evalSetWorkflowId(name)] : await runningEvalSets(client);
  if (ids.length === 0) {
    console.error('no eval set is running');
    return ExitCode.ok;
  }
  const statuses = await Promise.all(
    ids.map(async (id) => ({ id, status: await readStatus(client, id) })),
  );
  if (opts.json) {
    const out = statuses.map(({ id, status }) => statusJson(id, status));
    process.stdout.write(`${JSON.stringify(name ? out[0] : out, null, 2)}\n`);
  } else {
    for (const { id, status } of statuses) process.stdout.write(`${statusText(id, status)}\n`);
  }
  if (name && statuses[0].status.kind === 'missing') {
    throw new StewardError(
      `no eval set named "${name}" (workflow ${ids[0]} not found)`,
      ExitCode.usage,
    );
  }
  return ExitCode.ok;
}

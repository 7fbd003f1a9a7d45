/** `steward status [name] [--json]`: reads the live workflow (or the finished result). */
import type { Client } from '@temporalio/client';
import { ExitCode, StewardError } from '../../errors';
import { readStatus, type LiveStatus } from '../../client/status';
import { connectClient, resolveTemporal } from '../../temporal/connection';
import { evalSetWorkflowId } from '../../workflows/types';
import { resultJson, resultTable } from '../table';

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

function statusJson(id: string, s: LiveStatus): unknown {
  switch (s.kind) {
    case 'running':
      return { workflow_id: id, ...s.status };
    case 'completed':
      return { workflow_id: id, state: 'done', ...(resultJson(s.result) as object) };
    case 'failed':
      return { workflow_id: id, state: s.status.toLowerCase(), error: s.message };
    case 'missing':
      return { workflow_id: id, state: 'missing' };
  }
}

function statusText(id: string, s: LiveStatus): string {
  switch (s.kind) {
    case 'running': {
      const header = `${s.status.eval_set} (${id}): ${s.status.state}`;
      const width = Math.max(4, ...s.status.tasks.map((t) => t.name.length));
      const lines = s.status.tasks.map(
        (t) =>
          `  ${t.name.padEnd(width)}  ${t.state.padEnd(7)}  ${t.completed + t.errored}/${t.samples} done  ` +
          `${t.in_flight} in flight  ${t.waiting} waiting  setpoint ${t.setpoint}  ${t.errored} errors`,
      );
      return [header, ...lines].join('\n');
    }
    case 'completed':
      return `${s.result.eval_set} (${id}): ${s.result.status}\n${resultTable(s.result)}`;
    case 'failed':
      return `${id}: ${s.status.toLowerCase()}: ${s.message}`;
    case 'missing':
      return `${id}: not found`;
  }
}

async function runningEvalSets(client: Client): Promise<string[]> {
  const ids: string[] = [];
  for await (const wf of client.workflow.list({
    query: "WorkflowType = 'evalSet' AND ExecutionStatus = 'Running'",
  })) {
    ids.push(wf.workflowId);
  }
  return ids;
}

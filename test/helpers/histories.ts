/** Reads the workflow histories of an eval set's run, as the server stores and serves them. */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { evalSetWorkflowId, type SampleGroup, type SampleInput } from '../../src/workflows/types';

/** Temporal's per-execution history limits (server defaults: warn, then terminate). */
export const HISTORY_LIMITS = {
  warnEvents: 10_240,
  warnBytes: 10 * 1024 * 1024,
  maxEvents: 51_200,
  maxBytes: 50 * 1024 * 1024,
} as const;

export interface WorkflowRun {
  workflowId: string;
  runId: string;
  type: string;
  status: string;
}

/**
 * Every run of every workflow of eval set `name`: the `evalSet` (`steward-<name>`), its tasks
 * (`steward-<name>/<task>`, each run of a continue-as-new chain its own entry) and their samples
 * (`steward-<name>/<task>/<chain>/<index>`), optionally of the given workflow types only.
 */
export async function runsOfEvalSet(
  client: Client,
  name: string,
  types?: string[],
): Promise<WorkflowRun[]> {
  const id = evalSetWorkflowId(name);
  let query = `(WorkflowId = '${id}' OR WorkflowId STARTS_WITH '${id}/')`;
  if (types) query += ` AND WorkflowType IN (${types.map((t) => `'${t}'`).join(', ')})`;
  const runs: WorkflowRun[] = [];
  for await (const wf of client.workflow.list({ query })) {
    runs.push({
      workflowId: wf.workflowId,
      runId: wf.runId,
      type: wf.type,
      status: wf.status.name,
    });
  }
  return runs;
}

/** One run's whole history, every page of it. */
export async function fetchHistory(
  client: Client,
  run: Pick<WorkflowRun, 'workflowId' | 'runId'>,
): Promise<temporal.api.history.v1.IHistory> {
  return client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
}

/** The history as the server stores and sends it: its protobuf encoding. */
export function encodeHistory(history: temporal.api.history.v1.IHistory): Uint8Array {
  return temporal.api.history.v1.History.encode(history).finish();
}

/** The history as JSON, bytes (payloads) in base64, as `temporal workflow show -o json` shows it. */
export function historyJson(history: temporal.api.history.v1.IHistory): string {
  const message = temporal.api.history.v1.History.fromObject(history);
  return JSON.stringify(
    temporal.api.history.v1.History.toObject(message, {
      bytes: String,
      longs: String,
      enums: String,
    }),
  );
}

/** Maps `fn` over `items` with at most `width` calls in flight. */
export async function mapLimited<T, R>(
  items: T[],
  width: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) results[i] = await fn(items[i]);
    }),
  );
  return results;
}

/** How a sample's workflow ran `runSample`: inline (a local activity), or as an activity. */
export type SampleRunKind = 'inline' | 'activity' | 'neither';

/**
 * The way each given sample run ran its sample, read from its history: a local activity leaves a
 * marker (`core_local_activity`), an activity a scheduled event.
 */
export async function sampleRunKinds(
  client: Client,
  runs: Array<Pick<WorkflowRun, 'workflowId' | 'runId'>>,
): Promise<SampleRunKind[]> {
  const { EventType } = temporal.api.enums.v1;
  return mapLimited(runs, 8, async (run) => {
    const events = (await fetchHistory(client, run)).events ?? [];
    if (events.some((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)) {
      return 'activity';
    }
    const inline = events.some(
      (e) =>
        e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED &&
        e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
    );
    return inline ? 'inline' : 'neither';
  });
}

/**
 * The samples each given sample run ran, read from its start input: its one index, or its
 * group's (sandbox-free samples admitted together share a workflow: see `startSamples`).
 */
export async function samplesRunBy(
  client: Client,
  runs: Array<Pick<WorkflowRun, 'workflowId' | 'runId'>>,
): Promise<number[][]> {
  return mapLimited(runs, 8, async (run) => {
    const [started] = (await fetchHistory(client, run)).events ?? [];
    const payload = started?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    if (!payload) throw new Error(`${run.workflowId}: no start input`);
    const input = defaultPayloadConverter.fromPayload<SampleInput | SampleGroup>(payload);
    return 'group' in input ? input.group.map((s) => s.index) : [input.index];
  });
}

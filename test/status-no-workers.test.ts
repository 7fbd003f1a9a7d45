/**
 * `steward status` of a running eval set whose workers are gone: it shows the last state
 * Temporal recorded, its done counts agree with the log dir's records, it says how to bring the
 * workers back, and it exits 0. Through the CLI as a user types it, against the real dev server.
 */
import * as path from 'node:path';
import { promises as fs } from 'node:fs';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { evalSetWorkflowId } from '../src/workflows/types';
import { STATUS_MEMO_KEY } from '../src/workflows/status-memo';
import { runCli, tempDir, uniqueName, writeEvalSet } from './helpers/cli';
import { detachedFleet, killTree } from './helpers/detached';
import { waitFor } from './helpers/processes';
import { replayAllRuns } from './helpers/replay';
import { readSampleRecords } from './helpers/results';

const SAMPLES = 200;

describe('steward status of an eval set whose workers were stopped', () => {
  let client: Client;
  let env: NodeJS.ProcessEnv;
  let name: string;
  let file: string;
  let logDir: string;
  let recorded: number;
  let memoLag: number;

  beforeAll(async () => {
    client = new Client({
      connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS }),
      namespace: process.env.TEMPORAL_NAMESPACE,
    });
    const dir = await tempDir();
    env = { ...process.env, STEWARD_HOME: path.join(dir, '.steward') };
    name = uniqueName('silent');
    file = await writeEvalSet(dir, name, [{ name: 'slow', samples: SAMPLES, latencyMs: 400 }], {
      max_samples: 4,
      // Long enough that the records run well ahead of what the workflow last recorded.
      tend_interval: 10,
    });
    logDir = path.join(dir, 'logs');
    const launched = await runCli(['launch', file, '--detach', '--log-dir', logDir], { env });
    expect(launched.stderr).not.toContain('internal error');
    expect(launched.code).toBe(0);

    // Mid-run, between two tends: 20 samples recorded, more than the memo says.
    await waitFor('20 records, ahead of the recorded status', async () => {
      const records = await fs.readdir(path.join(logDir, 'slow', 'samples')).catch(() => []);
      const memo = await memoCompleted();
      return records.length >= 20 && memo !== undefined && memo < records.length ? true : undefined;
    });
    const fleet = await waitFor('the detached fleet', () => detachedFleet(name));
    await killTree(fleet);
    recorded = (await readSampleRecords(logDir, 'slow')).length;
    expect(recorded).toBeLessThan(SAMPLES);
    // What Temporal recorded lags the records: the case where status used to say 0/100 done.
    memoLag = recorded - ((await memoCompleted()) as number);
    expect(memoLag).toBeGreaterThan(0);
  });

  /** The completed count of the task in the eval set's memo, once it has one. */
  async function memoCompleted(): Promise<number | undefined> {
    const memo = (await client.workflow.getHandle(evalSetWorkflowId(name)).describe()).memo;
    const tasks = (memo?.[STATUS_MEMO_KEY] as { tasks?: { completed: number }[] } | undefined)
      ?.tasks;
    return tasks?.[0]?.completed;
  }

  afterAll(async () => {
    await client?.connection.close();
  });

  test('the text view shows the recorded state and the records, and how to start workers', async () => {
    const status = await runCli(['status', name], { env });
    expect(status.stderr).not.toContain('internal error');
    expect(status.code).toBe(0);
    const lines = status.stdout.split('\n');
    expect(lines[0]).toMatch(
      new RegExp(`^${name} \\(steward-${name}\\): running; no workers answer \\(.+\\)$`),
    );
    expect(lines[1]).toMatch(/^showing the state it last recorded, at \d{4}-\d\d-\d\dT[\d:]+Z$/);
    expect(lines[2]).toMatch(
      new RegExp(
        `^done counted from the records in ${logDir} at [\\dT:-]+Z \\(ahead of Temporal's numbers\\) for slow$`,
      ),
    );
    const row = lines.find((l) => l.trim().startsWith('slow '));
    expect(row?.trim().split(/\s{2,}/)[5]).toBe(`${recorded}/${SAMPLES}`);
    expect(status.stdout).toContain(
      `start its workers with \`steward workers ${name}\`, or run \`steward launch ${file}\` again`,
    );
  });

  test('--json carries the same numbers and says where each came from', async () => {
    const status = await runCli(['status', name, '--json'], { env });
    expect(status.stderr).not.toContain('internal error');
    expect(status.code).toBe(0);
    const json = JSON.parse(status.stdout);
    expect(json).toMatchObject({
      workflow_id: `steward-${name}`,
      eval_set: name,
      state: 'running',
      workers: 'not answering',
      log_dir: logDir,
      log_dir_check: { state: 'counted', path: logDir },
    });
    expect(Date.parse(json.recorded_at)).toBeLessThanOrEqual(Date.now());
    expect(json.tasks).toHaveLength(1);
    const [task] = json.tasks;
    expect(task).toMatchObject({ name: 'slow', samples: SAMPLES, completed: recorded });
    expect(task.source).toMatchObject({
      from: 'memo',
      at: json.recorded_at,
      log_dir_records: recorded,
    });
    expect(task.source.completed_from).toBe('log_dir');
    expect(task.waiting).toBe(SAMPLES - recorded - task.errored - task.in_flight);
    process.stderr.write(`records ahead of the memo at the kill: ${memoLag}\n`);
  });

  test('with no name it lists the eval set the same way and exits 0', async () => {
    const status = await runCli(['status', '--json'], { env });
    expect(status.code).toBe(0);
    const mine = (JSON.parse(status.stdout) as { workflow_id: string }[]).find(
      (s) => s.workflow_id === `steward-${name}`,
    );
    expect(mine).toMatchObject({ workers: 'not answering' });
  });

  test('launching again finishes the run, every sample recorded once, and status reads it', async () => {
    const again = await runCli(['launch', file, '--json', '--log-dir', logDir], { env });
    expect(again.stderr).not.toContain('internal error');
    expect(again.code).toBe(0);
    const records = await readSampleRecords(logDir, 'slow');
    expect(records).toHaveLength(SAMPLES);
    expect(new Set(records.map((r) => r.sample_id)).size).toBe(SAMPLES);
    const status = await runCli(['status', name, '--json'], { env });
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      state: 'done',
      tasks: [{ name: 'slow', completed: SAMPLES }],
    });
    expect(await replayAllRuns(client, [evalSetWorkflowId(name)])).toBe(1);
  });
});

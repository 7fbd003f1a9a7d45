/**
 * `steward status` of a running eval set whose workers are gone: it shows the last state
 * Temporal recorded, its done counts agree with the log dir's records, it says how to bring the
 * workers back, and it exits 0. Through the CLI as a user types it, against the real dev server.
 */
import * as path from 'node:path';
import { promises as fs } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
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

  beforeAll(async () => {
    client = new Client({
      connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS }),
      namespace: process.env.TEMPORAL_NAMESPACE,
    });
    const dir = await tempDir();
    env = { ...process.env, STEWARD_HOME: path.join(dir, '.steward') };
    name = uniqueName('silent');
    file = await writeEvalSet(dir, name, [{ name: 'slow', samples: SAMPLES, latencyMs: 400 }], {
      max_samples: 4,
      tend_interval: 1,
    });
    logDir = path.join(dir, 'logs');
    const launched = await runCli(['launch', file, '--detach', '--log-dir', logDir], { env });
    expect(launched.stderr).not.toContain('internal error');
    expect(launched.code).toBe(0);

    // Mid-run: some samples recorded, and at least one tend recorded in the memo.
    await waitFor('20 records and a recorded tend', async () => {
      const records = await fs.readdir(path.join(logDir, 'slow', 'samples')).catch(() => []);
      const memo = (await client.workflow.getHandle(evalSetWorkflowId(name)).describe()).memo;
      const tasks = (memo?.[STATUS_MEMO_KEY] as { tasks?: unknown[] } | undefined)?.tasks;
      return records.length >= 20 && tasks?.length === 1 ? true : undefined;
    });
    const fleet = await waitFor('the detached fleet', () => detachedFleet(name));
    await killTree(fleet);
    recorded = (await readSampleRecords(logDir, 'slow')).length;
    expect(recorded).toBeLessThan(SAMPLES);
  });

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
    expect(['memo', 'log_dir']).toContain(task.source.completed_from);
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

/**
 * The sandbox budget across tasks, for real: three sandboxed tasks (a container per sample on the
 * real dockerd) under `max_sandboxes: 60`, against the simulated provider, with a 2 s tend. The
 * sum of the tasks' setpoints never exceeds the budget.
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import Dockerode from 'dockerode';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { startSimProvider, type SimProvider } from '../src/sim/provider';
import { ensureBusyboxImage } from '../src/sandbox/image';
import { statusQuery } from '../src/workflows/types';
import { replayAllRuns } from './helpers/replay';
import { readSampleRecords } from './helpers/results';
import { STEWARD_BIN, tempDir, uniqueName } from './helpers/cli';

const TASKS = ['a', 'b', 'c'];
const SAMPLES = 60;
const BUDGET = 60;

describe('max_sandboxes 60 over 3 sandboxed tasks', () => {
  let client: Client;
  let provider: SimProvider;
  const docker = new Dockerode();

  beforeAll(async () => {
    await ensureBusyboxImage(docker);
    provider = await startSimProvider({ latencyMs: 3_000, jitterMs: 200 });
    client = new Client({
      connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS! }),
      namespace: process.env.TEMPORAL_NAMESPACE,
    });
  });

  afterAll(async () => {
    await provider.close();
    await client.connection.close();
  });

  test('the sum of setpoints never exceeds the budget, and every sample completes', async () => {
    const dir = await tempDir();
    const name = uniqueName('budget');
    // No network per sample: the budget, not Docker's address pools, is what this test is about.
    await fs.writeFile(
      path.join(dir, 'sandbox.yaml'),
      'services:\n  default:\n    image: steward-busybox:latest\n    command: [sleep, "3600"]\n    network_mode: none\n',
    );
    const tasks = TASKS.map((task) => {
      const lines = Array.from({ length: SAMPLES }, (_, i) =>
        JSON.stringify({ id: `${task}-${i}`, input: `ANSWER: ${i}`, target: String(i) }),
      );
      return { task, text: `${lines.join('\n')}\n` };
    });
    for (const { task, text } of tasks) await fs.writeFile(path.join(dir, `${task}.jsonl`), text);
    const file = path.join(dir, 'evalset.yaml');
    await fs.writeFile(
      file,
      [
        `name: ${name}`,
        `max_sandboxes: ${BUDGET}`,
        'model: openai-api/sim/budget',
        'tasks:',
        ...TASKS.flatMap((task) => [
          `  - name: ${task}`,
          `    dataset: ${task}.jsonl`,
          '    sandbox: sandbox.yaml',
          '    solver: [generate]',
          '    scorer: match',
        ]),
        '',
      ].join('\n'),
    );
    const logDir = path.join(dir, 'logs');
    const child = spawn(
      process.execPath,
      [STEWARD_BIN, 'launch', file, '--json', '--log-dir', logDir, '--tend-interval', '2'],
      {
        env: { ...process.env, SIM_BASE_URL: provider.url, SIM_API_KEY: 'sim' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));

    let done = false;
    const sums: number[] = [];
    void exited.then(() => (done = true));
    while (!done) {
      const status = await client.workflow
        .getHandle(`steward-${name}`)
        .query(statusQuery)
        .catch(() => undefined);
      const running = status?.tasks.filter((t) => t.state === 'running') ?? [];
      if (running.length > 0) sums.push(running.reduce((n, t) => n + t.setpoint, 0));
      await new Promise((r) => setTimeout(r, 200));
    }

    expect({ code: await exited, output }).toMatchObject({ code: 0 });
    expect(sums.length).toBeGreaterThan(10);
    expect(Math.max(...sums)).toBeLessThanOrEqual(BUDGET);
    // The budget was used: the three tasks ran at shares of it together.
    expect(sums).toContain(BUDGET);
    for (const task of TASKS) expect(await readSampleRecords(logDir, task)).toHaveLength(SAMPLES);
    const leftovers = await docker.listContainers({
      all: true,
      filters: { label: [`steward.eval_set=${name}`] },
    });
    expect(leftovers).toEqual([]);
    // Tends, budget shares and tasks finishing together all replay.
    const evalSetId = `steward-${name}`;
    const ids = [evalSetId, ...TASKS.map((task) => `${evalSetId}/${task}`)];
    expect(await replayAllRuns(client, ids)).toBeGreaterThanOrEqual(ids.length);
  });
});

/**
 * An eval set runs the definition it was launched with, wherever its control work and samples
 * run (SPEC §1: the definition is a snapshot by content hash, which every process loads and
 * verifies):
 *
 * - two fleets, in different working directories with different `STEWARD_HOME`s, share one
 *   Temporal server; an eval set launched from the first is planned and run by `steward
 *   workers` in the second, after the first's files are gone, with files of the same relative
 *   names but other content in the second's directory;
 * - a definition edited while its eval set runs changes nothing in that run;
 * - what cannot be run right fails at once, and `steward status` says why: a relative path in a
 *   stock `temporal workflow start` input, a snapshot that is not there, and a task whose records
 *   in the log dir are another task's.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { parse, stringify } from 'yaml';
import { loadDefinitionFiles, writeSnapshot } from '../src/loader/snapshot';
import type { EvalSetInput, EvalSetResult } from '../src/workflows/types';
import { expectExit, runCli, tempDir, uniqueName, writeEvalSet } from './helpers/cli';
import { spawnFleet, type TestFleet } from './helpers/fleet';
import { waitFor, within } from './helpers/processes';
import { readSampleRecords } from './helpers/results';

const CLI_TIMEOUT_MS = 240_000;

/** What `steward status <name>` prints in the second fleet's environment. */
async function statusLine(name: string, env: NodeJS.ProcessEnv, cwd: string): Promise<string> {
  const status = await runCli(['status', name], { env, cwd });
  expectExit(status, 0);
  return status.stdout.trimEnd();
}

describe('two fleets against one Temporal server', () => {
  let client: Client;
  let root: string;
  let second: { dir: string; env: NodeJS.ProcessEnv; home: string };
  let fleet: TestFleet;

  beforeAll(async () => {
    client = new Client({
      connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS! }),
      namespace: process.env.TEMPORAL_NAMESPACE,
    });
    root = await tempDir('steward-two-fleets-');
    const home = path.join(root, 'home-b');
    const dir = path.join(root, 'fleet-b');
    await fs.mkdir(home);
    await fs.mkdir(dir);
    second = { dir, home, env: { ...process.env, STEWARD_HOME: home } };
    // The second fleet: `steward workers`, serving every running eval set, from its own directory.
    fleet = spawnFleet({ cwd: second.dir, env: second.env });
  });

  afterAll(async () => {
    await fleet?.stop();
    await client?.connection.close();
  });

  /** Starts an eval set as `steward launch --detach` does (snapshot, then start), without a fleet. */
  async function launchFromFirst(file: string, logDir: string): Promise<string> {
    const { definition, used } = await loadDefinitionFiles(file);
    const hash = await writeSnapshot(used, logDir);
    const input: EvalSetInput = { definition: file, definition_hash: hash, log_dir: logDir };
    await client.workflow.start('evalSet', {
      workflowId: `steward-${definition.name}`,
      taskQueue: 'steward',
      args: [input],
    });
    return hash;
  }

  async function startStock(name: string, input: EvalSetInput): Promise<unknown> {
    const handle = await client.workflow.start('evalSet', {
      workflowId: `steward-${name}`,
      taskQueue: 'steward',
      args: [input],
    });
    return within(
      'the eval set to end',
      handle.result().catch((err: unknown) => err),
      120_000,
    );
  }

  test('the second runs an eval set launched from the first, as launched', async () => {
    const SAMPLES = 12;
    const name = uniqueName('two-fleets');
    const first = path.join(root, 'fleet-a');
    await fs.mkdir(first);
    const file = await writeEvalSet(first, name, [{ name: 't', samples: SAMPLES, latencyMs: 200 }]);
    const logDir = path.join(root, 'logs');
    await launchFromFirst(file, logDir);

    // The first fleet's files are gone; the second's directory has files of the same relative
    // names, and the same eval set name, with other samples and answers that score wrong.
    await fs.rename(first, `${first}-gone`);
    const decoy = parse(await fs.readFile(path.join(`${first}-gone`, 'evalset.yaml'), 'utf8'));
    decoy.tasks[0].model_args.outputs = ['wrong'];
    await fs.writeFile(path.join(second.dir, 'evalset.yaml'), stringify(decoy));
    await fs.writeFile(path.join(second.dir, 't.jsonl'), '{"id": "decoy", "input": "x"}\n');

    const result = (await within(
      'the second fleet to finish the eval set',
      client.workflow.getHandle(`steward-${name}`).result(),
      180_000,
    )) as EvalSetResult;
    expect(result).toMatchObject({
      status: 'success',
      log_dir: logDir,
      tasks: [{ name: 't', samples: SAMPLES, completed: SAMPLES, errored: 0 }],
    });
    const records = await readSampleRecords(logDir, 't');
    expect(records.map((r) => r.sample_id).sort()).toEqual(
      Array.from({ length: SAMPLES }, (_, i) => `t-${i + 1}`).sort(),
    );
    expect(records.every((r) => r.score.value === 'C' && r.output === r.target)).toBe(true);
    // The second fleet did the work: its worker logs are in its own STEWARD_HOME.
    expect(await fs.readdir(path.join(second.home, 'workers'))).toContain(`${name}-slot-1.log`);
  });

  test('a stock start with a relative definition fails at once, and status says why', async () => {
    const name = uniqueName('relative');
    await writeEvalSet(second.dir, name, [{ name: 't', samples: 2 }]);
    const failure = await startStock(name, {
      definition: 'evalset.yaml',
      log_dir: path.join(root, 'logs-relative'),
    });
    expect(failure).toBeInstanceOf(Error);
    expect(await statusLine(name, second.env, second.dir)).toBe(
      `steward-${name}: failed: definition must be an absolute path ("evalset.yaml"): ` +
        'a relative one would be read from the directory of whichever worker plans the eval set',
    );
  });

  test('a snapshot that is not in the log dir fails at once, and status says why', async () => {
    const name = uniqueName('no-snapshot');
    const logDir = path.join(root, 'logs-empty');
    const hash = 'e'.repeat(64);
    await startStock(name, {
      definition: path.join(second.dir, 'evalset.yaml'),
      definition_hash: hash,
      log_dir: logDir,
    });
    expect(await statusLine(name, second.env, second.dir)).toBe(
      `steward-${name}: failed: the definition's snapshot ${logDir}/.steward/definitions/${hash} ` +
        'does not exist: the log dir must be the one the eval set was launched with, readable by every worker',
    );
  });

  test('a stock start whose task differs from the records in its log dir is refused', async () => {
    const name = uniqueName('stock-identity');
    const dir = await tempDir('steward-stock-identity-');
    const file = await writeEvalSet(dir, name, [{ name: 't', samples: 3 }]);
    const logDir = path.join(dir, 'logs');
    const done = (await startStock(name, { definition: file, log_dir: logDir })) as EvalSetResult;
    expect(done.status).toBe('success');

    const definition = parse(await fs.readFile(file, 'utf8'));
    definition.tasks[0].epochs = 2;
    await fs.writeFile(file, stringify(definition));
    await startStock(name, { definition: file, log_dir: logDir });
    expect(await statusLine(name, second.env, second.dir)).toBe(
      `steward-${name}: failed: task "t" differs from the one whose records are in ${logDir}: ` +
        `epochs 1 → 2. Use a new log dir (--log-dir) for the changed task, or remove ${logDir}/t to discard its records.`,
    );
    expect(await readSampleRecords(logDir, 't')).toHaveLength(3);
  });
});

describe('a definition edited while its eval set runs', () => {
  test('changes nothing in that run: every task runs as launched', async () => {
    const dir = await tempDir('steward-edited-');
    const name = uniqueName('edited');
    // One task at a time: the second starts, in a worker process of its own, after the edit.
    const file = await writeEvalSet(
      dir,
      name,
      [
        { name: 'first', samples: 8, latencyMs: 1_000 },
        { name: 'second', samples: 4 },
      ],
      { max_tasks: 1, max_samples: 2 },
    );
    const logDir = path.join(dir, 'logs');
    const launch = runCli(['launch', file, '--json', '--log-dir', logDir], {
      timeoutMs: CLI_TIMEOUT_MS,
    });
    await waitFor(
      'the first task to record a sample',
      async () =>
        (await readSampleRecords(logDir, 'first').catch(() => [])).length > 0 ? true : undefined,
      { timeoutMs: 120_000 },
    );
    // The edit: every answer wrong, and the second task's dataset twice as long.
    const edited = parse(await fs.readFile(file, 'utf8'));
    for (const task of edited.tasks) task.model_args.outputs = ['wrong'];
    await fs.writeFile(file, stringify(edited));
    const lines = Array.from({ length: 8 }, (_, i) =>
      JSON.stringify({ id: `second-${i + 1}`, input: `${i}`, target: 'edited' }),
    );
    await fs.writeFile(path.join(dir, 'second.jsonl'), `${lines.join('\n')}\n`);

    const result = await launch;
    expectExit(result, 0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      status: 'success',
      tasks: [
        { name: 'first', samples: 8, completed: 8 },
        { name: 'second', samples: 4, completed: 4 },
      ],
    });
    for (const task of ['first', 'second']) {
      const records = await readSampleRecords(logDir, task);
      expect(records.every((r) => r.score.value === 'C' && r.output === r.target)).toBe(true);
      expect(records).toHaveLength(task === 'first' ? 8 : 4);
    }
  });
});

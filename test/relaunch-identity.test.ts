/**
 * A relaunch into the same log dir, as Inspect's `eval_set` treats one: a task whose model,
 * dataset or epochs changed is refused before anything starts, with a message naming the task,
 * what changed and what to do; a change of a concurrency knob is not a change of the task.
 * Through the CLI as a user types it, against the real dev server.
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { parse, stringify } from 'yaml';
import { SNAPSHOTS_DIR } from '../src/loader/snapshot';
import { evalSetWorkflowId } from '../src/workflows/types';
import { expectExit, runCli, tempDir, uniqueName, writeEvalSet } from './helpers/cli';
import { readSampleRecords } from './helpers/results';

const SAMPLES = 6;
const CLI_TIMEOUT_MS = 180_000;
/** A provider account the refused launches name; nothing is ever sent to it. */
const SIM_ENV = { SIM_BASE_URL: 'http://127.0.0.1:9/v1', SIM_API_KEY: 'unused' };

/** sha256 of a dataset's samples as the identity takes it: canonical JSON, one a line. */
function datasetSha(lines: string[]): string {
  const hash = createHash('sha256');
  for (const line of lines) hash.update(`${line}\n`);
  return hash.digest('hex').slice(0, 12);
}

function sampleLine(i: number): string {
  return JSON.stringify({ id: `only-${i + 1}`, input: `What is ${i} + 1?`, target: String(i + 1) });
}

describe('launching again into a log dir whose task has changed', () => {
  let client: Client;
  let dir: string;
  let name: string;
  let file: string;
  let logDir: string;
  let original: string;
  let args: string[];

  beforeAll(async () => {
    client = new Client({
      connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS! }),
      namespace: process.env.TEMPORAL_NAMESPACE,
    });
    dir = await tempDir('steward-identity-');
    name = uniqueName('identity');
    file = await writeEvalSet(dir, name, [{ name: 'only', samples: SAMPLES }]);
    original = await fs.readFile(file, 'utf8');
    logDir = path.join(dir, 'logs');
    args = ['launch', file, '--json', '--log-dir', logDir];
    expectExit(await runCli(args, { timeoutMs: CLI_TIMEOUT_MS }), 0);
  });

  afterAll(async () => {
    await client?.connection.close();
  });

  afterEach(async () => {
    await fs.writeFile(file, original);
    await fs.writeFile(
      path.join(dir, 'only.jsonl'),
      `${Array.from({ length: SAMPLES }, (_, i) => sampleLine(i)).join('\n')}\n`,
    );
  });

  async function evalSetRuns(): Promise<string[]> {
    const runs: string[] = [];
    const query = `WorkflowId = '${evalSetWorkflowId(name)}'`;
    for await (const wf of client.workflow.list({ query })) runs.push(wf.status.name);
    return runs;
  }

  async function editTask(change: Record<string, unknown>): Promise<void> {
    const definition = parse(original) as { tasks: Record<string, unknown>[] };
    Object.assign(definition.tasks[0], change);
    await fs.writeFile(file, stringify(definition));
  }

  const refusal = (what: string): string =>
    `steward: task "only" differs from the one whose records are in ${logDir}: ${what}. ` +
    `Use a new log dir (--log-dir) for the changed task, or remove ${logDir}/only to discard its records.`;

  test('records the task identity where its samples are', async () => {
    const recorded = JSON.parse(await fs.readFile(path.join(logDir, 'only', 'task.json'), 'utf8'));
    expect(recorded).toMatchObject({
      version: 1,
      eval_set: name,
      task: 'only',
      identity: {
        model: 'mockllm/model',
        solver: [{ generate: {} }],
        scorer: { match: {} },
        dataset: { samples: SAMPLES },
        epochs: 1,
      },
    });
  });

  test.each([
    {
      what: 'the model',
      edit: () => editTask({ model: 'openai-api/sim/other', model_args: {} }),
      message: () =>
        'model "mockllm/model" → "openai-api/sim/other"; model_args ' +
        '{"jitter_ms":0,"latency_ms":0,"outputs":["{target}"]} → {}',
    },
    {
      what: 'the dataset',
      edit: async () => {
        await fs.appendFile(path.join(dir, 'only.jsonl'), `${sampleLine(SAMPLES)}\n`);
      },
      message: () => {
        const lines = Array.from({ length: SAMPLES + 1 }, (_, i) => sampleLine(i));
        return (
          `dataset ${SAMPLES} samples, sha256 ${datasetSha(lines.slice(0, SAMPLES))} → ` +
          `${SAMPLES + 1} samples, sha256 ${datasetSha(lines)}`
        );
      },
    },
    { what: 'the epochs', edit: () => editTask({ epochs: 3 }), message: () => 'epochs 1 → 3' },
  ])('a change of $what is refused before anything starts', async ({ edit, message }) => {
    const snapshots = await fs.readdir(path.join(logDir, SNAPSHOTS_DIR));
    await edit();
    const result = await runCli(args, { env: { ...process.env, ...SIM_ENV } });
    expect({ code: result.code, stderr: result.stderr.trimEnd() }).toEqual({
      code: 2,
      stderr: refusal(message()),
    });
    expect(result.stdout).toBe('');
    // Nothing started, nothing new in the log dir, the records as they were.
    expect(await evalSetRuns()).toEqual(['COMPLETED']);
    expect(await fs.readdir(path.join(logDir, SNAPSHOTS_DIR))).toEqual(snapshots);
    expect(await readSampleRecords(logDir, 'only')).toHaveLength(SAMPLES);
  });

  test('a change of concurrency knobs is not a change of the task', async () => {
    await fs.writeFile(file, stringify({ ...parse(original), max_samples: 2, tend_interval: 1 }));
    const result = await runCli([...args, '--max-samples', '3', '--max-connections', '7'], {
      timeoutMs: CLI_TIMEOUT_MS,
    });
    expectExit(result, 0);
    expect(result.stderr).toContain(
      `nothing to do: all ${SAMPLES} samples of eval set ${name} are already completed`,
    );
  });

  test('removing the task’s records, as the refusal says, lets the changed task run', async () => {
    await editTask({ epochs: 2 });
    await fs.rm(path.join(logDir, 'only'), { recursive: true });
    const result = await runCli(args, { timeoutMs: CLI_TIMEOUT_MS });
    expectExit(result, 0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      status: 'success',
      tasks: [{ name: 'only', samples: 2 * SAMPLES, completed: 2 * SAMPLES, resumed: 0 }],
    });
    const recorded = JSON.parse(await fs.readFile(path.join(logDir, 'only', 'task.json'), 'utf8'));
    expect(recorded.identity.epochs).toBe(2);
  });
});

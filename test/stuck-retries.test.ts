/**
 * Stuck samples and in-run retries end to end: `steward launch` on the real dev server, samples
 * in Docker sandboxes, the simulated provider over real HTTP.
 *
 * - A sample with no progress for `stuck_after` (a hung tool call, a hung model call) is
 *   cancelled, run again once on a fresh sandbox, then fails `StewardSampleStuck`, all within
 *   `stuck_after` × 2 plus a margin; one that makes slow but steady progress for longer is not
 *   stuck. Status counts the stuck attempts and the ramp history records them.
 * - `retry_on_error` (per task) recovers a flaky scorer, each attempt on a fresh sandbox, and
 *   stops at its count; a model error fatal by class is not retried. The records and the `.eval`
 *   logs (read with Inspect's reader) carry the failed attempts as `error_retries`.
 * - Nothing is left on the Docker daemon.
 */
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import type Docker from 'dockerode';
import { stringify } from 'yaml';
import { openLogStore, type SampleErrorRecord, type SampleRecord } from '../src/logs/store';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../src/sandbox/image';
import { startSimProvider, type SimProvider } from '../src/sim/provider';
import type { SimScript } from '../src/sim/script';
import type { RampHistoryEntry } from '../src/workflows/types';
import { leftovers, requireDocker } from './fixtures/docker/docker';
import {
  expectExit,
  REPO_ROOT,
  runCli,
  runCommand,
  tempDir,
  uniqueName,
  type CliResult,
} from './helpers/cli';
import { readSampleRecords } from './helpers/results';

const PYTHON =
  process.env.STEWARD_INSPECT_PYTHON ??
  path.join(REPO_ROOT, '.tools', 'inspect-venv', 'bin', 'python');
const READER = path.join(REPO_ROOT, 'test', 'helpers', 'read_inspect_logs.py');
const CLI_TIMEOUT_MS = 300_000;
const STUCK_AFTER = 5;
/** How late a stuck attempt may end on a loaded 2-core machine (teardown, a new sandbox). */
const MARGIN_S = 15;

/** The tag in a sample's input (`Sample <tag>.`), from the request's first user message. */
function tagOf(request: Parameters<SimScript>[0]): { tag: string; text: string } {
  const user = request.messages.find((m) => m.role === 'user');
  const text = typeof user?.content === 'string' ? user.content : '';
  return { tag: /^Sample (\S+)\./m.exec(text)?.[1] ?? '?', text };
}

const seconds = (from: string, to: string): number => (Date.parse(to) - Date.parse(from)) / 1000;

let docker: Docker;
let releaseHung: () => void;
const hung = new Promise<void>((resolve) => (releaseHung = resolve));

beforeAll(async () => {
  docker = await requireDocker();
  await ensureBusyboxImage(docker);
});

afterAll(() => releaseHung());

describe('stuck samples: no progress for stuck_after', () => {
  const calls = new Map<string, number>();
  /**
   * An agent: `HANG` gets no answer at all; `RUN: <cmd>` runs that command turn after turn; a
   * sample that says `STEPS <n>` submits after n calls.
   */
  const script: SimScript = async (request) => {
    const { tag, text } = tagOf(request);
    const call = (calls.get(tag) ?? 0) + 1;
    calls.set(tag, call);
    if (text.includes('HANG')) {
      await hung;
      return { content: 'too late' };
    }
    const steps = /STEPS (\d+)/.exec(text);
    if (steps && call > Number(steps[1])) {
      return { tool_calls: [{ name: 'submit', arguments: { answer: 'done' } }] };
    }
    const cmd = /^RUN: (.*)$/m.exec(text)?.[1] ?? 'echo step';
    return { tool_calls: [{ name: 'bash', arguments: { cmd } }] };
  };
  let sim: SimProvider;
  let name: string;
  let logDir: string;
  let launchedAt: string;
  let launch: CliResult;
  const errors: Record<string, SampleErrorRecord> = {};
  let moved: SampleRecord;

  beforeAll(async () => {
    sim = await startSimProvider({ latencyMs: 20, script });
    const dir = await tempDir();
    name = uniqueName('stuck');
    logDir = path.join(dir, 'logs');
    const samples = [
      { id: 'tool', input: 'Sample tool.\nRUN: sleep 600', target: 'done' },
      { id: 'model', input: 'Sample model.\nHANG', target: 'done' },
      // Five commands of 2 s: 10 s of steady progress, twice stuck_after, and never stuck.
      { id: 'steady', input: 'Sample steady.\nRUN: sleep 2\nSTEPS 5', target: 'done' },
    ];
    await fs.writeFile(
      path.join(dir, 'data.jsonl'),
      `${samples.map((s) => JSON.stringify(s)).join('\n')}\n`,
    );
    const file = path.join(dir, 'evalset.yaml');
    await fs.writeFile(
      file,
      stringify({
        name,
        model: 'openai-api/sim/agent',
        max_samples: 3,
        tend_interval: 2,
        tasks: [
          {
            name: 'hangs',
            dataset: 'data.jsonl',
            sandbox: BUSYBOX_IMAGE,
            solver: [{ agent: { command_timeout: 600 } }],
            scorer: 'match',
          },
        ],
      }),
    );
    const env = { ...process.env, SIM_BASE_URL: sim.url, SIM_API_KEY: 'sim' };
    launchedAt = new Date().toISOString();
    // stuck_after from the command line: the eval set's, carried to every sample.
    launch = await runCli(
      ['launch', file, '--json', '--log-dir', logDir, '--stuck-after', String(STUCK_AFTER)],
      { env, timeoutMs: CLI_TIMEOUT_MS },
    );
    expectExit(launch, 1);
    for (const error of await openLogStore(logDir).readSampleErrors('hangs')) {
      errors[error.sample_id] = error;
    }
    [moved] = await readSampleRecords(logDir, 'hangs');
  });

  afterAll(async () => {
    releaseHung();
    await sim?.close();
  });

  test('a hung tool call and a hung model call are each stuck twice, then fail StewardSampleStuck', () => {
    expect(Object.keys(errors).sort()).toEqual(['model', 'tool']);
    for (const error of Object.values(errors)) {
      expect(error.error_type).toBe('StewardSampleStuck');
      expect(error.error).toMatch(/no progress for 5 s/);
      expect(error.error_retries).toEqual([
        expect.objectContaining({ error_type: 'StewardSampleStuck' }),
      ]);
    }
  });

  test('each stuck attempt ends within stuck_after plus a margin, and not before', () => {
    for (const error of Object.values(errors)) {
      const first = error.error_retries![0].failed_at;
      // The first attempt started after the launch did; the second on a fresh sandbox.
      expect(seconds(launchedAt, first)).toBeLessThan(STUCK_AFTER + MARGIN_S);
      expect(seconds(first, error.failed_at)).toBeGreaterThanOrEqual(STUCK_AFTER);
      expect(seconds(first, error.failed_at)).toBeLessThan(STUCK_AFTER + MARGIN_S);
      expect(seconds(launchedAt, error.failed_at)).toBeLessThan(2 * STUCK_AFTER + 2 * MARGIN_S);
    }
    // The hung model call was asked again on the second attempt: two calls, both unanswered.
    expect(calls.get('model')).toBe(2);
  });

  test('steady progress for longer than stuck_after is not stuck', () => {
    expect(moved).toMatchObject({ sample_id: 'steady', score: { value: 'C' } });
    expect(moved.error_retries).toBeUndefined();
    expect(seconds(moved.started_at, moved.completed_at)).toBeGreaterThan(2 * STUCK_AFTER);
  });

  test('the summary, `steward status` and the ramp history count the stuck attempts', async () => {
    const summary = JSON.parse(launch.stdout);
    expect(summary.tasks[0]).toMatchObject({ completed: 1, errored: 2, stuck: 4, retries: 2 });
    const status = await runCli(['status', name, '--json']);
    expect(JSON.parse(status.stdout).tasks[0]).toMatchObject({ stuck: 4, retries: 2 });
    const text = await runCli(['status', name]);
    expect(text.stdout).toMatch(/hangs\s+3\s+1\s+2\s+0\s+4\s+2\s+mean/);
    const history = (await fs.readFile(path.join(logDir, 'ramp-history.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as RampHistoryEntry)
      .filter((entry) => entry.kind === 'stuck');
    expect(history.length).toBeGreaterThan(0);
    expect(history.at(-1)).toMatchObject({ task: 'hangs', to: 4 });
    expect(history.at(-1)!.reason).toMatch(/no progress for stuck_after/);
  });

  test('leaves no container or network of ours on the daemon', async () => {
    expect(await leftovers(docker, name)).toEqual([]);
  });
});

describe('retry_on_error: failed attempts run again on a fresh sandbox', () => {
  const calls = new Map<string, number>();
  const script: SimScript = (request) => {
    const { tag, text } = tagOf(request);
    calls.set(tag, (calls.get(tag) ?? 0) + 1);
    if (text.includes('FATAL')) {
      return {
        status: 400,
        body: {
          error: { message: 'bad request', type: 'invalid_request_error', param: null, code: null },
        },
      };
    }
    return { content: 'answer' };
  };
  let sim: SimProvider;
  let name: string;
  let logDir: string;
  let launch: CliResult;

  beforeAll(async () => {
    sim = await startSimProvider({ latencyMs: 20, script });
    const dir = await tempDir();
    name = uniqueName('retries');
    logDir = path.join(dir, 'logs');
    const scorerLog = path.join(dir, 'scorer-calls');
    await fs.writeFile(scorerLog, '');
    // `steward` is a package of the project, as users install it.
    await fs.mkdir(path.join(dir, 'node_modules'));
    await fs.symlink(REPO_ROOT, path.join(dir, 'node_modules', 'steward'));
    // A scorer that fails the first two attempts of each sample. It also leaves a mark in the
    // sandbox, and finds none: each attempt has a fresh one.
    await fs.writeFile(
      path.join(dir, 'evalset.ts'),
      `import { appendFileSync, readFileSync } from 'node:fs';
import { defineEvalSet, generate, type Scorer } from 'steward';

const flaky: Scorer = async (state, _target, ctx) => {
  const id = String(state.sample.id);
  const seen = readFileSync(${JSON.stringify(scorerLog)}, 'utf8').split('\\n').filter((l) => l === id).length;
  appendFileSync(${JSON.stringify(scorerLog)}, id + '\\n');
  const mark = await ctx.sandbox!.exec(['sh', '-c', 'test -e /tmp/mark; r=$?; touch /tmp/mark; exit $r']);
  if (mark.exitCode === 0) return { value: 'I', explanation: 'the sandbox was used before' };
  if (seen < 2) throw new Error('flaky scorer failed attempt ' + (seen + 1) + ' of ' + id);
  return { value: 'C' };
};

const task = (name: string, ids: string[], retries: number) => ({
  name,
  dataset: ids.map((id) => ({ id, input: 'Sample ' + id + '.' + (id.startsWith('fatal') ? ' FATAL' : ''), target: 'answer' })),
  sandbox: ${JSON.stringify(BUSYBOX_IMAGE)},
  solver: [generate()],
  scorer: flaky,
  retry_on_error: retries,
});

export default defineEvalSet({
  name: ${JSON.stringify(name)},
  model: 'openai-api/sim/plain',
  max_samples: 4,
  tasks: [
    task('recovers', ['r1', 'r2'], 2),
    task('gives-up', ['g1'], 1),
    task('fatal', ['fatal1'], 3),
  ],
});
`,
    );
    const env = { ...process.env, SIM_BASE_URL: sim.url, SIM_API_KEY: 'sim' };
    launch = await runCli(['launch', path.join(dir, 'evalset.ts'), '--json', '--log-dir', logDir], {
      env,
      timeoutMs: CLI_TIMEOUT_MS,
    });
    expectExit(launch, 1);
  });

  afterAll(async () => {
    await sim?.close();
  });

  test('recovers a flaky scorer within retry_on_error, each attempt on a fresh sandbox', async () => {
    const records = await readSampleRecords(logDir, 'recovers');
    expect(records.map((r) => r.sample_id).sort()).toEqual(['r1', 'r2']);
    for (const record of records) {
      expect(record.score.value).toBe('C');
      expect(record.error_retries?.map((e) => e.error)).toEqual([
        `flaky scorer failed attempt 1 of ${record.sample_id}`,
        `flaky scorer failed attempt 2 of ${record.sample_id}`,
      ]);
      expect(calls.get(String(record.sample_id))).toBe(3);
    }
    expect(await openLogStore(logDir).readSampleErrors('recovers')).toEqual([]);
  });

  test('stops at its count: the sample errs with its last attempt, the earlier one kept', async () => {
    const [error] = await openLogStore(logDir).readSampleErrors('gives-up');
    expect(error).toMatchObject({
      sample_id: 'g1',
      error: 'flaky scorer failed attempt 2 of g1',
      error_type: 'StewardSampleError',
      error_retries: [expect.objectContaining({ error: 'flaky scorer failed attempt 1 of g1' })],
    });
  });

  test('a model error fatal by class is not retried', async () => {
    const [error] = await openLogStore(logDir).readSampleErrors('fatal');
    expect(error).toMatchObject({ sample_id: 'fatal1', error_type: 'StewardModelFatalError' });
    expect(error.error_retries).toBeUndefined();
    expect(calls.get('fatal1')).toBe(1);
  });

  test('the summary and `steward status` show the attempts run again', async () => {
    const summary = JSON.parse(launch.stdout) as { tasks: Array<Record<string, unknown>> };
    const byName = Object.fromEntries(summary.tasks.map((t) => [t.name, t]));
    expect(byName.recovers).toMatchObject({ completed: 2, errored: 0, retries: 4, stuck: 0 });
    expect(byName['gives-up']).toMatchObject({ completed: 0, errored: 1, retries: 1 });
    expect(byName.fatal).toMatchObject({ completed: 0, errored: 1, retries: 0 });
    const status = await runCli(['status', name, '--json']);
    const tasks = JSON.parse(status.stdout).tasks as Array<{ name: string; retries: number }>;
    expect(Object.fromEntries(tasks.map((t) => [t.name, t.retries]))).toEqual({
      recovers: 4,
      'gives-up': 1,
      fatal: 0,
    });
  });

  test("Inspect's reader sees each sample's failed attempts as error_retries", async () => {
    if (!existsSync(PYTHON)) throw new Error(`Inspect AI's venv is missing (${PYTHON})`);
    const reader = await runCommand(PYTHON, [READER, logDir]);
    if (reader.code !== 0) throw new Error(`Inspect's reader failed:\n${reader.stderr}`);
    const logs = JSON.parse(reader.stdout).dirs[logDir].logs as Array<{
      task: string;
      samples: Array<{ id: string; error: string | null; error_retries: string[] }>;
    }>;
    const samples = Object.fromEntries(
      logs.flatMap((log) => log.samples.map((s) => [s.id, s] as const)),
    );
    expect(samples.r1).toMatchObject({
      error: null,
      error_retries: [expect.any(String), expect.any(String)],
    });
    expect(samples.g1).toMatchObject({
      error: 'flaky scorer failed attempt 2 of g1',
      error_retries: ['flaky scorer failed attempt 1 of g1'],
    });
    expect(samples.fatal1.error_retries).toEqual([]);
  });

  test('leaves no container or network of ours on the daemon', async () => {
    expect(await leftovers(docker, name)).toEqual([]);
  });
});

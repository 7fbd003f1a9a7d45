/**
 * Per-sample limits end to end: `steward launch` on the real dev server, agents in Docker
 * sandboxes, the simulated provider over real HTTP. Each limit trips at its value (messages and
 * tokens exactly, time within a margin, also on a hung tool call and a hung model call); working
 * time leaves out the waits of a saturated account; a limited sample is recorded with its limit,
 * scored, counted by `steward status`, carried into the `.eval` log as Inspect's `limit` (read
 * with Inspect's own reader), and leaves no container or network behind.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { existsSync } from 'node:fs';
import type Docker from 'dockerode';
import { stringify } from 'yaml';
import type { SampleRecord } from '../src/logs/store';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../src/sandbox/image';
import { startSimProvider, type SimProvider } from '../src/sim/provider';
import { completionBody, promptTokens, type SimScript } from '../src/sim/script';
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
/** How late a time limit may end its sample on a loaded 2-core machine (teardown included). */
const MARGIN_S = 20;

const TIME_LIMIT = 4;
const MESSAGE_LIMIT = 7;
const TOKEN_LIMIT = 1_000;
const WORKING_LIMIT = 4;
/** The saturated account's calls: one connection, each call this long. */
const SLOW_CALL_MS = 1_000;

/**
 * An agent that never submits: it runs the sample's `RUN:` command (default `echo step`) turn
 * after turn. A sample whose input says `HANG` gets no answer at all. Each call's tokens are
 * noted by sample, as the provider counts them.
 */
function endlessAgent(tokens: Map<string, number[]>, hang: Promise<void>): SimScript {
  return async (request) => {
    const user = request.messages.find((m) => m.role === 'user');
    const text = typeof user?.content === 'string' ? user.content : '';
    const tag = /^Sample (\S+)\./m.exec(text)?.[1] ?? '?';
    if (text.includes('HANG')) {
      await hang;
      return { content: 'too late' };
    }
    const cmd = /^RUN: (.*)$/m.exec(text)?.[1] ?? 'echo step';
    const answer = { tool_calls: [{ name: 'bash', arguments: { cmd } }] };
    const meta = { serial: 0, created: 0, promptTokens: promptTokens(request) };
    tokens.set(tag, [
      ...(tokens.get(tag) ?? []),
      completionBody(request, answer, meta).usage.total_tokens,
    ]);
    return answer;
  };
}

interface TaskSpec {
  name: string;
  inputs: string[];
  limits?: Record<string, number>;
}

async function writeEvalSet(
  dir: string,
  name: string,
  tasks: TaskSpec[],
  settings: Record<string, unknown>,
): Promise<string> {
  for (const task of tasks) {
    const lines = task.inputs.map((input, i) =>
      JSON.stringify({ id: `${task.name}-${i + 1}`, input, target: 'unreachable' }),
    );
    await fs.writeFile(path.join(dir, `${task.name}.jsonl`), `${lines.join('\n')}\n`);
  }
  const file = path.join(dir, 'evalset.yaml');
  await fs.writeFile(
    file,
    stringify({
      name,
      model: 'openai-api/sim/endless',
      ...settings,
      tasks: tasks.map((task) => ({
        name: task.name,
        dataset: `${task.name}.jsonl`,
        sandbox: BUSYBOX_IMAGE,
        solver: [{ agent: { command_timeout: 600 } }],
        scorer: 'match',
        ...task.limits,
      })),
    }),
  );
  return file;
}

const seconds = (record: SampleRecord): number =>
  (Date.parse(record.completed_at) - Date.parse(record.started_at)) / 1000;
const roles = (record: SampleRecord): string[] => record.messages.map((m) => m.role);
const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);

let docker: Docker;
let releaseHung: () => void;
const hung = new Promise<void>((resolve) => (releaseHung = resolve));

beforeAll(async () => {
  docker = await requireDocker();
  await ensureBusyboxImage(docker);
});

afterAll(() => releaseHung());

describe('limits set per task: message, token and time (a hung tool call, a hung model call)', () => {
  const tokens = new Map<string, number[]>();
  let sim: SimProvider;
  let name: string;
  let logDir: string;
  let launch: CliResult;
  const records: Record<string, SampleRecord> = {};

  beforeAll(async () => {
    sim = await startSimProvider({ latencyMs: 20, script: endlessAgent(tokens, hung) });
    const dir = await tempDir();
    name = uniqueName('limits');
    logDir = path.join(dir, 'logs');
    const file = await writeEvalSet(
      dir,
      name,
      [
        { name: 'messages', inputs: ['Sample m.'], limits: { message_limit: MESSAGE_LIMIT } },
        { name: 'tokens', inputs: ['Sample t.'], limits: { token_limit: TOKEN_LIMIT } },
        {
          name: 'hung-tool',
          inputs: ['Sample ht.\nRUN: sleep 600'],
          limits: { time_limit: TIME_LIMIT },
        },
        { name: 'hung-model', inputs: ['Sample hm.\nHANG'], limits: { time_limit: TIME_LIMIT } },
      ],
      { max_samples: 4 },
    );
    const env = { ...process.env, SIM_BASE_URL: sim.url, SIM_API_KEY: 'sim' };
    launch = await runCli(['launch', file, '--json', '--log-dir', logDir], {
      env,
      timeoutMs: CLI_TIMEOUT_MS,
    });
    expectExit(launch, 0);
    for (const task of ['messages', 'tokens', 'hung-tool', 'hung-model']) {
      const [record] = await readSampleRecords(logDir, task);
      records[task] = record;
    }
  });

  afterAll(async () => {
    releaseHung();
    await sim?.close();
  });

  test('every sample completes, scored, and the summary counts one limited sample a task', () => {
    const summary = JSON.parse(launch.stdout);
    expect(summary.status).toBe('success');
    for (const task of summary.tasks) {
      expect(task).toMatchObject({ samples: 1, completed: 1, errored: 0, limited: 1 });
    }
    for (const record of Object.values(records)) expect(record.score.value).toBe('I');
  });

  test('message_limit: the conversation stops at exactly that many messages', () => {
    const record = records.messages;
    expect(record.limit).toEqual({ type: 'message', limit: MESSAGE_LIMIT });
    expect(record.messages).toHaveLength(MESSAGE_LIMIT);
    // system, user, then bash call and result; the third call's result would have made 8.
    expect(roles(record)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
  });

  test('token_limit: no call once reached; the call past it counts, its reply is dropped', () => {
    const record = records.tokens;
    const calls = tokens.get('t') ?? [];
    expect(record.limit).toEqual({ type: 'token', limit: TOKEN_LIMIT });
    expect(record.usage.total_tokens).toBe(sum(calls));
    // Every call but the last was made under the limit...
    expect(sum(calls.slice(0, -1))).toBeLessThan(TOKEN_LIMIT);
    // ...and the last reached it (then kept) or went past it (then dropped).
    const total = sum(calls);
    expect(total).toBeGreaterThanOrEqual(TOKEN_LIMIT);
    const replies = roles(record).filter((r) => r === 'assistant').length;
    expect(replies).toBe(total > TOKEN_LIMIT ? calls.length - 1 : calls.length);
  });

  test('time_limit interrupts a hung tool call', () => {
    const record = records['hung-tool'];
    expect(record.limit).toEqual({ type: 'time', limit: TIME_LIMIT });
    // The bash call was made; its result never came (`sleep 600` was killed).
    expect(roles(record)).toEqual(['system', 'user', 'assistant']);
    expect(seconds(record)).toBeGreaterThanOrEqual(TIME_LIMIT);
    expect(seconds(record)).toBeLessThan(TIME_LIMIT + MARGIN_S);
  });

  test('time_limit interrupts a hung model call', () => {
    const record = records['hung-model'];
    expect(record.limit).toEqual({ type: 'time', limit: TIME_LIMIT });
    expect(roles(record)).toEqual(['system', 'user']);
    expect(seconds(record)).toBeGreaterThanOrEqual(TIME_LIMIT);
    expect(seconds(record)).toBeLessThan(TIME_LIMIT + MARGIN_S);
  });

  test('`steward status` counts the limited samples of each task', async () => {
    const status = await runCli(['status', name, '--json']);
    expectExit(status, 0);
    const tasks = JSON.parse(status.stdout).tasks as Array<{ name: string; limited: number }>;
    expect(tasks.map((t) => [t.name, t.limited]).sort()).toEqual(
      ['hung-model', 'hung-tool', 'messages', 'tokens'].map((t) => [t, 1]),
    );
    const text = await runCli(['status', name]);
    expect(text.stdout).toMatch(/\blimited\b/);
  });

  test("Inspect's reader sees each sample's limit, in the sample and in its summary", async () => {
    if (!existsSync(PYTHON)) throw new Error(`Inspect AI's venv is missing (${PYTHON})`);
    const reader = await runCommand(PYTHON, [READER, logDir]);
    if (reader.code !== 0) throw new Error(`Inspect's reader failed:\n${reader.stderr}`);
    const out = JSON.parse(reader.stdout) as {
      dirs: Record<
        string,
        {
          logs: Array<{
            task: string;
            samples: Array<{ limit: unknown }>;
            summary_limits: Record<string, string | null>;
          }>;
        }
      >;
    };
    const logs = out.dirs[logDir].logs;
    const byTask = Object.fromEntries(logs.map((log) => [log.task, log]));
    const expected: Record<string, { type: string; limit: number }> = {
      messages: { type: 'message', limit: MESSAGE_LIMIT },
      tokens: { type: 'token', limit: TOKEN_LIMIT },
      'hung-tool': { type: 'time', limit: TIME_LIMIT },
      'hung-model': { type: 'time', limit: TIME_LIMIT },
    };
    for (const [task, limit] of Object.entries(expected)) {
      expect(byTask[task].samples.map((s) => s.limit)).toEqual([limit]);
      expect(byTask[task].summary_limits).toEqual({ [`${task}-1`]: limit.type });
    }
  });

  test('leaves no container or network of ours on the daemon', async () => {
    expect(await leftovers(docker, name)).toEqual([]);
  });
});

describe('working_limit for the whole eval set, on an account saturated by its own samples', () => {
  const tokens = new Map<string, number[]>();
  let sim: SimProvider;
  let name: string;
  let records: SampleRecord[];

  beforeAll(async () => {
    sim = await startSimProvider({ latencyMs: SLOW_CALL_MS, script: endlessAgent(tokens, hung) });
    const dir = await tempDir();
    name = uniqueName('working');
    const logDir = path.join(dir, 'logs');
    const inputs = ['Sample w1.', 'Sample w2.', 'Sample w3.'];
    const file = await writeEvalSet(dir, name, [{ name: 'saturated', inputs }], {
      max_samples: 3,
    });
    const env = { ...process.env, SIM_BASE_URL: sim.url, SIM_API_KEY: 'sim' };
    // The limit comes from the command line: an eval set's limit, carried to every sample.
    const launch = await runCli(
      [
        'launch',
        file,
        '--json',
        '--log-dir',
        logDir,
        '--max-connections',
        '1',
        '--working-limit',
        String(WORKING_LIMIT),
      ],
      { env, timeoutMs: CLI_TIMEOUT_MS },
    );
    expectExit(launch, 0);
    records = await readSampleRecords(logDir, 'saturated');
  });

  afterAll(async () => {
    await sim?.close();
  });

  test('each sample stops at its working time, well after as much wall clock', () => {
    expect(records).toHaveLength(3);
    for (const record of records) {
      expect(record.limit).toEqual({ type: 'working', limit: WORKING_LIMIT });
      // Calls of 1 s on one connection shared by three samples: each waits about 2 s a call.
      // Working 4 s is about 4 calls (and their commands), not the 1 or 2 that 4 s of wall
      // clock would allow.
      const calls = tokens.get(String(record.sample_id).replace('saturated-', 'w'))?.length ?? 0;
      expect(calls).toBeGreaterThanOrEqual(3);
      expect(calls).toBeLessThanOrEqual(6);
      expect(seconds(record)).toBeGreaterThan(WORKING_LIMIT * 1.75);
      expect(seconds(record)).toBeLessThan(3 * (WORKING_LIMIT + 2) + MARGIN_S);
    }
  });

  test('leaves no container or network of ours on the daemon', async () => {
    expect(await leftovers(docker, name)).toEqual([]);
  });
});

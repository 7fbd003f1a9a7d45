/**
 * Inspect-readable logs, checked by Inspect itself: the hello, agentic and ramp-demo examples run
 * once each through the CLI, then Inspect's own reader (`read_eval_log`, `read_eval_log_samples`,
 * `read_eval_set_info`, one Python process for everything) reads every `.eval` they wrote, and
 * `inspect view` serves each log dir to headless Chromium. Samples, ids, epochs, scores and metrics
 * must be Steward's records exactly. A `.eval` copied while ramp-demo ran must read as `started`
 * with part of the samples: the running task rewrites it as it goes.
 *
 * Needs the Inspect venv (scripts/peers/setup-inspect.sh, which .ci/run calls), Docker, and
 * Chromium at /usr/bin/chromium (or STEWARD_CHROMIUM). Under CI=true a missing one fails the test.
 */
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { parse, stringify } from 'yaml';
import type { SampleErrorRecord, TaskSummary } from '../src/logs/store';
import { ensureBusyboxImage } from '../src/sandbox/image';
import { startSimProvider, type SimProvider } from '../src/sim/provider';
import { INSPECT_LOG_PATCH } from '../src/workflows/inspect-log';
import { evalSetWorkflowId, taskWorkflowId } from '../src/workflows/types';
import { requireDocker } from './fixtures/docker/docker';
import { REPO_ROOT, runCli, runCommand, tempDir, uniqueName } from './helpers/cli';
import { replayAllRuns } from './helpers/replay';
import { readSampleRecords } from './helpers/results';

const PYTHON =
  process.env.STEWARD_INSPECT_PYTHON ??
  path.join(REPO_ROOT, '.tools', 'inspect-venv', 'bin', 'python');
const CHROMIUM = process.env.STEWARD_CHROMIUM ?? '/usr/bin/chromium';
const READER = path.join(__dirname, 'helpers', 'read_inspect_logs.py');
const VIEWER = path.join(__dirname, 'helpers', 'inspect-view.mts');
const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts');

const missing = [
  existsSync(PYTHON)
    ? undefined
    : `Inspect AI's venv (${PYTHON}; run scripts/peers/setup-inspect.sh)`,
  existsSync(CHROMIUM) ? undefined : `Chromium (${CHROMIUM}; apt-get install chromium)`,
].filter((m): m is string => m !== undefined);
// Off CI a developer without the venv or Chromium is told, loudly; on CI it is a failure.
const describeIfReady =
  missing.length === 0 || process.env.CI === 'true' ? describe : describe.skip;
if (missing.length > 0 && process.env.CI !== 'true') {
  console.warn(`\n!!! test/inspect-logs.test.ts SKIPPED: missing ${missing.join(' and ')}\n`);
}

interface Run {
  example: string;
  name: string;
  logDir: string;
  tasks: string[];
}

/** What read_inspect_logs.py prints. */
interface SampleView {
  id: string | number;
  epoch: number;
  input: string | null;
  target: string | string[];
  metadata: Record<string, unknown>;
  scores: Record<string, string | number>;
  answers: Record<string, string | null>;
  roles: string[];
  tool_calls: Array<{ function: string; arguments: Record<string, unknown> }>;
  tool_functions: Array<string | null>;
  completion: string;
  choices: number;
  usage: Record<string, number>;
  started_at: string | null;
  completed_at: string | null;
  total_time: number | null;
  error: string | null;
}
interface LogView {
  file: string;
  status: string;
  task: string;
  task_id: string;
  eval_set_id: string | null;
  model: string;
  epochs: number;
  dataset_samples: number;
  sample_ids: Array<string | number>;
  plan: string[];
  scorers: string[];
  results: {
    total_samples: number;
    completed_samples: number;
    scores: Array<{ name: string; scored_samples: number; metrics: Record<string, number> }>;
  } | null;
  stats: { started_at: string; completed_at: string; model_usage: Record<string, number> };
  error: string | null;
  reductions: Array<{ scorer: string; reducer: string; samples: number }> | null;
  samples: SampleView[];
  streamed: Array<[string | number, number]>;
}
interface ReaderOutput {
  dirs: Record<
    string,
    {
      eval_set: {
        eval_set_id: string;
        tasks: Array<{ name: string; task_id: string; sequence: number }>;
      } | null;
      logs: LogView[];
    }
  >;
  files: Record<string, LogView>;
}

/** Copies an example (and its data) under a unique name, with `edit` applied to its YAML. */
async function copyExample(
  example: string,
  edit: (definition: Record<string, unknown>, dir: string) => Promise<void> = async () => undefined,
): Promise<{ file: string; name: string; dir: string }> {
  const dir = await tempDir('steward-inspect-');
  await fs.cp(path.join(REPO_ROOT, 'examples', 'data'), path.join(dir, 'data'), {
    recursive: true,
  });
  const definition = parse(
    await fs.readFile(path.join(REPO_ROOT, 'examples', `${example}.yaml`), 'utf8'),
  ) as Record<string, unknown>;
  const name = uniqueName(example);
  definition.name = name;
  await edit(definition, dir);
  const file = path.join(dir, `${example}.yaml`);
  await fs.writeFile(file, stringify(definition));
  return { file, name, dir };
}

async function launch(file: string, logDir: string, env: NodeJS.ProcessEnv): Promise<void> {
  const result = await runCli(['launch', file, '--log-dir', logDir, '--tend-interval', '1'], {
    env,
  });
  if (result.code !== 0) {
    throw new Error(`launch ${file} exited ${result.code}:\n${result.stdout}\n${result.stderr}`);
  }
}

/** Copies the task's `.eval` each time it changes, until `done` settles; returns the copies. */
async function watchEvalFile(logDir: string, into: string, done: Promise<void>): Promise<string[]> {
  let finished = false;
  void done.finally(() => (finished = true)).catch(() => undefined);
  const copies: string[] = [];
  let lastMtime = 0;
  while (!finished) {
    const names = (await fs.readdir(logDir).catch(() => [] as string[])).filter((n) =>
      n.endsWith('.eval'),
    );
    for (const name of names) {
      const stat = await fs.stat(path.join(logDir, name)).catch(() => undefined);
      if (stat && stat.mtimeMs !== lastMtime) {
        lastMtime = stat.mtimeMs;
        const copy = path.join(into, `running-${copies.length}.eval`);
        await fs.copyFile(path.join(logDir, name), copy);
        copies.push(copy);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await done;
  return copies;
}

async function readJson<T>(file: string): Promise<T> {
  return JSON.parse(await fs.readFile(file, 'utf8')) as T;
}

describeIfReady('Inspect AI reads and shows what the examples wrote', () => {
  const runs: Run[] = [];
  let running: string[] = [];
  let read: ReaderOutput;
  let pages: Record<string, string> = {};
  /** Why the browser check could not run, if it could not: only the browser's tests fail. */
  let browserFailure: Error | undefined;
  const page = (name: string): string => {
    if (browserFailure) throw browserFailure;
    return pages[name];
  };
  let sim: SimProvider | undefined;

  beforeAll(async () => {
    if (missing.length > 0) throw new Error(`CI needs ${missing.join(' and ')}`);
    const docker = await requireDocker();
    await ensureBusyboxImage(docker);
    sim = await startSimProvider({ latencyMs: 150, jitterMs: 100 });
    const env = { ...process.env, SIM_BASE_URL: sim.url, SIM_API_KEY: 'sim' };

    const examples = [
      { example: 'hello', tasks: ['arithmetic', 'capitals'] },
      { example: 'agentic', tasks: ['write-file', 'shell-arithmetic'] },
    ];
    for (const { example, tasks } of examples) {
      const copy = await copyExample(example);
      const run = { example, name: copy.name, logDir: path.join(copy.dir, 'logs'), tasks };
      await launch(copy.file, run.logDir, env);
      runs.push(run);
    }

    // ramp-demo's tasks and solver chain, with 2 epochs where it has 15 (a demo runs minutes), and
    // every 8th target changed, so that its accuracy is 0.875 and not 1. Samples are pinned at 20:
    // 400 samples of four ~150 ms calls then take about 30 s here, time for several rewrites of the
    // log (on the ramp they took about 10 s: 3 or 4 snapshots here, 1 in a CI run).
    const ramp = await copyExample('ramp-demo', async (definition, dir) => {
      definition.max_samples = 20;
      (definition.tasks as Array<Record<string, unknown>>)[0].epochs = 2;
      const file = path.join(dir, 'data', 'ramp-demo.jsonl');
      const lines = (await fs.readFile(file, 'utf8')).trim().split('\n');
      const edited = lines.map((line, i) => {
        const sample = JSON.parse(line) as { target: string };
        if ((i + 1) % 8 === 0) sample.target = `${sample.target}0`;
        return JSON.stringify(sample);
      });
      await fs.writeFile(file, `${edited.join('\n')}\n`);
    });
    const rampRun = {
      example: 'ramp-demo',
      name: ramp.name,
      logDir: path.join(ramp.dir, 'logs'),
      tasks: ['questions'],
    };
    const copies = path.join(ramp.dir, 'copies');
    await fs.mkdir(copies);
    running = await watchEvalFile(rampRun.logDir, copies, launch(ramp.file, rampRun.logDir, env));
    runs.push(rampRun);

    const reader = await runCommand(PYTHON, [
      READER,
      ...runs.map((r) => r.logDir),
      ...running.flatMap((f) => ['--file', f]),
    ]);
    if (reader.code !== 0) throw new Error(`Inspect's reader failed:\n${reader.stderr}`);
    read = JSON.parse(reader.stdout) as ReaderOutput;

    pages = await renderViews(runs).catch((err: Error) => {
      browserFailure = err;
      return {};
    });
  });

  afterAll(async () => {
    await sim?.close();
  });

  /** Each log dir served by `inspect view` and loaded by Chromium: the page's text, and a screenshot. */
  async function renderViews(all: Run[]): Promise<Record<string, string>> {
    const views = await Promise.all(
      all.map(async (run) => {
        // The page is read once it shows every task's sample count and score, not just its name.
        const shown = await Promise.all(
          run.tasks.map(async (task) => {
            const summary = await readJson<TaskSummary>(
              path.join(run.logDir, task, 'summary.json'),
            );
            return {
              first: task,
              contains: [String(summary.completed), viewerScore(summary.metrics!.accuracy!)],
            };
          }),
        );
        // One log opens on itself: its metrics and "<n> Samples"; several, the set's list.
        const [only] = shown;
        const single = {
          expect: [only.first, `${only.contains[0]} Samples`, only.contains[1]],
        };
        const list = { expect: run.tasks, rows: shown.map((row) => ({ ...row, within: 8 })) };
        return {
          name: run.example,
          logDir: run.logDir,
          ...(run.tasks.length === 1 ? single : list),
          ...(run.example === 'agentic'
            ? {
                sample: {
                  task: 'shell-arithmetic',
                  id: 'times',
                  expect: ['Sample times', 'The shell says 42.', 'submit'],
                },
              }
            : {}),
        };
      }),
    );
    const request = { python: PYTHON, chromium: CHROMIUM, artifacts: ARTIFACTS, views };
    const tsx = path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
    const shown = await runCommand(tsx, [VIEWER, JSON.stringify(request)]);
    if (shown.code !== 0) throw new Error(`the browser check failed:\n${shown.stderr}`);
    // A page that needed a reload says so here.
    if (shown.stderr.trim()) console.log(`the browser check said:\n${shown.stderr}`);
    return JSON.parse(shown.stdout) as Record<string, string>;
  }

  const logOf = (run: Run, task: string): LogView => {
    const log = read.dirs[run.logDir].logs.find((l) => l.task === task);
    if (!log) throw new Error(`no .eval for task ${task} in ${run.logDir}`);
    return log;
  };
  const runOf = (example: string): Run => runs.find((r) => r.example === example)!;
  test('each log dir holds one .eval per task and an eval-set.json naming them, with one eval set id', () => {
    for (const run of runs) {
      const dir = read.dirs[run.logDir];
      expect(dir.logs.map((l) => l.task).sort()).toEqual([...run.tasks].sort());
      expect(dir.eval_set).not.toBeNull();
      expect(dir.eval_set!.tasks.map((t) => t.name)).toEqual(run.tasks);
      for (const log of dir.logs) {
        expect(log.eval_set_id).toBe(dir.eval_set!.eval_set_id);
        expect(dir.eval_set!.tasks.find((t) => t.name === log.task)!.task_id).toBe(log.task_id);
        // Named as Inspect names a log: <created>_<task>_<task_id>.eval.
        expect(path.basename(log.file)).toMatch(
          new RegExp(
            `^\\d{4}-\\d{2}-\\d{2}T\\d{2}-\\d{2}-\\d{2}-00-00_${log.task}_${log.task_id}\\.eval$`,
          ),
        );
      }
    }
  });

  test.each([
    ['hello', 'arithmetic'],
    ['hello', 'capitals'],
    ['agentic', 'write-file'],
    ['agentic', 'shell-arithmetic'],
    ['ramp-demo', 'questions'],
  ])('%s/%s: samples, ids, epochs and scores are the records, exactly', async (example, task) => {
    const run = runOf(example);
    const log = logOf(run, task);
    const records = await readSampleRecords(run.logDir, task);
    const summary = await readJson<TaskSummary>(path.join(run.logDir, task, 'summary.json'));
    expect(log.status).toBe('success');
    expect(log.samples).toHaveLength(records.length);
    expect(log.streamed).toHaveLength(records.length);
    const key = (id: string | number, epoch: number) => `${typeof id}:${id}:${epoch}`;
    expect(log.samples.map((s) => key(s.id, s.epoch)).sort()).toEqual(
      records.map((r) => key(r.sample_id, r.epoch)).sort(),
    );
    expect(log.streamed.map(([id, epoch]) => key(id, epoch)).sort()).toEqual(
      records.map((r) => key(r.sample_id, r.epoch)).sort(),
    );
    const byKey = new Map(records.map((r) => [key(r.sample_id, r.epoch), r]));
    for (const sample of log.samples) {
      const record = byKey.get(key(sample.id, sample.epoch))!;
      expect(sample.scores).toEqual({ [record.scorer]: record.score.value });
      expect(sample.answers[record.scorer]).toBe(record.score.answer ?? null);
      expect(sample.target).toEqual(record.target);
      expect(sample.completion).toBe(record.output);
      expect(sample.roles).toEqual(record.messages.map((m) => m.role));
      expect(sample.usage).toEqual({ [record.model]: record.usage.total_tokens });
      expect(Date.parse(sample.started_at!)).toBe(Date.parse(record.started_at));
      expect(Date.parse(sample.completed_at!)).toBe(Date.parse(record.completed_at));
      expect(sample.total_time).toBeCloseTo(
        (Date.parse(record.completed_at) - Date.parse(record.started_at)) / 1000,
        3,
      );
      expect(sample.error).toBeNull();
    }
    // The dataset's ids, each epoch of each present.
    expect(log.epochs * log.sample_ids.length).toBe(summary.samples);
    expect(log.dataset_samples).toBe(log.sample_ids.length);
    // The summary's numbers, exactly.
    expect(log.results).toEqual({
      total_samples: summary.samples,
      completed_samples: summary.completed,
      scores: [
        {
          name: summary.scorer,
          scored_samples: summary.metrics!.samples_scored,
          metrics: { accuracy: summary.metrics!.accuracy, stderr: summary.metrics!.stderr },
        },
      ],
    });
    expect(log.reductions).toEqual([
      { scorer: summary.scorer, reducer: 'mean', samples: summary.metrics!.samples_scored },
    ]);
    expect(log.stats.model_usage).toEqual({
      [summary.model]: records.reduce((sum, r) => sum + r.usage.total_tokens, 0),
    });
    expect(Date.parse(log.stats.completed_at)).toBe(Date.parse(summary.completed_at));
  });

  test("ramp-demo: numeric ids stay numbers, the accuracy is the records' (0.875), and the plan is its chain", () => {
    const log = logOf(runOf('ramp-demo'), 'questions');
    expect(log.sample_ids.slice(0, 3)).toEqual([1, 2, 3]);
    expect(log.results!.scores[0].metrics.accuracy).toBe(0.875);
    expect(log.plan).toEqual(['generate', 'generate', 'generate', 'generate']);
    expect(log.scorers).toEqual(['match']);
    const wrong = log.samples.find((s) => s.id === 8)!;
    expect(wrong.scores).toEqual({ match: 'I' });
  });

  test('agentic: tool calls keep their function and parsed arguments, tool results their function', () => {
    const log = logOf(runOf('agentic'), 'shell-arithmetic');
    for (const sample of log.samples) {
      expect(sample.tool_calls).toEqual([
        { function: 'bash', arguments: { cmd: 'echo $((6 * 7))' } },
        { function: 'submit', arguments: { answer: '42' } },
      ]);
      expect(sample.tool_functions[0]).toBe('bash');
      expect(sample.scores).toEqual({ match: 'C' });
    }
    expect(logOf(runOf('agentic'), 'write-file').plan).toEqual(['agent']);
  });

  test('while ramp-demo ran, its .eval read as started with the samples done so far', () => {
    const views = running.map((f) => read.files[f]);
    const partial = views.filter(
      (v) => v.status === 'started' && v.streamed.length > 0 && v.streamed.length < 400,
    );
    // Rewritten as it went: several snapshots, each with more samples than the last.
    expect(partial.length).toBeGreaterThanOrEqual(2);
    const counts = partial.map((v) => v.streamed.length);
    expect([...counts].sort((a, b) => a - b)).toEqual(counts);
    for (const view of partial) {
      expect(view.results).toBeNull();
      expect(view.sample_ids).toHaveLength(200);
    }
  });

  test.each([
    ['hello', 'arithmetic'],
    ['hello', 'capitals'],
    ['agentic', 'write-file'],
    ['agentic', 'shell-arithmetic'],
    ['ramp-demo', 'questions'],
  ])(
    'inspect view in Chromium shows %s/%s with its sample count and accuracy',
    async (example, task) => {
      const run = runOf(example);
      const summary = await readJson<TaskSummary>(path.join(run.logDir, task, 'summary.json'));
      const text = page(example);
      const lines = text.split('\n').map((l) => l.trim());
      if (run.tasks.length === 1) {
        // A log dir of one log opens on that log: its name, its metrics, its sample count.
        expect(lines).toContain(task);
        const accuracy = lines.indexOf('ACCURACY');
        expect(lines.slice(accuracy, accuracy + 5)).toContain(
          viewerScore(summary.metrics!.accuracy!),
        );
        expect(lines).toContain(`${summary.completed} Samples`);
        return;
      }
      // The set's list: the task's row, its name then its columns (model, args, tags, score,
      // completed, samples...).
      const row = lines.slice(lines.indexOf(task), lines.indexOf(task) + 9);
      expect(row[0]).toBe(task);
      expect(row).toContain(String(summary.completed));
      expect(row).toContain(viewerScore(summary.metrics!.accuracy!));
    },
  );

  test("an agentic sample's page shows its conversation: the bash call, its result, the submit", () => {
    const lines = page('agentic/sample')
      .split('\n')
      .map((l) => l.trim());
    const from = lines.indexOf('USER');
    expect(from).toBeGreaterThan(0);
    // In the viewer's order: the user's input, the bash call and its output, the assistant's
    // text, the submit call.
    const order = [
      'Use the shell to compute 6 × 7, and submit the number.',
      'bash',
      'echo $((6 * 7))',
      '42',
      'The shell says 42.',
      'submit',
    ].map((t) => lines.indexOf(t, from));
    expect(order.every((i) => i > from)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });

  test("ramp-demo's task asked for rewrites as it ran, guarded by its patch, and its history replays", async () => {
    const client = new Client({
      connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS }),
      namespace: process.env.TEMPORAL_NAMESPACE,
    });
    try {
      const id = taskWorkflowId(evalSetWorkflowId(runOf('ramp-demo').name), 'questions');
      const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
      const patches = events.flatMap((e) =>
        (e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads ?? []).map((p) =>
          Buffer.from(p.data ?? []).toString(),
        ),
      );
      expect(patches.join('\n')).toContain(`"id":"${INSPECT_LOG_PATCH}"`);
      // Bounded: more than one rewrite while 400 samples ran, far fewer than one per sample.
      const rewrites = events.filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'writeInspectLog',
      ).length;
      expect(rewrites).toBeGreaterThanOrEqual(2);
      expect(rewrites).toBeLessThanOrEqual(40);
      expect(await replayAllRuns(client, [id])).toBeGreaterThanOrEqual(1);
    } finally {
      await client.connection.close();
    }
  });

  test('an errored sample reads as an error, with the dataset input it failed on', async () => {
    // Written from records by `steward logs export`: a task whose summary counts one failure.
    const run = runOf('hello');
    const task = 'arithmetic';
    const errorRecord: SampleErrorRecord = {
      version: 1,
      eval_set: run.name,
      task,
      sample_id: 'add-1',
      epoch: 1,
      input: 'What is 1 + 1?',
      target: '2',
      error: 'the provider answered 400: bad request',
      error_type: 'StewardModelFatalError',
      failed_at: new Date().toISOString(),
      worker: { pid: 1, host: 'h' },
      attempt: 1,
    };
    const dir = await tempDir('steward-inspect-export-');
    await fs.cp(run.logDir, dir, { recursive: true });
    await fs.rm(path.join(dir, task, 'samples', 'add-1.e1.json'));
    await fs.mkdir(path.join(dir, task, 'errors'), { recursive: true });
    await fs.writeFile(
      path.join(dir, task, 'errors', 'add-1.e1.json'),
      JSON.stringify(errorRecord),
    );
    const summaryFile = path.join(dir, task, 'summary.json');
    const summary = await readJson<TaskSummary>(summaryFile);
    await fs.writeFile(summaryFile, JSON.stringify({ ...summary, completed: 39, errored: 1 }));
    for (const name of await fs.readdir(dir))
      if (name.endsWith('.eval')) await fs.rm(path.join(dir, name));

    const notALogDir = await runCli(['logs', 'export', await tempDir()]);
    expect(notALogDir.code).toBe(2);
    expect(notALogDir.stderr).toContain('holds no Steward task records');
    const exported = await runCli(['logs', 'export', dir]);
    expect(exported.code).toBe(0);
    expect(exported.stdout).toMatch(/_arithmetic_\w+\.eval {2}error, 40 samples/);
    expect(exported.stdout).toMatch(/_capitals_\w+\.eval {2}success, 40 samples/);
    const reader = await runCommand(PYTHON, [READER, dir]);
    expect(reader.stderr).toBe('');
    const out = JSON.parse(reader.stdout) as ReaderOutput;
    const log = out.dirs[dir].logs.find((l) => l.task === task)!;
    expect(log.status).toBe('error');
    expect(log.error).toContain('1 of 40 samples did not complete');
    const failed = log.samples.find((s) => s.id === 'add-1')!;
    expect(failed.error).toBe(errorRecord.error);
    expect(failed.input).toBe('What is 1 + 1?');
    expect(failed.scores).toEqual({});
    // The same ids and names as the files the run wrote: export rebuilds them, it does not fork.
    const original = read.dirs[run.logDir];
    expect(out.dirs[dir].eval_set).toEqual(original.eval_set);
    expect(log.task_id).toBe(logOf(run, task).task_id);
    expect(path.basename(log.file)).toBe(path.basename(logOf(run, task).file));
  });
});

/** A score as the viewer's task list prints it. */
function viewerScore(value: number): string {
  return value === 1 ? '1.0' : String(Number(value.toFixed(3)));
}

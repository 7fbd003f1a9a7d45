/**
 * An ended task whose definition now names other reducers or metrics is scored again from its
 * records (what `steward launch` does when it finds every sample recorded): its summary, the eval
 * set's summary and its `.eval` log, which Inspect's `read_eval_log` reads back. No Temporal.
 */
import { spawnSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DEFAULT_SCORING, type Scoring } from '../src/core/reducers';
import type { Sample } from '../src/definition/types';
import { taskMetrics } from '../src/eval/metrics';
import { writeTaskInspectLog } from '../src/logs/inspect/write';
import { rescoreEndedTasks } from '../src/logs/rescore';
import { openLogStore, type LogStore, type SampleRecord } from '../src/logs/store';

const PYTHON =
  process.env.STEWARD_INSPECT_PYTHON ??
  path.join(__dirname, '..', '.tools', 'inspect-venv', 'bin', 'python');
const SCORER = path.join(__dirname, 'helpers', 'inspect_scores.py');

const dataset: Sample[] = [
  { id: 1, input: 'q1', target: 't' },
  { id: 2, input: 'q2', target: 't' },
];
// Sample 1 right once of two, sample 2 never.
const epochs = [
  { sampleId: 1, epoch: 1, value: 'I' as const },
  { sampleId: 1, epoch: 2, value: 'C' as const },
  { sampleId: 2, epoch: 1, value: 'I' as const },
  { sampleId: 2, epoch: 2, value: 'I' as const },
];

function record(e: (typeof epochs)[number], task: string): SampleRecord {
  return {
    version: 1,
    eval_set: 'set',
    task,
    sample_id: e.sampleId,
    epoch: e.epoch,
    input: 'q',
    target: 't',
    messages: [{ role: 'user', content: 'q' }],
    output: 'a',
    score: { value: e.value },
    scorer: 'match',
    usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 },
    model: 'mockllm/model',
    started_at: '2026-12-01T10:01:00.000Z',
    completed_at: '2026-12-01T10:01:01.000Z',
    worker: { pid: 1, host: 'h' },
    attempt: 1,
  };
}

/** A task that ended under the default scoring: records, summary, `.eval`. */
async function endedTask(store: LogStore, task: string): Promise<void> {
  await store.writeTaskIdentity({
    version: 1,
    eval_set: 'set',
    task,
    identity: {
      model: 'mockllm/model',
      model_args: {},
      solver: ['generate'],
      scorer: { match: {} },
      dataset: { samples: 2, sha256: 'abc' },
      epochs: 2,
      config: {},
      sandbox: null,
    },
    recorded_at: '2026-12-01T10:00:00.000Z',
  });
  for (const e of epochs) await store.writeSample(record(e, task));
  await store.writeTaskSummary({
    version: 1,
    eval_set: 'set',
    name: task,
    samples: 4,
    completed: 4,
    errored: 0,
    resumed: 0,
    metrics: taskMetrics(epochs),
    scorer: 'match',
    model: 'mockllm/model',
    completed_at: '2026-12-01T10:05:00.000Z',
  });
  await writeTaskInspectLog(store, task, { ended: true, scoring: DEFAULT_SCORING });
}

describe('rescoreEndedTasks', () => {
  let dir: string;
  let store: LogStore;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(tmpdir(), 'steward-rescore-'));
    store = openLogStore(dir);
    await endedTask(store, 'changed');
    await endedTask(store, 'same');
    await store.writeEvalSetSummary({
      version: 1,
      eval_set: 'set',
      status: 'success',
      log_dir: dir,
      completed_at: '2026-12-01T10:06:00.000Z',
      tasks: await Promise.all(
        ['changed', 'same'].map(async (name) => {
          const {
            version: _v,
            eval_set: _e,
            scorer: _s,
            model: _m,
            completed_at: _c,
            ...result
          } = (await store.readTaskSummary(name))!;
          return result;
        }),
      ),
    });
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  test('rewrites the summaries and the log of a task whose reducers changed, and no other', async () => {
    const scoring: Scoring = { reducers: ['pass_at_2', 'max'], metrics: ['mean'] };
    const sameBefore = await store.readTaskSummary('same');

    const rescored = await rescoreEndedTasks(store, [
      { name: 'changed', dataset, scoring },
      { name: 'same', dataset, scoring: DEFAULT_SCORING },
    ]);

    expect(rescored).toEqual(['changed']);
    // pass_at_2: sample 1 (one wrong of two) 1, sample 2 0; max: C and I.
    const expected = taskMetrics(epochs, scoring);
    expect(expected.scores.map((s) => [s.reducer, s.metrics.mean])).toEqual([
      ['pass_at_2', 0.5],
      ['max', 0.5],
    ]);
    expect((await store.readTaskSummary('changed'))?.metrics).toEqual(expected);
    expect(await store.readTaskSummary('same')).toEqual(sameBefore);
    const evalSet = await store.readEvalSetSummary();
    expect(evalSet?.tasks.map((t) => [t.name, t.metrics?.reducer])).toEqual([
      ['changed', 'pass_at_2'],
      ['same', 'mean'],
    ]);

    const [file] = (await fs.readdir(dir)).filter((f) => f.includes('_changed_'));
    const run = spawnSync(PYTHON, [SCORER, '--log', path.join(dir, file)], { encoding: 'utf8' });
    expect(run.stderr).not.toMatch(/Traceback/);
    const read = JSON.parse(run.stdout) as {
      config: string[];
      scores: Array<{ reducer: string; metrics: Record<string, number> }>;
    };
    expect(read.config).toEqual(['pass_at_2', 'max']);
    expect(read.scores.map((s) => [s.reducer, s.metrics])).toEqual([
      ['pass_at_2', { mean: 0.5 }],
      ['max', { mean: 0.5 }],
    ]);

    // Scored under the new scoring now: a second relaunch has nothing to redo.
    expect(await rescoreEndedTasks(store, [{ name: 'changed', dataset, scoring }])).toEqual([]);
  });
});

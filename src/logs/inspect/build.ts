/**
 * A task's Inspect AI log (`.eval`, log format version 2), built from Steward's records: the
 * exactly-once JSON in the log dir is the source, this is a view of it. Pure: records in, the
 * zip's entries out (src/logs/inspect/write.ts writes them).
 *
 * The entries are the ones Inspect's own recorder writes (`inspect_ai/log/_recorders/eval.py`):
 * while a task runs, `_journal/start.json` (the eval spec and plan), `_journal/summaries/1.json`
 * and `samples/<id>_epoch_<n>.json`; Inspect reads such a file as status `started`. When the
 * task has ended, `summaries.json`, `reductions.json` and `header.json` (status, results, stats)
 * complete it.
 */
import { canonicalJson, type TaskIdentity, type TaskIdentityRecord } from '../../definition/identity';
import { DEFAULT_SCORING, type ReducerName, type Scoring } from '../../core/reducers';
import { reduceSamples, scoringOf, summaryScores } from '../../eval/metrics';
import type { SampleErrorRecord, SampleRecord, TaskSummary } from '../store';
import {
  completedSample,
  erroredSample,
  sampleEntryName,
  sampleSummary,
  shortId,
  type InspectError,
  type InspectSample,
  type InspectUsage,
} from './samples';

/** Inspect's log format version (`LOG_SCHEMA_VERSION`). */
export const INSPECT_LOG_VERSION = 2;

/** Inspect's `EvalStatus`: `started` until the task's summary is written, then what it says. */
export type InspectStatus = 'started' | 'success' | 'error' | 'cancelled';

/** What a task's log is built from: its records in the log dir. */
export interface TaskLogSource {
  /** `<task>/task.json`: the task's identity and when it first ran. */
  identity: TaskIdentityRecord;
  samples: SampleRecord[];
  /** The latest failure of each sample that has not completed. */
  errors: SampleErrorRecord[];
  /** The task's summary once it has ended; absent while it runs (the log is then `started`). */
  summary?: TaskSummary;
  /**
   * The dataset's sample ids, in its order (the definition's). Without them, the ids of the
   * recorded samples stand in: Inspect reads samples by these ids.
   */
  sampleIds?: Array<string | number>;
  /**
   * The task's reducers and metrics, from its definition. An ended task's summary says which it
   * was scored under, and wins; without either, Inspect's default (mean; accuracy, stderr).
   */
  scoring?: Scoring;
  /** Steward's version, for the spec's `packages`. */
  stewardVersion: string;
}

export interface ZipEntry {
  name: string;
  json: unknown;
}

export interface InspectLog {
  /** `<created>_<task>_<task_id>.eval`, as Inspect names a log. */
  fileName: string;
  status: InspectStatus;
  entries: ZipEntry[];
}

/** The eval set's id in every log and in `eval-set.json`: one per eval set name. */
export function evalSetId(evalSet: string): string {
  return shortId(`eval-set:${evalSet}`);
}

/**
 * A task's id: the same for the same task (name and identity) in the same eval set, so a
 * relaunch and `steward logs export` name the same file, as Inspect's `eval_set` reuses a task's
 * id across retries.
 */
export function taskId(evalSet: string, task: string, identity: TaskIdentity): string {
  return shortId(`task:${evalSet}:${task}:${canonicalJson(identity)}`);
}

/** Inspect's file name component cleaning (`clean_filename_component`). */
function cleanComponent(text: string): string {
  return text.replace(/[_/:+]/g, '-');
}

/** An ISO time as Inspect writes `created`: seconds, with a `+00:00` offset. */
function inspectTime(iso: string): string {
  return `${new Date(iso).toISOString().slice(0, 19)}+00:00`;
}

export function inspectLogFileName(record: TaskIdentityRecord): string {
  const id = taskId(record.eval_set, record.task, record.identity);
  return `${cleanComponent(inspectTime(record.recorded_at))}_${cleanComponent(record.task)}_${id}.eval`;
}

export function buildInspectLog(source: TaskLogSource): InspectLog {
  const { identity: record } = source;
  const identity = record.identity;
  const tid = taskId(record.eval_set, record.task, identity);
  const evalId = shortId(`eval:${tid}:${record.recorded_at}`);
  const scorer = scorerName(source, identity);
  const scoring = scoringFor(source);
  const plan = {
    name: 'plan',
    steps: identity.solver.map((step) => {
      const { name, params } = namedStep(step);
      return { solver: name, params, params_passed: params };
    }),
    config: identity.config,
  };

  // A completed record wins over a failure of the same sample and epoch (recorded by an
  // earlier attempt, before the record removed it).
  const done = new Set(source.samples.map((s) => key(s.sample_id, s.epoch)));
  const failed = source.errors.filter((e) => !done.has(key(e.sample_id, e.epoch)));
  const samples: InspectSample[] = [
    ...source.samples.map((r) => completedSample(r, evalId)),
    ...failed.map((e) => erroredSample(e, identity.model, evalId)),
  ].sort(compareSamples);
  const summaries = samples.map(sampleSummary);
  const sampleIds =
    source.sampleIds ?? [...new Set(samples.filter((s) => s.epoch === 1).map((s) => s.id))];
  const spec = evalSpec(source, tid, evalId, scorer, sampleIds, scoring);

  const entries: ZipEntry[] = [
    { name: '_journal/start.json', json: { version: INSPECT_LOG_VERSION, eval: spec, plan } },
    ...samples.map((sample) => ({ name: sampleEntryName(sample.id, sample.epoch), json: sample })),
    { name: '_journal/summaries/1.json', json: summaries },
  ];
  const status = statusOf(source);
  if (status !== 'started' && source.summary) {
    const summary = source.summary;
    entries.push({ name: 'summaries.json', json: summaries });
    entries.push({
      name: 'reductions.json',
      json: reductions(scorer, source.samples, scoring.reducers),
    });
    entries.push({
      name: 'header.json',
      json: {
        version: INSPECT_LOG_VERSION,
        status,
        eval: spec,
        plan,
        results: results(scorer, summary),
        stats: {
          started_at: startedAt(source),
          completed_at: summary.completed_at,
          model_usage: modelUsage(source.samples),
          role_usage: {},
        },
        ...(status === 'error' ? { error: taskError(summary, failed) } : {}),
        invalidated: false,
        tags: [],
        metadata: {},
      },
    });
  }
  return { fileName: inspectLogFileName(record), status, entries };
}

/** `eval-set.json`, the file Inspect's `eval_set` writes so a viewer shows the tasks as one set. */
export function evalSetManifest(
  evalSet: string,
  tasks: Array<{ name: string; identity: TaskIdentity }>,
): { eval_set_id: string; tasks: unknown[] } {
  return {
    eval_set_id: evalSetId(evalSet),
    tasks: tasks.map((task, sequence) => ({
      name: task.name,
      task_id: taskId(evalSet, task.name, task.identity),
      task_file: null,
      task_args: {},
      model: task.identity.model,
      model_args: task.identity.model_args,
      model_roles: null,
      sequence,
    })),
  };
}

function statusOf(source: TaskLogSource): InspectStatus {
  if (!source.summary) return 'started';
  if (source.summary.cancelled) return 'cancelled';
  return source.summary.errored > 0 ? 'error' : 'success';
}

function evalSpec(
  source: TaskLogSource,
  tid: string,
  evalId: string,
  scorer: string,
  sampleIds: Array<string | number>,
  scoring: Scoring,
) {
  const { identity: record } = source;
  const identity = record.identity;
  const scorerStep = namedStep(identity.scorer);
  return {
    eval_set_id: evalSetId(record.eval_set),
    eval_id: evalId,
    run_id: shortId(`run:${record.eval_set}:${record.recorded_at}`),
    created: inspectTime(record.recorded_at),
    task: record.task,
    task_id: tid,
    task_version: 0,
    task_display_name: record.task,
    task_registry_name: record.task,
    task_attribs: {},
    task_args: {},
    task_args_passed: {},
    dataset: {
      name: record.task,
      samples: identity.dataset.samples,
      sample_ids: sampleIds,
      shuffled: false,
    },
    model: identity.model,
    model_generate_config: identity.config,
    model_args: identity.model_args,
    config: { epochs: identity.epochs, epochs_reducer: scoring.reducers },
    packages: { steward: source.stewardVersion },
    metadata: {
      steward: { eval_set: record.eval_set, dataset_sha256: identity.dataset.sha256, sandbox: identity.sandbox },
    },
    scorers: [
      {
        name: scorer,
        options: scorerStep.params,
        metrics: scoring.metrics.map((name) => ({ name: `inspect_ai/${name}`, options: {} })),
        metadata: {},
      },
    ],
  };
}

/**
 * Steward's metrics (the summary's numbers, exactly) as Inspect's `EvalResults`: one score per
 * reducer, named by it. A metric over no scored sample is NaN there, as Inspect writes it.
 */
function results(scorer: string, summary: TaskSummary) {
  return {
    total_samples: summary.samples,
    completed_samples: summary.completed,
    scores: summary.metrics
      ? summaryScores(summary.metrics).map((score) => ({
          name: scorer,
          scorer,
          reducer: score.reducer,
          scored_samples: score.samples_scored,
          unscored_samples: score.samples_unscored,
          params: {},
          metrics: Object.fromEntries(
            Object.entries(score.metrics).map(([name, value]) => [
              name,
              { name, value: value ?? NaN, params: {} },
            ]),
          ),
        }))
      : [],
  };
}

/** The scoring the log shows: the summary's once the task has ended, else the definition's. */
function scoringFor(source: TaskLogSource): Scoring {
  const metrics = source.summary?.metrics;
  const scored = metrics ? scoringOf({ scores: summaryScores(metrics) }) : undefined;
  return scored ?? source.scoring ?? DEFAULT_SCORING;
}

/** Each sample's score with its epochs reduced by each reducer, as the metrics took them. */
function reductions(scorer: string, records: SampleRecord[], reducers: readonly ReducerName[]) {
  if (records.length === 0) return [];
  const scores = records.map((r) => ({ sampleId: r.sample_id, epoch: r.epoch, value: r.score.value }));
  return reducers.map((reducer) => ({
    scorer,
    reducer,
    samples: reduceSamples(scores, reducer).map(({ sampleId, value }) => ({
      value,
      history: [],
      sample_id: sampleId,
    })),
  }));
}

/**
 * An entry's JSON as Inspect writes it (pydantic's `ser_json_inf_nan="constants"`): NaN, its
 * unscored sentinel, as the bare constant, which JSON.stringify would turn into null.
 */
export function inspectJson(value: unknown): string {
  const marker = '\u0000steward:NaN\u0000';
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'number' && Number.isNaN(v) ? marker : v,
  ).replaceAll(JSON.stringify(marker), 'NaN');
}

function taskError(summary: TaskSummary, failed: SampleErrorRecord[]): InspectError {
  const first = failed[0];
  const message =
    `${summary.errored} of ${summary.samples} samples did not complete` +
    (first ? ` (sample ${first.sample_id}, epoch ${first.epoch}: ${first.error})` : '');
  return { message, traceback: message, traceback_ansi: message };
}

function startedAt(source: TaskLogSource): string {
  const times = source.samples.map((s) => s.started_at).sort();
  return times[0] ?? source.identity.recorded_at;
}

function modelUsage(records: SampleRecord[]): Record<string, InspectUsage> {
  const usage: Record<string, InspectUsage> = {};
  for (const r of records) {
    const sum = (usage[r.model] ??= { input_tokens: 0, output_tokens: 0, total_tokens: 0 });
    sum.input_tokens += r.usage.input_tokens;
    sum.output_tokens += r.usage.output_tokens;
    sum.total_tokens += r.usage.total_tokens;
  }
  return usage;
}

/** The scorer's name as the records carry it (`match`, or a custom scorer's name). */
function scorerName(source: TaskLogSource, identity: TaskIdentity): string {
  return source.summary?.scorer ?? source.samples[0]?.scorer ?? namedStep(identity.scorer).name;
}

/**
 * A solver or scorer as the identity keeps it (`"generate"`, `{ "match": { "location": "end" } }`,
 * `{ "function": "mine" }`) as a name and its parameters.
 */
export function namedStep(step: unknown): { name: string; params: Record<string, unknown> } {
  if (typeof step === 'string') return { name: step, params: {} };
  if (step !== null && typeof step === 'object' && !Array.isArray(step)) {
    const [entry] = Object.entries(step as Record<string, unknown>);
    if (entry) {
      const [name, value] = entry;
      if (name === 'function') return { name: String(value), params: {} };
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
        return { name, params: value as Record<string, unknown> };
      }
      if (value === undefined) return { name, params: {} };
      return { name, params: { [STEP_ARGUMENT[name] ?? 'value']: value } };
    }
  }
  return { name: String(step), params: {} };
}

/** What Inspect calls the one argument of a step written `{ name: value }`. */
const STEP_ARGUMENT: Record<string, string> = {
  system_message: 'template',
  user_message: 'template',
  assistant_message: 'template',
  prompt_template: 'template',
  chain_of_thought: 'template',
  answer: 'pattern',
};

function key(id: string | number, epoch: number): string {
  return `${typeof id}:${id}:${epoch}`;
}

/** Epoch, then id (numbers before strings, each in order), as Inspect sorts samples. */
function compareSamples(a: InspectSample, b: InspectSample): number {
  if (a.epoch !== b.epoch) return a.epoch - b.epoch;
  if (typeof a.id !== typeof b.id) return typeof a.id === 'number' ? -1 : 1;
  if (typeof a.id === 'number' && typeof b.id === 'number') return a.id - b.id;
  return String(a.id) < String(b.id) ? -1 : String(a.id) > String(b.id) ? 1 : 0;
}

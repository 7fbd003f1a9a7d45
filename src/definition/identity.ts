/**
 * A task's identity, as Inspect's `eval_set` keeps one: everything that changes its results (the
 * model and its arguments, the solver chain, the scorer, the dataset's content, the epochs, the
 * generation config, the sandbox), and nothing that only changes how fast it runs (concurrency
 * knobs, `tend_interval`). A log dir holds the records of one identity per task; a relaunch
 * whose task differs would mix two tasks' samples under one name, so it is refused. The epochs
 * reducers and metrics are left out, as Inspect's `task_identifier` leaves them out: they are
 * computed from the records when the task ends and change none of them, so a relaunch with
 * another reducer scores the same records anew.
 *
 * Pure: the identity is computed from what the loader read, and compared here; the log store
 * keeps it (`<log_dir>/<task>/task.json`).
 */
import { createHash } from 'node:crypto';
import type { EvalSetDefinition, Sample, TaskIdentity } from './types';

export type { TaskIdentity };

/** What `<log_dir>/<task>/task.json` holds. */
export interface TaskIdentityRecord {
  version: number;
  eval_set: string;
  task: string;
  identity: TaskIdentity;
  recorded_at: string;
}

/** One difference between the recorded task and the launched one, each value described short. */
export interface IdentityChange {
  field: string;
  from: string;
  to: string;
}

/** sha256 of the samples, in dataset order, as canonical JSON. */
export function datasetDigest(samples: Sample[]): TaskIdentity['dataset'] {
  const hash = createHash('sha256');
  for (const sample of samples) hash.update(`${canonicalJson(sample)}\n`);
  return { samples: samples.length, sha256: hash.digest('hex') };
}

const IDENTITY = Symbol.for('steward.identity');

/** Marks a built-in's function with its name and options (a module's `generate({...})`). */
export function withIdentity<F extends object>(fn: F, name: string, options: unknown): F {
  return Object.defineProperty(fn, IDENTITY, { value: { [name]: options } });
}

/**
 * A solver or scorer given as a function: a built-in by its name and options (as in YAML), a
 * function of the user's own by its name. Its code is not compared: the same source compiles to
 * different text under different loaders, and a false refusal would block a plain relaunch.
 */
export function functionIdentity(fn: (...args: never[]) => unknown): unknown {
  const builtIn = (fn as unknown as Record<symbol, unknown>)[IDENTITY];
  return builtIn ?? { function: fn.name || 'anonymous' };
}

/** The fields that differ, eval set name first, in a stable order. */
export function identityChanges(
  recorded: Pick<TaskIdentityRecord, 'eval_set' | 'identity'>,
  current: Pick<TaskIdentityRecord, 'eval_set' | 'identity'>,
): IdentityChange[] {
  const changes: IdentityChange[] = [];
  if (recorded.eval_set !== current.eval_set) {
    changes.push({
      field: 'eval set',
      from: brief(recorded.eval_set),
      to: brief(current.eval_set),
    });
  }
  const fields = Object.keys(current.identity) as (keyof TaskIdentity)[];
  for (const field of fields) {
    const from = recorded.identity[field];
    const to = current.identity[field];
    if (canonicalJson(from) === canonicalJson(to)) continue;
    const describe = field === 'dataset' ? describeDataset : brief;
    changes.push({ field, from: describe(from), to: describe(to) });
  }
  return changes;
}

/**
 * The refusal of a relaunch whose task differs from the one recorded in the log dir: the task,
 * what changed (old → new, each value short), and what to do.
 */
export function identityRefusal(task: string, logDir: string, changes: IdentityChange[]): string {
  const what = changes.map((c) => `${c.field} ${c.from} → ${c.to}`).join('; ');
  return (
    `task "${task}" differs from the one whose records are in ${logDir}: ${what}. ` +
    `Use a new log dir (--log-dir) for the changed task, or remove ${logDir}/${task} to discard its records.`
  );
}

function describeDataset(value: unknown): string {
  const dataset = value as TaskIdentity['dataset'] | undefined;
  if (!dataset) return 'none';
  return `${dataset.samples} samples, sha256 ${dataset.sha256.slice(0, 12)}`;
}

const BRIEF_CHARS = 60;

/** A value in a message: short JSON. */
function brief(value: unknown): string {
  const text = value === undefined ? 'none' : canonicalJson(value);
  return text.length > BRIEF_CHARS ? `${text.slice(0, BRIEF_CHARS - 1)}…` : text;
}

/** JSON with object keys sorted, so equal values compare equal whatever their key order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** The part of the log store that keeps identities (`LogStore` in src/logs/store.ts). */
export interface IdentityStore {
  readonly dir: string;
  readTaskIdentity(task: string): Promise<TaskIdentityRecord | undefined>;
  /** Publishes the record unless one is there already. */
  writeTaskIdentity(record: TaskIdentityRecord): Promise<'written' | 'exists'>;
}

/**
 * The refusals for the tasks of `definition` (or of `tasks`) whose identity recorded in the log
 * dir differs from theirs; a task with nothing recorded is new, and fine.
 */
export async function identityRefusals(
  store: IdentityStore,
  definition: Pick<EvalSetDefinition, 'name' | 'identities'>,
  tasks: string[] = Object.keys(definition.identities),
): Promise<string[]> {
  const refusals = await Promise.all(
    tasks.map(async (task) => {
      const recorded = await store.readTaskIdentity(task);
      if (!recorded) return undefined;
      const current = { eval_set: definition.name, identity: definition.identities[task] };
      const changes = identityChanges(recorded, current);
      return changes.length === 0 ? undefined : identityRefusal(task, store.dir, changes);
    }),
  );
  return refusals.filter((r): r is string => r !== undefined);
}

/**
 * Records a task's identity when it first runs, or checks it against the one recorded.
 *
 * @returns the refusal when a different task's records are in the log dir.
 */
export async function pinTaskIdentity(
  store: IdentityStore,
  definition: Pick<EvalSetDefinition, 'name' | 'identities'>,
  task: string,
  now: Date,
): Promise<string | undefined> {
  const record: TaskIdentityRecord = {
    version: 1,
    eval_set: definition.name,
    task,
    identity: definition.identities[task],
    recorded_at: now.toISOString(),
  };
  if ((await store.writeTaskIdentity(record)) === 'written') return undefined;
  return (await identityRefusals(store, definition, [task]))[0];
}

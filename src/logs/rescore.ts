/**
 * Scores an ended task again when its definition names other reducers or metrics than its
 * summary was computed under. They are not part of a task's identity (they change no record), so
 * a relaunch that finds every sample recorded starts no workflow, yet owes the new numbers: the
 * records are the source, and the task's summary, its `.eval` log and the eval set's summary are
 * rewritten from them, as the task's own end would have written them.
 */
import { canonicalJson } from '../definition/identity';
import type { TaskDefinition } from '../definition/types';
import { scoringOf, summaryScores, taskMetrics } from '../eval/metrics';
import { writeTaskInspectLog } from './inspect/write';
import type { LogStore, TaskSummary } from './store';

type ScoredTask = Pick<TaskDefinition, 'name' | 'dataset' | 'scoring'>;

/** The names of the tasks scored again; none when every summary matches its task's scoring. */
export async function rescoreEndedTasks(store: LogStore, tasks: ScoredTask[]): Promise<string[]> {
  const rescored = new Map<string, TaskSummary>();
  for (const task of tasks) {
    const summary = await store.readTaskSummary(task.name);
    if (!summary?.metrics) continue;
    const scoredUnder = scoringOf({ scores: summaryScores(summary.metrics) });
    if (canonicalJson(scoredUnder) === canonicalJson(task.scoring)) continue;
    const records = await store.readSamples(task.name);
    const metrics = taskMetrics(
      records.map((r) => ({ sampleId: r.sample_id, epoch: r.epoch, value: r.score.value })),
      task.scoring,
    );
    const updated = { ...summary, metrics };
    await store.writeTaskSummary(updated);
    await writeTaskInspectLog(store, task.name, {
      ended: true,
      sampleIds: task.dataset.map((s) => s.id),
      scoring: task.scoring,
    });
    rescored.set(task.name, updated);
  }
  if (rescored.size === 0) return [];
  const evalSet = await store.readEvalSetSummary();
  if (evalSet) {
    await store.writeEvalSetSummary({
      ...evalSet,
      tasks: evalSet.tasks.map((t) => {
        const updated = rescored.get(t.name);
        return updated ? { ...t, metrics: updated.metrics } : t;
      }),
    });
  }
  return [...rescored.keys()];
}

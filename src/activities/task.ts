/** Per-task activities: what is left to run, and the task's summary at the end. */
import { rangesExcept } from '../core/ranges';
import { taskMetrics } from '../eval/metrics';
import { sampleKey } from '../logs/store';
import type { IndexRanges, TaskMetrics } from '../workflows/types';
import { findTask, type ActivityDeps } from './deps';

export interface TaskRef {
  evalSet: string;
  task: string;
  definition: string;
  logDir: string;
}

export function createTaskActivities(deps: ActivityDeps) {
  return {
    /** The samples still to run: everything not already recorded in the log directory. */
    async planTask(ref: TaskRef): Promise<{ total: number; pending: IndexRanges; resumed: number }> {
      const task = findTask(await deps.loadDefinition(ref.definition), ref.task);
      const size = task.dataset.length;
      const total = size * task.epochs;
      const done = await deps.logStore(ref.logDir).completedKeys(task.name);
      const completed: number[] = [];
      for (let index = 0; index < total; index++) {
        const key = sampleKey(task.dataset[index % size].id, Math.floor(index / size) + 1);
        if (done.has(key)) completed.push(index);
      }
      return { total, pending: rangesExcept(total, completed), resumed: completed.length };
    },

    /** Computes the task's metrics from its recorded samples and writes its summary. */
    async finishTask(ref: TaskRef & { resumed: number }): Promise<TaskMetrics | null> {
      const definition = await deps.loadDefinition(ref.definition);
      const task = findTask(definition, ref.task);
      const store = deps.logStore(ref.logDir);
      const records = await store.readSamples(task.name);
      const total = task.dataset.length * task.epochs;
      const metrics =
        records.length === 0
          ? null
          : taskMetrics(records.map((r) => ({ sampleId: r.sample_id, epoch: r.epoch, value: r.score.value })));
      const completed = records.length;
      await store.writeTaskSummary({
        version: 1,
        eval_set: definition.name,
        name: task.name,
        samples: total,
        completed,
        errored: total - completed,
        resumed: ref.resumed,
        metrics,
        scorer: task.scorerName,
        model: task.model,
        completed_at: new Date(deps.now()).toISOString(),
      });
      return metrics;
    },
  };
}

export type TaskActivities = ReturnType<typeof createTaskActivities>;

/**
 * A task's samples in admission order: index = (epoch - 1) × dataset size + row, so every epoch
 * of the dataset runs before the next begins. Workflows carry only these indices.
 */
import type { Sample, TaskDefinition } from './types';

type Samples = Pick<TaskDefinition, 'dataset' | 'epochs'>;

/** Dataset size × epochs. */
export function sampleCount(task: Samples): number {
  return task.dataset.length * task.epochs;
}

export function sampleAt(task: Samples, index: number): { sample: Sample; epoch: number } {
  const size = task.dataset.length;
  return { sample: task.dataset[index % size], epoch: Math.floor(index / size) + 1 };
}

/** The indices whose key (see `sampleKey` in src/logs/store) is in `keys`. */
export function indicesWithKeys(
  task: Samples,
  keys: ReadonlySet<string>,
  keyOf: (sampleId: string | number, epoch: number) => string,
): number[] {
  const found: number[] = [];
  for (let index = 0; index < sampleCount(task); index++) {
    const { sample, epoch } = sampleAt(task, index);
    if (keys.has(keyOf(sample.id, epoch))) found.push(index);
  }
  return found;
}

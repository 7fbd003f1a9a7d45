/**
 * A smoke run's definition (`steward launch --smoke`): the eval set under its own name, each task
 * cut to the first samples of its dataset and one epoch. It is derived where every process loads
 * the definition (the snapshot, see src/loader/snapshot.ts), so the whole fleet runs the same cut
 * and the real eval set's name, log dir and identity are untouched.
 */
import { datasetDigest } from './identity';
import type { EvalSetDefinition } from './types';

/** What a smoke run changes in a definition; recorded in its snapshot's manifest. */
export interface SmokeCut {
  /** The smoke run's eval set name. */
  name: string;
  /** Samples per task: the first ones of its dataset, one epoch each. */
  samples: number;
}

/** The smoke run's eval set name for an eval set. */
export function smokeName(name: string): string {
  return `${name}-smoke`;
}

/** Pure: the definition a smoke run runs. */
export function smokeDefinition(definition: EvalSetDefinition, cut: SmokeCut): EvalSetDefinition {
  const tasks = definition.tasks.map((task) => ({
    ...task,
    dataset: task.dataset.slice(0, cut.samples),
    epochs: 1,
  }));
  const identities = Object.fromEntries(
    tasks.map((task) => {
      const identity = definition.identities[task.name];
      return [task.name, { ...identity, dataset: datasetDigest(task.dataset), epochs: 1 }];
    }),
  );
  return { ...definition, name: cut.name, tasks, identities };
}

/** Every activity, built from injected dependencies (one factory, typed by its return value). */
import { createControlActivities } from './control';
import type { ActivityDeps } from './deps';
import { createSampleActivities } from './sample';
import { createTaskActivities } from './task';

export function createActivities(deps: ActivityDeps) {
  return {
    ...createControlActivities(deps),
    ...createTaskActivities(deps),
    ...createSampleActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
export type { ActivityDeps } from './deps';

/** Every activity, built from injected dependencies (one factory, typed by its return value). */
import { createControlActivities } from './control';
import type { ActivityDeps } from './deps';
import { createNotifyActivities } from './notify';
import { createSampleActivities } from './sample';
import { createTaskActivities } from './task';

export function createActivities(deps: ActivityDeps) {
  return {
    ...createControlActivities(deps),
    ...createNotifyActivities({ env: deps.env }),
    ...createTaskActivities(deps),
    ...createSampleActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
export type { ActivityDeps } from './deps';

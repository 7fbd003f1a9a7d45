/**
 * A launch starts its eval set's first workers with its supervisor, before the eval set has
 * planned and started its tasks, instead of at the first reconcile after they run: each worker
 * process takes most of a second of CPU to start. The slots it expects must be the very slots the
 * eval set's status asks for once its tasks run, or the fleet would stop and start them again.
 */
import * as path from 'node:path';
import { Client } from '@temporalio/client';
import { SETTINGS_DEFAULTS, withDefaults, type ResolvedSettings } from '../src/config/settings';
import { loadDefinitionFiles, writeSnapshot } from '../src/loader/snapshot';
import { openConnection } from '../src/temporal/open-connection';
import type { FleetEvent } from '../src/workers/fleet';
import { expectedSlots, runSupervisor, wantedSlots } from '../src/workers/supervisor';
import {
  STEWARD_TASK_QUEUE,
  evalSetWorkflowId,
  slotQueueFor,
  taskQueueFor,
  taskWorkflowId,
  type EvalSetStatus,
  type TaskStatus,
} from '../src/workflows/types';
import { leastLoadedSlot, slotCount, type HostCapacity } from '../src/core/slots';
import { tempDir, uniqueName, writeEvalSet } from './helpers/cli';

const NAMES = ['a', 'b', 'c', 'd', 'e'];
/** Two CPUs and plenty of memory: four slots at most (src/core/slots.ts). */
const HOST: HostCapacity = { cpus: 2, totalBytes: 24 * 1024 ** 3, headroomBytes: 20 * 1024 ** 3 };

/** The status once `running` have started, each on the slot the eval set assigns it. */
function statusWith(settings: ResolvedSettings, running: string[]): EvalSetStatus {
  const slots = slotCount(NAMES.length, settings.maxWorkers, HOST);
  const assigned: number[] = [];
  return {
    eval_set: 'es',
    state: 'running',
    settings,
    tasks: NAMES.map((name) => {
      if (!running.includes(name)) return { name, state: 'waiting', taskQueue: '' } as TaskStatus;
      const k = leastLoadedSlot(slots, assigned);
      assigned.push(k);
      return { name, state: 'running', taskQueue: slotQueueFor('es', k) } as TaskStatus;
    }),
    ramp_history: [],
    holds: { global: null, tasks: {} },
  };
}

describe('expectedSlots: the slots an eval set about to start will want first', () => {
  test.each([
    ['sized to the host: 4 slots for 5 tasks, every task at once', {}, NAMES, 4],
    ['max_tasks 2', { max_tasks: 2 }, ['a', 'b'], 2],
    ['max_workers 2, every task at once', { max_workers: 2 }, NAMES, 2],
    ['max_workers 2 and max_tasks 1', { max_workers: 2, max_tasks: 1 }, ['a'], 1],
    ['max_workers 3 and max_tasks 4', { max_workers: 3, max_tasks: 4 }, ['a', 'b', 'c', 'd'], 3],
    ['max_workers 9: no more slots than tasks', { max_workers: 9 }, NAMES, 5],
  ])('%s: the same slots as the status wants once those tasks run', (_, knobs, first, count) => {
    const settings = withDefaults(knobs);
    const tasks = NAMES.map((name) => ({ name }));
    const expected = expectedSlots('steward-es', 'es', tasks, settings, HOST);
    expect(expected).toEqual(wantedSlots('steward-es', statusWith(settings, first)));
    // One process a slot, each serving its slot's one queue.
    expect(expected.map((s) => s.taskQueues)).toEqual(
      Array.from({ length: count }, (_, i) => [slotQueueFor('es', i + 1)]),
    );
    for (const slot of expected) {
      expect(slot.reporting).toEqual({
        evalSetId: 'steward-es',
        connections: { type: 'adaptive', ...SETTINGS_DEFAULTS.connections },
        intervalMs: settings.tendIntervalMs,
      });
    }
  });

  test("an eval set planned before worker slots keeps each task's own queue, packed as then", () => {
    const settings = withDefaults({ max_workers: 2 });
    const status: EvalSetStatus = {
      ...statusWith(settings, []),
      tasks: NAMES.map(
        (name) =>
          ({
            name,
            state: name === 'e' ? 'waiting' : 'running',
            taskQueue: taskQueueFor('es', name),
          }) as TaskStatus,
      ),
    };
    expect(wantedSlots('steward-es', status).map((s) => [s.id, s.taskQueues])).toEqual([
      ['es-worker-1', ['a', 'c', 'e'].map((n) => taskQueueFor('es', n))],
      ['es-worker-2', ['b', 'd'].map((n) => taskQueueFor('es', n))],
    ]);
  });
});

describe('a supervisor given the expected slots', () => {
  let client: Client;
  beforeAll(async () => {
    client = new Client({
      connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS }),
      namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
    });
  });
  afterAll(async () => {
    await client.connection.close();
  });

  test('starts each worker before the eval set starts its first task, and only once', async () => {
    const dir = await tempDir();
    const name = uniqueName('expected');
    const file = await writeEvalSet(dir, name, [
      { name: 't1', samples: 3 },
      { name: 't2', samples: 3 },
    ]);
    const { definition, used } = await loadDefinitionFiles(file);
    const logDir = path.join(dir, 'logs');
    const hash = await writeSnapshot(used, logDir);
    const workflowId = evalSetWorkflowId(name);
    const handle = await client.workflow.start('evalSet', {
      workflowId,
      taskQueue: STEWARD_TASK_QUEUE,
      args: [
        { definition: definition.source, definition_hash: hash, log_dir: logDir, settings: {} },
      ],
    });
    const events: (FleetEvent & { at: number })[] = [];
    const stop = new AbortController();
    const supervisor = runSupervisor({
      client,
      temporal: {
        address: process.env.TEMPORAL_ADDRESS!,
        namespace: client.options.namespace,
        embedded: false,
      },
      evalSetIds: [workflowId],
      stewardDir: path.join(dir, '.steward'),
      signal: stop.signal,
      onFleetEvent: (event) => events.push({ ...event, at: Date.now() }),
      expected: expectedSlots(workflowId, name, definition.tasks, withDefaults({})),
    });
    try {
      await handle.result();
    } finally {
      stop.abort();
      await supervisor;
    }
    const started = events.filter((e) => e.kind === 'started');
    expect(started.map((e) => e.slot).sort()).toEqual([`${name}-slot-1`, `${name}-slot-2`]);
    expect(events.filter((e) => e.kind === 'exited' && e.restartInMs !== undefined)).toEqual([]);
    const firstTask = Math.min(
      ...(await Promise.all(
        ['t1', 't2'].map(async (task) => {
          const described = await client.workflow.getHandle(taskWorkflowId(workflowId, task));
          return (await described.describe()).startTime.getTime();
        }),
      )),
    );
    for (const e of started) expect(e.at).toBeLessThan(firstTask);
  });
});

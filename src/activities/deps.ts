/**
 * What activities need from the world, injected so tests and processes choose their own: the
 * definition loader, the model factory, the log store, a Temporal client, Docker and a clock.
 */
import * as os from 'node:os';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type Dockerode from 'dockerode';
import type { EvalSetDefinition, Model, TaskDefinition } from '../definition/types';
import { capacityOf, type HostCapacity } from '../core/slots';
import type { AccountUser } from '../models/account-host';
import { ErrorType } from '../errors';
import { readHostMemory } from '../util/host-memory';
import type { LogStore } from '../logs/store';
import type { TaskReports } from './reports';

/**
 * Where an activity finds its eval set's definition: the snapshot `hash` in `logDir` (see
 * src/loader/snapshot.ts). `path` is the definition as launched; it is read only for runs
 * started before snapshots existed, which carry no hash.
 */
export interface DefinitionRef {
  logDir: string;
  hash?: string;
  path: string;
}

export interface ActivityDeps {
  /** Loads (and caches, by hash) an eval set's definition from its snapshot. */
  definition(ref: DefinitionRef): Promise<EvalSetDefinition>;
  /**
   * Returns this process's model for a name and arguments, its calls through their provider
   * account's controller, counted for `user` (the eval set and task they are made for).
   */
  model(name: string, args: Record<string, unknown>, user?: AccountUser): Model;
  logStore(dir: string): LogStore;
  /** Needed only by the control activities that observe running tasks. */
  client?: Client;
  /** Sample reports to their tasks, one batcher for the process (needs `client`). */
  reports?: TaskReports;
  /** The Docker daemon sandboxed samples run on; needed only by tasks with a `sandbox`. */
  docker?: Dockerode;
  env: NodeJS.ProcessEnv;
  now(): number;
  worker: { pid: number; host: string };
  /** What this host offers worker slots, read when the eval set plans (default: read it). */
  hostCapacity?(): HostCapacity;
}

/** This host's CPUs and memory, read now. */
export function thisHostCapacity(): HostCapacity {
  return capacityOf(os.availableParallelism(), readHostMemory());
}

export function thisWorker(): ActivityDeps['worker'] {
  return { pid: process.pid, host: os.hostname() };
}

/** Memoises an async loader by `keyOf(arg)`; a failed load is forgotten so it can be retried. */
export function memoize<A, T>(
  load: (arg: A) => Promise<T>,
  keyOf: (arg: A) => string,
): (arg: A) => Promise<T> {
  const cache = new Map<string, Promise<T>>();
  return (arg) => {
    const key = keyOf(arg);
    let value = cache.get(key);
    if (!value) {
      value = load(arg);
      cache.set(key, value);
      value.catch(() => cache.delete(key));
    }
    return value;
  };
}

/**
 * The task called `name`. Its absence is not fixed by retrying: the definition is a snapshot, so
 * the workflow names a task the launched definition never had.
 */
export function findTask(definition: EvalSetDefinition, name: string): TaskDefinition {
  const task = definition.tasks.find((t) => t.name === name);
  if (!task) {
    throw ApplicationFailure.nonRetryable(
      `task "${name}" is not in the definition ${definition.source}`,
      ErrorType.config,
    );
  }
  return task;
}

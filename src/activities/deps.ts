/**
 * What activities need from the world, injected so tests and processes choose their own: the
 * definition loader, the model factory, the log store, a Temporal client, Docker and a clock.
 */
import * as os from 'node:os';
import type { Client } from '@temporalio/client';
import type Dockerode from 'dockerode';
import type { EvalSetDefinition, Model, TaskDefinition } from '../definition/types';
import type { LogStore } from '../logs/store';

export interface ActivityDeps {
  /** Loads (and caches) a definition by path. */
  loadDefinition(file: string): Promise<EvalSetDefinition>;
  /** Returns this process's model for a name and arguments (one per provider account). */
  model(name: string, args: Record<string, unknown>): Model;
  logStore(dir: string): LogStore;
  /** Needed only by the control activities that observe running tasks. */
  client?: Client;
  /** The Docker daemon sandboxed samples run on; needed only by tasks with a `sandbox`. */
  docker?: Dockerode;
  env: NodeJS.ProcessEnv;
  now(): number;
  worker: { pid: number; host: string };
}

export function thisWorker(): ActivityDeps['worker'] {
  return { pid: process.pid, host: os.hostname() };
}

/** Memoises an async loader by key; a failed load is forgotten so it can be retried. */
export function memoize<T>(load: (key: string) => Promise<T>): (key: string) => Promise<T> {
  const cache = new Map<string, Promise<T>>();
  return (key) => {
    let value = cache.get(key);
    if (!value) {
      value = load(key);
      cache.set(key, value);
      value.catch(() => cache.delete(key));
    }
    return value;
  };
}

export function findTask(definition: EvalSetDefinition, name: string): TaskDefinition {
  const task = definition.tasks.find((t) => t.name === name);
  if (!task) throw new Error(`task "${name}" is not in ${definition.source}`);
  return task;
}

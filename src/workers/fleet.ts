/**
 * The worker fleet: one process per slot (a slot serves one or more task queues), spawned on
 * demand, restarted when it dies, stopped when its tasks are done.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import * as os from 'node:os';
import { WORKER_CONFIG_ENV, WORKER_READY, type WorkerProcessConfig } from './task-worker';

/**
 * V8 flags of a worker process. After each full collection V8 lets a heap grow to between 1.1
 * and 4 times what was live, by how fast the program allocates; a worker allocates fast
 * (protobufs, HTTP bodies) and keeps little, so its two heaps (main thread and workflow thread)
 * sat at several times their live size. 1.5 times bounds that without a hard limit, which would
 * crash a worker whose live size grows with its samples in flight. bench:orchestration (5,000
 * samples, 200 in flight): the worker's peak 527-560 MiB without it, 381-387 MiB with it, at the
 * same throughput (docs/orchestration.md).
 */
export const WORKER_V8_FLAGS = ['--heap-growing-percent=50'];

export interface WorkerSlot {
  /** Stable name, used for the log file. */
  id: string;
  taskQueues: string[];
  /** Whom the process reports its provider accounts to, each window (unset: nobody). */
  reporting?: WorkerProcessConfig['reporting'];
}

export type FleetEvent =
  | { kind: 'started'; slot: string; pid: number }
  | {
      kind: 'exited';
      slot: string;
      pid: number;
      code: number | null;
      signal: string | null;
      restartInMs?: number;
    };

export interface FleetOptions {
  /** The worker entry script (dist/workers/task-worker.js). */
  script: string;
  /** Where the workers connect; an API key reaches them only through their environment. */
  temporal: { address: string; namespace: string; tls: boolean };
  bundlePath: string;
  /** The supervisor's lease socket for model-call slots (see WorkerProcessConfig). */
  accountsSocket?: string;
  /** Where each worker's output goes, one file per slot. */
  logDir: string;
  env?: NodeJS.ProcessEnv;
  onEvent?(event: FleetEvent): void;
  /**
   * How many processes start at once (default: one a CPU). A start takes most of a second of CPU
   * (docs/orchestration.md): a hundred at once made every one of them late, the first included.
   * The next starts when one says it is ready ({@link WORKER_READY}), exits, or takes too long.
   */
  startWidth?: number;
}

/** A process still not ready after this lets the next one start anyway. */
const START_TIMEOUT_MS = 15_000;

/** Restart backoff after a crash: fast first, so a killed worker costs seconds. */
const RESTART_BASE_MS = 500;
const RESTART_MAX_MS = 30_000;
/** A process that lived this long is healthy again: its next crash restarts fast. */
const HEALTHY_AFTER_MS = 60_000;

/**
 * Packs tasks into at most `maxWorkers` processes, keeping their order (task i goes to slot
 * i mod maxWorkers). Unset: one process per task.
 */
export function assignSlots<T>(
  items: T[],
  maxWorkers: number | null,
): { id: string; items: T[] }[] {
  const count = Math.min(items.length, maxWorkers ?? items.length);
  const slots = Array.from({ length: count }, (_, i) => ({
    id: `worker-${i + 1}`,
    items: [] as T[],
  }));
  items.forEach((item, i) => slots[i % count].items.push(item));
  return slots;
}

interface Running {
  slot: WorkerSlot;
  child?: ChildProcess;
  failures: number;
  startedAt: number;
  restartTimer?: NodeJS.Timeout;
  stopping: boolean;
  exited: Promise<void>;
}

export class Fleet {
  private readonly running = new Map<string, Running>();
  /** Slots waiting for their process to start, first come first started. */
  private readonly toStart: Running[] = [];
  private starting = 0;
  private readonly startWidth: number;

  constructor(private readonly options: FleetOptions) {
    mkdirSync(options.logDir, { recursive: true });
    this.startWidth = options.startWidth ?? Math.max(1, os.availableParallelism());
  }

  /** Makes the fleet exactly `slots`: starts the missing processes and stops the others. */
  reconcile(slots: WorkerSlot[]): void {
    const wanted = new Map(slots.map((s) => [s.id, s]));
    for (const [id, entry] of this.running) {
      const want = wanted.get(id);
      if (!want || want.taskQueues.join() !== entry.slot.taskQueues.join()) void this.stopSlot(id);
    }
    for (const slot of slots) if (!this.running.has(slot.id)) this.startSlot(slot);
  }

  /** Pids of the live worker processes, by slot. */
  pids(): Record<string, number | undefined> {
    return Object.fromEntries([...this.running].map(([id, r]) => [id, r.child?.pid]));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.running.keys()].map((id) => this.stopSlot(id)));
  }

  private startSlot(slot: WorkerSlot): void {
    const entry: Running = {
      slot,
      failures: 0,
      startedAt: 0,
      stopping: false,
      exited: Promise.resolve(),
    };
    this.running.set(slot.id, entry);
    this.requestStart(entry);
  }

  /** Starts `entry` once fewer than {@link FleetOptions.startWidth} processes are starting. */
  private requestStart(entry: Running): void {
    this.toStart.push(entry);
    this.startNext();
  }

  private startNext(): void {
    while (this.starting < this.startWidth && this.toStart.length > 0) {
      const entry = this.toStart.shift()!;
      if (entry.stopping) continue;
      this.starting++;
      let done = false;
      const started = (): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.starting--;
        this.startNext();
      };
      // A process that never says it is ready must not hold the others back for good.
      const timer = setTimeout(started, START_TIMEOUT_MS);
      timer.unref();
      this.spawn(entry, started);
    }
  }

  private spawn(entry: Running, started: () => void): void {
    const config: WorkerProcessConfig = {
      ...this.options.temporal,
      taskQueues: entry.slot.taskQueues,
      bundlePath: this.options.bundlePath,
      supervisorPid: process.pid,
      ...(this.options.accountsSocket ? { accountsSocket: this.options.accountsSocket } : {}),
      reporting: entry.slot.reporting,
    };
    const log = createWriteStream(path.join(this.options.logDir, `${entry.slot.id}.log`), {
      flags: 'a',
    });
    const child = spawn(process.execPath, [...WORKER_V8_FLAGS, this.options.script], {
      env: { ...(this.options.env ?? process.env), [WORKER_CONFIG_ENV]: JSON.stringify(config) },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: a terminal's Ctrl-C reaches the launch alone, which decides what
      // its workers do (a cancellation the user confirms runs on them). They stop when the fleet
      // says so, or when they see it gone (task-worker.ts).
      detached: true,
    });
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    // The tail of what it said so far: enough to find the ready line split across two chunks.
    let said = '';
    const listen = (chunk: Buffer): void => {
      const text = said + chunk.toString();
      if (!text.includes(WORKER_READY)) {
        said = text.slice(-(WORKER_READY.length - 1));
        return;
      }
      child.stdout.off('data', listen);
      started();
    };
    child.stdout.on('data', listen);
    entry.child = child;
    entry.startedAt = Date.now();
    entry.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        started();
        log.end();
        entry.child = undefined;
        resolve();
        if (entry.stopping) return;
        if (Date.now() - entry.startedAt > HEALTHY_AFTER_MS) entry.failures = 0;
        const restartInMs = Math.min(RESTART_MAX_MS, RESTART_BASE_MS * 2 ** entry.failures);
        entry.failures++;
        this.options.onEvent?.({
          kind: 'exited',
          slot: entry.slot.id,
          pid: child.pid ?? 0,
          code,
          signal,
          restartInMs,
        });
        entry.restartTimer = setTimeout(() => this.requestStart(entry), restartInMs);
      });
    });
    if (child.pid) this.options.onEvent?.({ kind: 'started', slot: entry.slot.id, pid: child.pid });
  }

  private async stopSlot(id: string): Promise<void> {
    const entry = this.running.get(id);
    if (!entry) return;
    this.running.delete(id);
    entry.stopping = true;
    clearTimeout(entry.restartTimer);
    const child = entry.child;
    if (child) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await entry.exited;
      clearTimeout(killer);
    }
  }
}

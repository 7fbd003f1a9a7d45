/**
 * How many worker slots an eval set runs with (SPEC §1, worker processes). A slot is a task
 * queue served by one worker process; the eval set assigns each task to a slot as it starts it.
 * `max_workers` sets the count; unset, the host sizes it: no more processes than its cores keep
 * busy, nor than its memory headroom holds at a process's measured cost, nor than there are
 * tasks. The count never limits how many tasks run at once (`max_tasks` does): a slot serves
 * every task assigned to it from one queue, with one core worker and one workflow isolate.
 */

/** What a host offers, as the planning process reads it. */
export interface HostCapacity {
  /** Logical CPUs (`os.availableParallelism()`). */
  cpus: number;
  /** All RAM. */
  totalBytes: number;
  /** Available memory plus free swap: what the memory gate watches (SPEC §2, gate 6). */
  headroomBytes: number;
}

/**
 * Processes per CPU. A worker process runs its activities on one thread and its workflows on
 * another, and a sample spends most of its time waiting on a provider or a sandbox: two per CPU
 * keeps the cores busy while one process waits on a collection or a log rewrite.
 */
export const PROCESSES_PER_CPU = 2;

/**
 * What one worker process is planned to cost: idle it takes about 180 MiB, at 200 samples in
 * flight about 400 MiB, and a task's Inspect log rewrite lifts that by a few hundred MiB for
 * under a second (docs/orchestration.md).
 */
export const PROCESS_BYTES = 512 * 1024 ** 2;

/** The share of RAM the memory gate keeps free: the fleet is sized not to reach it. */
export const MEMORY_FLOOR = 0.1;

/** A host's capacity from its CPUs and its memory (src/util/host-memory.ts reads both). */
export function capacityOf(
  cpus: number,
  memory: { totalBytes: number; availableBytes: number; swapFreeBytes: number },
): HostCapacity {
  return {
    cpus,
    totalBytes: memory.totalBytes,
    headroomBytes: memory.availableBytes + memory.swapFreeBytes,
  };
}

/** The headroom above the memory gate's floor: what a fleet may grow into. */
export function spareBytes(host: HostCapacity): number {
  return host.headroomBytes - MEMORY_FLOOR * host.totalBytes;
}

/** Slots the host holds for `tasks` tasks when `max_workers` is unset (at least one). */
export function hostSlots(tasks: number, host: HostCapacity): number {
  const byCpu = PROCESSES_PER_CPU * Math.max(1, host.cpus);
  const byMemory = Math.floor(spareBytes(host) / PROCESS_BYTES);
  return Math.max(1, Math.min(tasks, byCpu, byMemory));
}

/** The eval set's slot count: `max_workers` if set (never above the tasks), else the host's. */
export function slotCount(tasks: number, maxWorkers: number | null, host: HostCapacity): number {
  if (maxWorkers !== null) return Math.max(1, Math.min(tasks, maxWorkers));
  return hostSlots(tasks, host);
}

/**
 * The slot (1-based) for the next task to start: the one serving the fewest running tasks, the
 * lowest of those on a tie, so the first tasks spread over the first slots and a slot freed by
 * a finished task takes the next. `running` holds the slot of each running task.
 */
export function leastLoadedSlot(slots: number, running: number[]): number {
  const load = new Array<number>(slots).fill(0);
  for (const k of running) if (k >= 1 && k <= slots) load[k - 1]++;
  let best = 0;
  for (let k = 1; k < slots; k++) if (load[k] < load[best]) best = k;
  return best + 1;
}

/** A worker process serving its queue with nothing in flight (docs/orchestration.md). */
export const IDLE_PROCESS_BYTES = 180 * 1024 ** 2;

/**
 * What a sample in flight adds to its worker: about 220 MiB for 200 samples one call each
 * (docs/orchestration.md). A sandboxed sample's container holds its own memory on top.
 */
export const SAMPLE_BYTES = Math.round(1.1 * 1024 ** 2);

/** What a fleet of `slots` processes with `samplesAtOnce` samples in flight is set to hold. */
export function fleetPeakBytes(slots: number, samplesAtOnce: number): number {
  return slots * IDLE_PROCESS_BYTES + samplesAtOnce * SAMPLE_BYTES;
}

/**
 * Why a run looks set to outgrow the host (SPEC §2, gate 6), or undefined when it fits: its
 * fleet at its most (every slot, the most samples its settings let run at once) against the
 * headroom above the gate's floor. The gate would hold the ramp there; a fleet explicitly wider
 * than the host, or samples pinned high, may meet the kernel's OOM killer before that.
 */
export function memoryWarning(shape: {
  slots: number;
  samplesAtOnce: number;
  host: HostCapacity;
}): string | undefined {
  const { slots, samplesAtOnce, host } = shape;
  const peak = fleetPeakBytes(slots, samplesAtOnce);
  const spare = spareBytes(host);
  if (peak <= spare) return undefined;
  const gib = (bytes: number): string => `${(Math.max(0, bytes) / 1024 ** 3).toFixed(1)} GiB`;
  return (
    `this run looks set to outgrow the host's memory: ${slots} worker process(es) ` +
    `(${gib(slots * IDLE_PROCESS_BYTES)} idle) and up to ${samplesAtOnce} samples at once ` +
    `(${gib(samplesAtOnce * SAMPLE_BYTES)}) want about ${gib(peak)}, and the host has ` +
    `${gib(spare)} free above the ${MEMORY_FLOOR * 100}% of RAM the memory gate keeps. ` +
    'The gate holds the ramp there; lower max_workers, max_tasks or max_samples ' +
    "(or samples_ramp's hi) to stay clear of it."
  );
}

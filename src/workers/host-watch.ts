/**
 * The host's memory as its owner (the supervisor) watches it for the memory gate (SPEC §2,
 * gate 6): the headroom (available memory plus free swap) sampled each second, so a dip between
 * two reports still counts, and the resident memory of the owner and its worker processes.
 */
import { readFileSync } from 'node:fs';
import { readHostMemory, type HostMemory } from '../util/host-memory';
import type { HostReport } from '../workflows/types';

export interface HostWatchOptions {
  /** `<hostname>:<pid>`, the name the host's accounts report under. */
  host: string;
  /** The owner's worker processes (its own counts in the fleet's memory too). */
  workerPids(): number[];
  /** How often the headroom is sampled. */
  intervalMs?: number;
  /** For tests: the host's memory, and a process's resident bytes. */
  readMemory?: () => HostMemory;
  residentBytes?: (pid: number) => number | undefined;
}

const SAMPLE_MS = 1_000;

export class HostWatch {
  /** Per reader (an eval set's report loop), the lowest headroom since it last took a report. */
  private readonly lowest = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private readonly readMemory: () => HostMemory;
  private readonly residentBytes: (pid: number) => number | undefined;

  constructor(private readonly options: HostWatchOptions) {
    this.readMemory = options.readMemory ?? readHostMemory;
    this.residentBytes = options.residentBytes ?? residentBytes;
  }

  /** Samples until {@link stop}; the timer keeps no process alive. */
  start(): void {
    this.timer ??= setInterval(() => this.sample(), this.options.intervalMs ?? SAMPLE_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Reads the headroom now and lowers each reader's mark to it. */
  sample(): HostMemory {
    const memory = this.readMemory();
    const headroom = headroomOf(memory);
    for (const [reader, lowest] of this.lowest) this.lowest.set(reader, Math.min(lowest, headroom));
    return memory;
  }

  /**
   * The report for `reader`: the memory now, and the lowest headroom since its last report (its
   * first covers only now). Its mark starts again from now.
   */
  report(reader: string): HostReport {
    const memory = this.sample();
    const headroomBytes = headroomOf(memory);
    const lowestHeadroomBytes = Math.min(this.lowest.get(reader) ?? headroomBytes, headroomBytes);
    this.lowest.set(reader, headroomBytes);
    // A worker that has exited since the fleet last looked holds nothing, and is not counted.
    const workers = this.options.workerPids().flatMap((pid) => {
      const bytes = this.residentBytes(pid);
      return bytes === undefined ? [] : [bytes];
    });
    const own = this.residentBytes(process.pid) ?? 0;
    const fleetResidentBytes = workers.reduce((sum, bytes) => sum + bytes, own);
    return {
      host: this.options.host,
      totalBytes: memory.totalBytes,
      headroomBytes,
      lowestHeadroomBytes,
      fleetResidentBytes,
      processes: workers.length,
    };
  }

  /** Stops following `reader` (its eval set is over). */
  forget(reader: string): void {
    this.lowest.delete(reader);
  }
}

function headroomOf(memory: HostMemory): number {
  return memory.availableBytes + memory.swapFreeBytes;
}

/** A process's resident memory (`VmRSS`), or undefined once it has exited (or off Linux). */
export function residentBytes(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
    return kib === undefined ? undefined : Number(kib) * 1024;
  } catch {
    return undefined;
  }
}

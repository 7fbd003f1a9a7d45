/** The host's memory as the kernel counts it: what the slot sizing and the memory gate read. */
import { readFileSync } from 'node:fs';
import * as os from 'node:os';

export interface HostMemory {
  totalBytes: number;
  /** `MemAvailable`: what can be had without swapping (page cache that can be dropped counts). */
  availableBytes: number;
  swapFreeBytes: number;
}

/** Reads /proc/meminfo; without it (macOS), Node's totals, which count no swap. */
export function readHostMemory(): HostMemory {
  try {
    const text = readFileSync('/proc/meminfo', 'utf8');
    const kib = (field: string): number | undefined => {
      const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(text);
      return match ? Number(match[1]) * 1024 : undefined;
    };
    const totalBytes = kib('MemTotal');
    const availableBytes = kib('MemAvailable');
    if (totalBytes !== undefined && availableBytes !== undefined) {
      return { totalBytes, availableBytes, swapFreeBytes: kib('SwapFree') ?? 0 };
    }
  } catch {
    // No /proc: below.
  }
  return { totalBytes: os.totalmem(), availableBytes: os.freemem(), swapFreeBytes: 0 };
}

/**
 * The processes of a run as Linux's /proc shows them: a process's descendants, what kind of
 * Steward process each is, and their resident memory sampled over a run.
 */
import { readFileSync, readdirSync } from 'node:fs';

export type ProcessKind = 'launch' | 'worker' | 'temporal' | 'other';

/** The command line of `pid`, or undefined once it has exited. */
export function commandLine(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return undefined;
  }
}

/**
 * The fields of /proc/<pid>/stat after the command name (its state first, then its parent), or
 * undefined once it is gone.
 */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: the fields after its last `)` do not.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** A process's state letter (`R`, `S`, `Z` for exited but not reaped yet, ...), or undefined once gone. */
export function processState(pid: number): string | undefined {
  return statFields(pid)?.[0];
}

/** Every live process's parent, from /proc/<pid>/stat. */
function parents(): Map<number, number> {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    // Undefined: exited between the listing and the read.
    if (fields) parentOf.set(Number(entry), Number(fields[1]));
  }
  return parentOf;
}

/** Every live descendant of `roots`, the roots included. */
export function processTree(roots: number[]): number[] {
  const childrenOf = new Map<number, number[]>();
  for (const [pid, ppid] of parents()) childrenOf.set(ppid, [...(childrenOf.get(ppid) ?? []), pid]);
  const tree: number[] = [];
  const visit = (pid: number): void => {
    tree.push(pid);
    for (const child of childrenOf.get(pid) ?? []) visit(child);
  };
  for (const root of new Set(roots)) visit(root);
  return [...new Set(tree)];
}

/** The pid of the Temporal dev server serving `port` (the CLI's `server start-dev`), if any. */
export function devServerPid(port: number): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const args = commandLine(Number(entry));
    if (!args?.includes('start-dev')) continue;
    const at = args.indexOf('--port');
    if (at >= 0 && args[at + 1] === String(port)) return Number(entry);
  }
  return undefined;
}

/** What a process of a run is, from its command line. */
export function processKind(args: string[]): ProcessKind {
  if (args.includes('start-dev')) return 'temporal';
  if (args.some((arg) => arg.endsWith('task-worker.js'))) return 'worker';
  if (args.includes('launch')) return 'launch';
  return 'other';
}

/** Resident memory now and at its peak (`VmRSS`, `VmHWM`), in KiB; undefined once exited. */
export function memoryKb(pid: number): { rss: number; peak: number } | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  return { rss: kbField(status, 'VmRSS'), peak: kbField(status, 'VmHWM') };
}

/**
 * Proportional memory now (`Pss`: each page shared with other processes, such as the `node`
 * binary's and the Temporal SDK's native library's, divided among them), in KiB; undefined once
 * exited. Dearer than {@link memoryKb}: the kernel walks the process's page tables, about 1 ms
 * for 450 MiB resident.
 */
export function pssKb(pid: number): number | undefined {
  try {
    return kbField(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'), 'Pss');
  } catch {
    return undefined;
  }
}

function kbField(text: string, name: string): number {
  return Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
}

/** Clock ticks per second of `/proc/<pid>/stat` times (`getconf CLK_TCK`, 100 on Linux). */
const CLOCK_TICKS = 100;

/** CPU time the process has used so far (user + system), in seconds; undefined once exited. */
export function cpuSeconds(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Fields after the command name (which may hold spaces) start at the state, field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

export interface MemoryReport {
  /** The largest sum of resident memory over every watched process at one sampling, KiB. */
  peakTotalKb: number;
  /**
   * The same for proportional memory (`Pss`), KiB: what the processes together held of the
   * machine, a page they share counted once. Their RSS sum counts it in each of them. Read at
   * every {@link PSS_EVERY}th sampling.
   */
  peakTotalPssKb: number;
  /** Per kind, the largest peak (`VmHWM`) of any one process of that kind, KiB. */
  peakByKindKb: Partial<Record<ProcessKind, number>>;
  /** Distinct processes seen, per kind. */
  processesByKind: Partial<Record<ProcessKind, number>>;
  /**
   * CPU seconds used while watched, per kind, summed over its processes (as last sampled: a
   * process's last moments before it exits may be missed).
   */
  cpuSecondsByKind: Partial<Record<ProcessKind, number>>;
  samplings: number;
}

/** Samplings per reading of the processes' proportional memory ({@link pssKb}). */
export const PSS_EVERY = 4;

/**
 * Samples the resident memory of `roots` and all their descendants every `intervalMs` until
 * stopped. The per-process peak comes from the kernel's high-water mark, so a spike between two
 * samplings still counts there; the total is what one sampling saw at once. The proportional
 * total is read at every {@link PSS_EVERY}th sampling only, so that the watch does not take a
 * measurable share of the CPU of the run it measures.
 */
export function watchMemory(roots: () => number[], intervalMs = 250): { stop(): MemoryReport } {
  // A child just forked shows its parent's command line and memory until it execs: what a
  // process is, and its peak, count from its last command line.
  const commands = new Map<number, string>();
  const kinds = new Map<number, ProcessKind>();
  const peaks = new Map<number, number>();
  /**
   * Per process: CPU seconds it had used when first seen, and when last seen. A process already
   * running at the first sampling counts from then; one born later counts from its birth.
   */
  const cpu = new Map<number, { from: number; last: number }>();
  let peakTotalKb = 0;
  let peakTotalPssKb = 0;
  let samplings = 0;
  const sample = (): void => {
    let total = 0;
    let totalPss = 0;
    const readPss = samplings % PSS_EVERY === 0;
    const pids = processTree(roots());
    for (const pid of pids) {
      const memory = memoryKb(pid);
      const args = commandLine(pid);
      // An exited process its parent has not reaped yet (a zombie) has no memory left and an
      // empty command line: it stays what it was, its peak with it.
      if (!memory || !args || args.length === 0) continue;
      const command = args.join(' ');
      if (commands.get(pid) !== command) {
        commands.set(pid, command);
        kinds.set(pid, processKind(args));
        peaks.delete(pid);
      }
      peaks.set(pid, Math.max(peaks.get(pid) ?? 0, memory.peak));
      total += memory.rss;
      if (readPss) totalPss += pssKb(pid) ?? 0;
      const used = cpuSeconds(pid);
      if (used !== undefined) {
        const from = cpu.get(pid)?.from ?? (samplings === 0 ? used : 0);
        cpu.set(pid, { from, last: used });
      }
    }
    peakTotalKb = Math.max(peakTotalKb, total);
    peakTotalPssKb = Math.max(peakTotalPssKb, totalPss);
    samplings++;
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      const report: MemoryReport = {
        peakTotalKb,
        peakTotalPssKb,
        peakByKindKb: {},
        processesByKind: {},
        cpuSecondsByKind: {},
        samplings,
      };
      for (const [pid, kind] of kinds) {
        report.peakByKindKb[kind] = Math.max(report.peakByKindKb[kind] ?? 0, peaks.get(pid) ?? 0);
        report.processesByKind[kind] = (report.processesByKind[kind] ?? 0) + 1;
        const used = cpu.get(pid);
        if (used) {
          report.cpuSecondsByKind[kind] =
            (report.cpuSecondsByKind[kind] ?? 0) + used.last - used.from;
        }
      }
      return report;
    },
  };
}

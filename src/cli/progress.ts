/**
 * Live progress of an eval set: a bar per task on a terminal, plain lines otherwise (CI logs,
 * pipes). Always on stderr, so stdout carries only the result.
 */
import { MultiBar, Presets, type SingleBar } from 'cli-progress';
import type { EvalSetStatus, TaskStatus } from '../workflows/types';

export interface ProgressView {
  update(status: EvalSetStatus): void;
  stop(): void;
}

/** Plain lines are printed when a task's numbers change, at most this often. */
const PLAIN_EVERY_MS = 5_000;

/**
 * A view that draws nothing once stopped: a status reading still in flight when the run ends
 * must not print after the run's summary.
 */
export function createProgress(stream: NodeJS.WriteStream = process.stderr): ProgressView {
  const view = stream.isTTY ? barProgress(stream) : plainProgress(stream);
  let stopped = false;
  return {
    update(status) {
      if (!stopped) view.update(status);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      view.stop();
    },
  };
}

function barProgress(stream: NodeJS.WriteStream): ProgressView {
  const multibar = new MultiBar(
    {
      stream,
      format:
        ' {task} [{bar}] {value}/{total} | in flight {in_flight} | setpoint {setpoint} | errors {errored}',
      hideCursor: true,
      clearOnComplete: false,
      autopadding: true,
    },
    Presets.shades_classic,
  );
  const bars = new Map<string, SingleBar>();
  return {
    update(status) {
      const width = Math.max(...status.tasks.map((t) => t.name.length));
      for (const task of status.tasks) {
        const payload = { ...task, task: task.name.padEnd(width) };
        const done = task.completed + task.errored;
        const bar = bars.get(task.name);
        if (bar) bar.update(done, payload);
        else bars.set(task.name, multibar.create(task.samples, done, payload));
      }
    },
    stop: () => multibar.stop(),
  };
}

function plainProgress(stream: NodeJS.WriteStream): ProgressView {
  const last = new Map<string, string>();
  let printedAt = 0;
  return {
    update(status) {
      const now = Date.now();
      const lines = status.tasks.map((t) => [t.name, plainLine(status.eval_set, t)] as const);
      const changed = lines.filter(([name, line]) => last.get(name) !== line);
      const finishing = changed.some(
        ([name]) => status.tasks.find((t) => t.name === name)?.state === 'done',
      );
      if (changed.length === 0 || (now - printedAt < PLAIN_EVERY_MS && !finishing)) return;
      printedAt = now;
      for (const [name, line] of changed) {
        last.set(name, line);
        stream.write(`${line}\n`);
      }
    },
    stop: () => undefined,
  };
}

function plainLine(evalSet: string, t: TaskStatus): string {
  return `[${evalSet}] ${t.name}: ${t.completed + t.errored}/${t.samples} done, ${t.in_flight} in flight, setpoint ${t.setpoint}, ${t.errored} errors${t.state === 'done' ? ' (finished)' : ''}`;
}

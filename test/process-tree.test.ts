/**
 * The memory sampler behind the load and orchestration benches (test/helpers/process-tree.ts),
 * on real processes: what kind each is and its peak survive the process's exit.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { processState, processTree, watchMemory } from './helpers/process-tree';

test('a worker that has exited but is not reaped yet keeps its kind and its peak', async () => {
  // `exec sleep` replaces the shell with a parent that never waits: the worker stays a zombie
  // until the sleep ends, its command line empty, as one the supervisor has not reaped yet.
  const worker = `node -e "Buffer.alloc(64 * 1024 * 1024, 1); setTimeout(() => {}, 800)" /x/task-worker.js`;
  const parent = spawn('sh', ['-c', `${worker} & exec sleep 30`], { stdio: 'ignore' });
  const watch = watchMemory(() => [parent.pid!], 50);
  try {
    const deadline = Date.now() + 10_000;
    let zombie: number | undefined;
    while (zombie === undefined && Date.now() < deadline) {
      zombie = processTree([parent.pid!]).find((pid) => processState(pid) === 'Z');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(zombie).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 200)); // a few samplings of the zombie
    const report = watch.stop();
    expect(report.processesByKind.worker).toBe(1);
    expect(report.peakByKindKb.worker).toBeGreaterThan(64 * 1024);
  } finally {
    parent.kill('SIGKILL');
    await once(parent, 'exit').catch(() => undefined);
  }
});

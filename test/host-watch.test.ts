/**
 * The supervisor's watch on the host's memory (src/workers/host-watch.ts): a dip between two
 * reports still reaches the next one, each eval set's report loop keeps its own mark, and the
 * fleet's resident memory sums the supervisor's and its workers' as /proc shows them.
 */
import { spawn } from 'node:child_process';
import { HostWatch, residentBytes } from '../src/workers/host-watch';
import type { HostMemory } from '../src/util/host-memory';

const GIB = 1024 ** 3;

function scripted(headrooms: number[]): () => HostMemory {
  let i = 0;
  return () => {
    const available = headrooms[Math.min(i++, headrooms.length - 1)];
    return { totalBytes: 16 * GIB, availableBytes: available * GIB, swapFreeBytes: GIB };
  };
}

test('a dip between two reports reaches the next report of every reader, once', () => {
  const watch = new HostWatch({
    host: 'h:1',
    workerPids: () => [],
    // Read by: report(a), report(b), three samples, report(a), report(b), report(a).
    readMemory: scripted([9, 9, 8, 2, 7, 7, 7, 7]),
    residentBytes: () => 0,
  });
  expect(watch.report('a')).toMatchObject({
    headroomBytes: 10 * GIB,
    lowestHeadroomBytes: 10 * GIB,
  });
  expect(watch.report('b')).toMatchObject({ lowestHeadroomBytes: 10 * GIB });
  watch.sample();
  watch.sample();
  watch.sample();
  expect(watch.report('a')).toMatchObject({ headroomBytes: 8 * GIB, lowestHeadroomBytes: 3 * GIB });
  expect(watch.report('b')).toMatchObject({ headroomBytes: 8 * GIB, lowestHeadroomBytes: 3 * GIB });
  // The dip was reported: the next window starts from the headroom then.
  expect(watch.report('a')).toMatchObject({ lowestHeadroomBytes: 8 * GIB });
});

test('a forgotten reader starts again from its next report', () => {
  const watch = new HostWatch({
    host: 'h:1',
    workerPids: () => [],
    readMemory: scripted([9, 1, 9]),
    residentBytes: () => 0,
  });
  watch.report('a');
  watch.sample();
  watch.forget('a');
  expect(watch.report('a')).toMatchObject({ lowestHeadroomBytes: 10 * GIB });
});

test("the fleet's resident memory is the supervisor's and its live workers', summed", async () => {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  try {
    await new Promise((resolve) => child.once('spawn', resolve));
    // Until it has started node, the child is a fork of a few pages.
    while ((residentBytes(child.pid!) ?? 0) < 10 * 1024 ** 2) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const own = residentBytes(process.pid)!;
    const worker = residentBytes(child.pid!)!;
    expect(own).toBeGreaterThan(20 * 1024 ** 2);
    expect(worker).toBeGreaterThan(10 * 1024 ** 2);
    const watch = new HostWatch({ host: 'h:1', workerPids: () => [child.pid!, 999_999_999] });
    const report = watch.report('a');
    // The pid that is no process is not counted.
    expect(report.processes).toBe(1);
    // Both are live and their RSS moves a little between reads.
    expect(report.fleetResidentBytes).toBeGreaterThan(0.8 * (own + worker));
    expect(report.fleetResidentBytes).toBeLessThan(1.25 * (own + worker));
    expect(report.totalBytes).toBeGreaterThan(report.headroomBytes - report.totalBytes);
  } finally {
    child.kill('SIGKILL');
  }
});

test('a process that has exited has no resident memory', () => {
  expect(residentBytes(999_999_999)).toBeUndefined();
});

/** Worker slots: how many a host holds, and which one a starting task takes (src/core/slots.ts). */
import {
  hostSlots,
  leastLoadedSlot,
  MEMORY_FLOOR,
  PROCESS_BYTES,
  slotCount,
  type HostCapacity,
} from '../../src/core/slots';

const GiB = 1024 ** 3;
const host = (cpus: number, totalGiB: number, headroomGiB: number): HostCapacity => ({
  cpus,
  totalBytes: totalGiB * GiB,
  headroomBytes: headroomGiB * GiB,
});

describe('hostSlots: the fewest of tasks, the cores and the memory headroom', () => {
  test.each([
    ['this machine, 100 tasks: the cores bind', 100, host(2, 24, 22), 4],
    ['this machine, 3 tasks: one process a task', 3, host(2, 24, 22), 3],
    ['a 64-core box with 16 GiB: the memory binds', 500, host(64, 16, 14), 24],
    ['no headroom above the floor: still one', 10, host(8, 16, 1), 1],
    ['a single task', 1, host(64, 256, 250), 1],
  ])('%s', (_, tasks, capacity, expected) => {
    expect(hostSlots(tasks, capacity)).toBe(expected);
  });

  test('the memory ceiling is the headroom above the gate floor over a process', () => {
    const capacity = host(1_000, 16, 10);
    const spare = capacity.headroomBytes - MEMORY_FLOOR * capacity.totalBytes;
    expect(hostSlots(10_000, capacity)).toBe(Math.floor(spare / PROCESS_BYTES));
  });

  test('max_workers wins over the host, never above the tasks', () => {
    expect(slotCount(100, 1, host(64, 256, 250))).toBe(1);
    expect(slotCount(100, 40, host(2, 4, 1))).toBe(40);
    expect(slotCount(3, 40, host(2, 24, 22))).toBe(3);
    expect(slotCount(100, null, host(2, 24, 22))).toBe(4);
  });
});

describe('leastLoadedSlot: where a starting task goes', () => {
  test('the first tasks spread over the slots in order, then round again', () => {
    const running: number[] = [];
    for (let i = 0; i < 7; i++) running.push(leastLoadedSlot(3, running));
    expect(running).toEqual([1, 2, 3, 1, 2, 3, 1]);
  });

  test('a slot freed by a finished task takes the next one', () => {
    expect(leastLoadedSlot(3, [1, 3, 1, 3, 2])).toBe(2);
    expect(leastLoadedSlot(4, [1, 2, 4])).toBe(3);
  });

  test('slots outside the count (a plan of another size) are not counted', () => {
    expect(leastLoadedSlot(2, [3, 3, 1])).toBe(2);
  });
});

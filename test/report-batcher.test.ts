import { ReportBatcher } from '../src/activities/report-batcher';

/** A send whose calls are recorded and settled by hand, as a slow server would settle them. */
function manualSend() {
  const calls: {
    target: string;
    reports: number[];
    resolve: () => void;
    reject: (e: Error) => void;
  }[] = [];
  const send = (target: string, reports: number[]) =>
    new Promise<void>((resolve, reject) => calls.push({ target, reports, resolve, reject }));
  return { calls, send };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('ReportBatcher', () => {
  it('sends a lone report at once', async () => {
    const { calls, send } = manualSend();
    const batcher = new ReportBatcher(send, 100);
    const done = batcher.report('t1', 1);
    await tick();
    expect(calls.map((c) => c.reports)).toEqual([[1]]);
    calls[0].resolve();
    await expect(done).resolves.toBeUndefined();
  });

  it('coalesces what arrives while a send is in flight into the next send, one in flight per target', async () => {
    const { calls, send } = manualSend();
    const batcher = new ReportBatcher(send, 100);
    const first = batcher.report('t1', 1);
    await tick();
    const later = [2, 3, 4].map((r) => batcher.report('t1', r));
    const other = batcher.report('t2', 9);
    await tick();
    // t1 waits for its first send; t2 has its own.
    expect(calls.map((c) => [c.target, c.reports])).toEqual([
      ['t1', [1]],
      ['t2', [9]],
    ]);
    calls[0].resolve();
    await first;
    await tick();
    expect(calls[2]).toMatchObject({ target: 't1', reports: [2, 3, 4] });
    calls[2].resolve();
    calls[1].resolve();
    await Promise.all([...later, other]);
  });

  it('settles a report only with the send that carried it, and rejects that batch alone on failure', async () => {
    const { calls, send } = manualSend();
    const batcher = new ReportBatcher(send, 2);
    const settled: string[] = [];
    const track = (r: number) =>
      batcher.report('t', r).then(
        () => settled.push(`${r} ok`),
        (e: Error) => settled.push(`${r} ${e.message}`),
      );
    const all = [1, 2, 3, 4].map(track);
    await tick();
    calls[0].resolve(); // [1]
    await tick();
    expect(calls[1].reports).toEqual([2, 3]); // at most 2 a send
    calls[1].reject(new Error('deadline exceeded'));
    await tick();
    expect(calls[2].reports).toEqual([4]);
    expect(settled).toEqual(['1 ok', '2 deadline exceeded', '3 deadline exceeded']);
    calls[2].resolve();
    await Promise.all(all);
    expect(settled).toEqual(['1 ok', '2 deadline exceeded', '3 deadline exceeded', '4 ok']);
  });

  it('rejects the batch when the send throws at once, and goes on sending', async () => {
    let fail = true;
    const sent: number[][] = [];
    const batcher = new ReportBatcher<number>((_t, reports) => {
      if (fail) throw new Error('no client');
      sent.push(reports);
      return Promise.resolve();
    }, 10);
    await expect(batcher.report('t', 1)).rejects.toThrow('no client');
    fail = false;
    await batcher.report('t', 2);
    expect(sent).toEqual([[2]]);
  });

  describe('a held target', () => {
    afterEach(() => jest.useRealTimers());

    it('waits for the send in flight, then sends nothing until released, then all that queued', async () => {
      const { calls, send } = manualSend();
      const batcher = new ReportBatcher(send, 100);
      const first = batcher.report('t1', 1);
      await tick();
      let held = false;
      const holding = batcher.hold('t1', 10_000).then(() => (held = true));
      const queued = [2, 3].map((r) => batcher.report('t1', r));
      const other = batcher.report('t2', 9);
      await tick();
      // The hold waits for [1] to arrive; other targets are not held.
      expect(held).toBe(false);
      expect(calls.map((c) => [c.target, c.reports])).toEqual([
        ['t1', [1]],
        ['t2', [9]],
      ]);
      calls[0].resolve();
      await first;
      await holding;
      await tick();
      expect(calls).toHaveLength(2);
      batcher.release('t1');
      await tick();
      expect(calls[2]).toMatchObject({ target: 't1', reports: [2, 3] });
      calls[2].resolve();
      calls[1].resolve();
      await Promise.all([...queued, other]);
    });

    it('resolves at once when nothing is in flight, and runs out by itself', async () => {
      jest.useFakeTimers();
      const sent: number[][] = [];
      const batcher = new ReportBatcher<number>((_t, reports) => {
        sent.push(reports);
        return Promise.resolve();
      }, 10);
      await batcher.hold('t', 5_000);
      const report = batcher.report('t', 1);
      await jest.advanceTimersByTimeAsync(4_999);
      expect(sent).toEqual([]);
      await jest.advanceTimersByTimeAsync(1);
      await report;
      expect(sent).toEqual([[1]]);
    });

    it('a release with no hold, or for a target never seen, changes nothing', async () => {
      const { calls, send } = manualSend();
      const batcher = new ReportBatcher(send, 100);
      batcher.release('nobody');
      const done = batcher.report('t', 1);
      batcher.release('t');
      await tick();
      expect(calls).toHaveLength(1);
      calls[0].resolve();
      await done;
    });
  });
});

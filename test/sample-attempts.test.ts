/**
 * A sample's attempts, unit by unit: when it is stuck (`ProgressWatch`: no progress for
 * `stuck_after` of working time; model calls returning and sandbox commands starting and ending
 * are progress, waits for the provider are not time), and which failed attempts run again
 * (`runsAgain`: stuck once, other failures up to `retry_on_error`, fatal classes never).
 */
import type { Model, ModelOutput } from '../src/definition/types';
import { ErrorType } from '../src/errors';
import { runsAgain } from '../src/eval/retries';
import { ProgressWatch, watchedModel, watchedSandbox } from '../src/eval/stuck';
import type { Sandbox, SandboxService } from '../src/sandbox/types';

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

const stuckAfter = (watch: ProgressWatch): string | undefined =>
  watch.signal.aborted ? (watch.signal.reason as Error).name : undefined;

describe('ProgressWatch', () => {
  test('aborts with SampleStuck (type StewardSampleStuck) once stuck_after passes without progress', () => {
    const watch = new ProgressWatch(10_000);
    jest.advanceTimersByTime(9_999);
    expect(stuckAfter(watch)).toBeUndefined();
    jest.advanceTimersByTime(1);
    expect(stuckAfter(watch)).toBe('SampleStuck');
    expect(watch.signal.reason).toMatchObject({ type: ErrorType.stuck, afterSeconds: 10 });
    watch.dispose();
  });

  test('each progress starts the clock again', () => {
    const watch = new ProgressWatch(10_000);
    for (let i = 0; i < 5; i++) {
      jest.advanceTimersByTime(8_000);
      watch.progress();
    }
    expect(stuckAfter(watch)).toBeUndefined();
    expect(watch.note()).toEqual({ progress: 5, idle_s: 0 });
    jest.advanceTimersByTime(10_000);
    expect(stuckAfter(watch)).toBe('SampleStuck');
    watch.dispose();
  });

  test('time spent waiting for a connection slot or a backoff does not count', async () => {
    const watch = new ProgressWatch(10_000);
    let release!: () => void;
    const waited = watch.during(new Promise<void>((resolve) => (release = resolve)));
    jest.advanceTimersByTime(60_000);
    expect(stuckAfter(watch)).toBeUndefined();
    release();
    await waited;
    jest.advanceTimersByTime(9_000);
    expect(stuckAfter(watch)).toBeUndefined();
    jest.advanceTimersByTime(1_000);
    expect(stuckAfter(watch)).toBe('SampleStuck');
    watch.dispose();
  });

  test('disposed, it never fires', () => {
    const watch = new ProgressWatch(1_000);
    watch.dispose();
    jest.advanceTimersByTime(5_000);
    expect(stuckAfter(watch)).toBeUndefined();
  });
});

describe('what counts as progress', () => {
  const output: ModelOutput = {
    completion: 'ok',
    message: { role: 'assistant', content: 'ok' },
    usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 },
    stop_reason: 'stop',
  } as ModelOutput;

  test("a model call returning, not the call's start; its waits are kept out of the clock", async () => {
    const watch = new ProgressWatch(10_000);
    let answer!: (o: ModelOutput) => void;
    let slot!: () => void;
    const model: Model = {
      name: 'm',
      generate: async (_messages, options) => {
        // The account's wait for a slot, then the call itself.
        await options!.waiting!.during(new Promise<void>((resolve) => (slot = resolve)));
        return new Promise<ModelOutput>((resolve) => (answer = resolve));
      },
    };
    const call = watchedModel(model, watch).generate([{ role: 'user', content: 'hi' }]);
    jest.advanceTimersByTime(30_000);
    expect(watch.note().progress).toBe(0);
    slot();
    await Promise.resolve();
    await Promise.resolve();
    jest.advanceTimersByTime(9_000);
    expect(stuckAfter(watch)).toBeUndefined();
    answer(output);
    await call;
    expect(watch.note().progress).toBe(1);
    watch.dispose();
  });

  test('a sandbox command starting and ending, on the default service and on another', async () => {
    const watch = new ProgressWatch(10_000);
    const service = (name: string): SandboxService => ({
      name,
      exec: async () => ({
        exitCode: 0,
        stdout: '',
        stderr: '',
        truncated: false,
        timedOut: false,
      }),
      writeFile: async () => undefined,
      readFile: async () => '',
    });
    const sandbox = {
      ...service('default'),
      owner: { evalSet: 'e', task: 't', sampleId: 1, epoch: 1 },
      project: 'p',
      services: ['default', 'db'],
      service,
      destroy: async () => ({ complete: true, errors: [] }),
    } as Sandbox;
    const watched = watchedSandbox(sandbox, watch);
    await watched.exec(['true']);
    await watched.service('db').exec(['true']);
    expect(watch.note().progress).toBe(4);
    expect(watched.services).toEqual(['default', 'db']);
    watch.dispose();
  });
});

describe('runsAgain', () => {
  const stuck = { error_type: ErrorType.stuck };
  const failed = { error_type: ErrorType.sample };

  test('a stuck attempt runs again once, whatever retry_on_error says', () => {
    expect(runsAgain(ErrorType.stuck, [], 0)).toBe(true);
    expect(runsAgain(ErrorType.stuck, [stuck], 0)).toBe(false);
    expect(runsAgain(ErrorType.stuck, [stuck], 5)).toBe(false);
    expect(runsAgain(ErrorType.stuck, [failed, failed], 2)).toBe(true);
  });

  test('another failure runs again up to retry_on_error times; stuck attempts do not use it up', () => {
    expect(runsAgain(ErrorType.sample, [], 0)).toBe(false);
    expect(runsAgain(ErrorType.sample, [], 2)).toBe(true);
    expect(runsAgain(ErrorType.sample, [failed], 2)).toBe(true);
    expect(runsAgain(ErrorType.sample, [failed, failed], 2)).toBe(false);
    expect(runsAgain(ErrorType.sample, [stuck, failed], 2)).toBe(true);
    expect(runsAgain(ErrorType.modelRetriesExhausted, [], 1)).toBe(true);
    expect(runsAgain(ErrorType.networkPoolExhausted, [], 1)).toBe(true);
    expect(runsAgain(undefined, [], 1)).toBe(true);
  });

  test.each([
    ErrorType.modelFatal,
    ErrorType.config,
    ErrorType.badInput,
    ErrorType.snapshot,
    ErrorType.logWrite,
    ErrorType.cancelled,
  ])('%s is final: every attempt would meet it again', (type) => {
    expect(runsAgain(type, [], 5)).toBe(false);
  });
});

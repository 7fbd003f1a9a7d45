import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { writeData } from '../../scripts/peers/eval-sets';
import {
  idealSeconds,
  profileLimits,
  refillOnlySeconds,
  type ProfileSettings,
} from '../../scripts/peers/profiles';
import { promptTokens, type SimRequest } from '../../src/sim/script';

const timing = { latencyMs: 1_900, jitterMs: 200, seed: 1 };

describe('idealSeconds', () => {
  it.each([
    // name, limits, calls, tokens, ideal
    ['the wall: calls × mean latency / concurrency', { concurrency: 60 }, 3_600, 0, 120],
    ['a wall wider than the calls: one latency', { concurrency: 100 }, 50, 0, 2],
    ['rpm: the bucket’s minute at once, the rest at its refill', { rpm: 1_800 }, 3_600, 0, 62],
    ['rpm: calls that fit the full bucket take one latency', { rpm: 1_800 }, 1_000, 0, 2],
    ['tpm: the same in tokens', { tpm: 180_000 }, 3_600, 360_000, 62],
    ['the most binding limit wins', { concurrency: 10, rpm: 1_800 }, 3_600, 0, 720],
  ])('%s', (_name, limits, calls, tokens, ideal) => {
    expect(idealSeconds({ ...timing, ...limits }, { calls, tokens })).toBeCloseTo(ideal, 6);
  });
});

describe('refillOnlySeconds', () => {
  it.each([
    ['rpm: every call at the refill rate', { rpm: 1_800 }, 3_600, 0, 122],
    ['tpm: every token at the refill rate', { tpm: 180_000 }, 3_600, 360_000, 122],
    ['the wall has no burst: the ideal', { concurrency: 60 }, 3_600, 0, 120],
  ])('%s', (_name, limits, calls, tokens, seconds) => {
    expect(refillOnlySeconds({ ...timing, ...limits }, { calls, tokens })).toBeCloseTo(seconds, 6);
  });
});

describe('profileLimits', () => {
  const settings: ProfileSettings = { concurrency: 60, rpm: 1_800, ...timing };

  it('gives each profile its one limit', () => {
    expect(profileLimits('wall', settings, 100)).toEqual({ ...timing, concurrency: 60 });
    expect(profileLimits('rpm', settings, 100)).toEqual({ ...timing, rpm: 1_800 });
  });

  it('sizes the tokens bucket to refill at the requests bucket’s calls per second, unless set', () => {
    expect(profileLimits('tpm', settings, 108.25)).toEqual({ ...timing, tpm: 194_850 });
    expect(profileLimits('tpm', { ...settings, tpm: 5_000 }, 108.25)).toEqual({
      ...timing,
      tpm: 5_000,
    });
  });
});

describe('writeData', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-peers-'));
  });
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  async function rows(file: string): Promise<{ id: number; input: string; target: string }[]> {
    const text = await fs.readFile(path.join(dir, file), 'utf8');
    return text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: number; input: string; target: string });
  }

  it('splits the samples over the tasks, the same questions whatever the task count', async () => {
    const one = await writeData(dir, 1, 10);
    const three = await writeData(dir, 3, 10);
    expect(three.tasks.map((t) => t.samples)).toEqual([4, 3, 3]);
    const all = await rows(one.tasks[0].dataset);
    const split = (await Promise.all(three.tasks.map((t) => rows(t.dataset)))).flat();
    expect(split.map((r) => r.input)).toEqual(all.map((r) => r.input));
    expect(three.tokens).toBe(one.tokens);
    // Ids are unique within each task, as both tools require.
    expect((await rows(three.tasks[1].dataset)).map((r) => r.id)).toEqual([1, 2, 3]);
  });

  it('counts tokens as the simulated provider counts a one-message prompt and its answer', async () => {
    const data = await writeData(dir, 1, 50);
    const samples = await rows(data.tasks[0].dataset);
    const counted = samples.reduce((sum, s) => {
      const request = { model: 'm', messages: [{ role: 'user', content: s.input }] } as SimRequest;
      // The default script answers with the ANSWER line, which is the target.
      return sum + promptTokens(request) + Math.max(1, Math.ceil(s.target.length / 4));
    }, 0);
    expect(data.tokens).toBe(counted);
    // Prompts vary in size, so a tokens limit is not a requests limit in disguise.
    const sizes = samples.map((s) => s.input.length);
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeGreaterThan(300);
  });
});

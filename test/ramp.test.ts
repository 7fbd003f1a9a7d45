/**
 * The ramp against the real dev server and the simulated provider over real HTTP, with a 2 s
 * tend: the climb one step per tend, hold and resume, narrowing a live run, pinning, and the
 * reversal on sustained pushback. Operators' signals go through the stock `temporal` CLI.
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { startSimProvider, type SimProvider } from '../src/sim/provider';
import { findTemporalBinary } from '../src/temporal/binary';
import { statusQuery, type EvalSetStatus, type RampHistoryEntry } from '../src/workflows/types';
import { peakConcurrency, readSampleRecords } from './helpers/results';
import { STEWARD_BIN, runCommand, tempDir, uniqueName } from './helpers/cli';

const TEND_SECONDS = 2;
/** AdaptiveConnections' cooldown after a rate-limit cut: no growth until it ends. */
const CONTROLLER_COOLDOWN_MS = 15_000;

interface Run {
  name: string;
  logDir: string;
  /** Resolves with the CLI's exit code. */
  exited: Promise<number | null>;
  kill(): void;
}

describe('the ramp', () => {
  let client: Client;
  let temporal: string;

  beforeAll(async () => {
    client = new Client({
      connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS! }),
      namespace: process.env.TEMPORAL_NAMESPACE,
    });
    temporal = await findTemporalBinary();
  });

  afterAll(async () => {
    await client.connection.close();
  });

  /** Launches an eval set of one task whose samples make one call to `provider`. */
  async function launch(
    prefix: string,
    provider: SimProvider,
    samples: number,
    flags: string[] = [],
    dir?: string,
    model = 'openai-api/sim/ramp',
  ): Promise<Run> {
    dir ??= await tempDir();
    const name = uniqueName(prefix);
    const lines = Array.from({ length: samples }, (_, i) =>
      JSON.stringify({ id: i + 1, input: `ANSWER: ${i}`, target: String(i) }),
    );
    await fs.writeFile(path.join(dir, 'data.jsonl'), `${lines.join('\n')}\n`);
    const file = path.join(dir, 'evalset.yaml');
    await fs.writeFile(
      file,
      [
        `name: ${name}`,
        'tasks:',
        '  - name: t',
        '    dataset: data.jsonl',
        '    solver: [generate]',
        '    scorer: match',
        `    model: ${model}`,
        '',
      ].join('\n'),
    );
    const logDir = path.join(dir, 'logs');
    const child = spawn(
      process.execPath,
      [
        STEWARD_BIN,
        'launch',
        file,
        '--json',
        '--log-dir',
        logDir,
        '--tend-interval',
        String(TEND_SECONDS),
        ...flags,
      ],
      {
        cwd: dir,
        env: {
          ...process.env,
          SIM_BASE_URL: provider.url,
          SIM_API_KEY: 'sim',
          ANTHROPIC_BASE_URL: provider.anthropicUrl,
          ANTHROPIC_API_KEY: 'sim',
        },
        stdio: 'ignore',
      },
    );
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    return { name, logDir, exited, kill: () => child.kill('SIGINT') };
  }

  async function status(run: Run): Promise<EvalSetStatus | undefined> {
    return client.workflow
      .getHandle(`steward-${run.name}`)
      .query(statusQuery)
      .catch(() => undefined);
  }

  /** Polls the live status until `predicate` holds; returns every status seen. */
  async function until(
    run: Run,
    predicate: (s: EvalSetStatus) => boolean,
    timeoutMs = 120_000,
  ): Promise<EvalSetStatus> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const s = await status(run);
      if (s && predicate(s)) return s;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`timed out waiting on ${run.name}`);
  }

  async function signal(run: Run, name: string, input: unknown): Promise<void> {
    const result = await runCommand(temporal, [
      'workflow',
      'signal',
      '--address',
      process.env.TEMPORAL_ADDRESS!,
      '--workflow-id',
      `steward-${run.name}`,
      '--name',
      name,
      '--input',
      JSON.stringify(input),
    ]);
    expect(result.code).toBe(0);
  }

  /** Ends a run the test is done with: the CLI stops its fleet, the workflows are terminated. */
  async function stop(run: Run): Promise<void> {
    run.kill();
    await run.exited;
    for (const id of [`steward-${run.name}`, `steward-${run.name}/t`]) {
      await client.workflow
        .getHandle(id)
        .terminate('test done')
        .catch(() => undefined);
    }
  }

  async function history(run: Run): Promise<RampHistoryEntry[]> {
    const text = await fs.readFile(path.join(run.logDir, 'ramp-history.jsonl'), 'utf8');
    return text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as RampHistoryEntry);
  }

  const setpointOf = (s: EvalSetStatus): number => s.tasks[0].setpoint;

  test('a generous provider: 50 → 70 → … → 200, one step per tend, connections at the ceiling', async () => {
    const provider = await startSimProvider({ latencyMs: 5_000, jitterMs: 200 });
    let run: Run | undefined;
    try {
      run = await launch('climb', provider, 800);
      const top = await until(run, (s) => s.tasks[0]?.setpoint === 200);
      expect(top.tasks[0].connection_limit).toBe(200);
      expect(await run.exited).toBe(0);
      const steps = (await history(run)).filter((e) => e.kind === 'setpoint');
      expect(steps.map((e) => [e.from, e.to])).toEqual([
        [50, 70],
        [70, 90],
        [90, 110],
        [110, 130],
        [130, 150],
        [150, 170],
        [170, 190],
        [190, 200],
      ]);
      // One step per tend: never two within one tend interval.
      const times = steps.map((e) => Date.parse(e.time));
      for (let i = 1; i < times.length; i++)
        expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(TEND_SECONDS * 900);
      expect(provider.stats().rate_limited).toBe(0);
    } finally {
      if (run) await stop(run);
      await provider.close();
    }
  });

  test('hold stops the climb, resume restarts it, narrowing brings a task down at the next tend', async () => {
    const provider = await startSimProvider({ latencyMs: 5_000, jitterMs: 200 });
    let run: Run | undefined;
    try {
      run = await launch('steer', provider, 1_000);
      await until(run, (s) => (s.tasks[0]?.setpoint ?? 0) >= 90);
      await signal(run, 'holdRamp', { reason: 'provider looks unhappy', by: 'test' });
      const held = await until(run, (s) => s.tasks[0]?.ramp_state === 'held');
      const heldAt = setpointOf(held);
      expect(held.tasks[0].ramp_reason).toBe('provider looks unhappy');
      await new Promise((r) => setTimeout(r, 3 * TEND_SECONDS * 1000));
      expect(setpointOf((await status(run))!)).toBe(heldAt);

      await signal(run, 'resumeRamp', { by: 'test' });
      await until(run, (s) => (s.tasks[0]?.setpoint ?? 0) >= 160);
      await signal(run, 'setSamplesRamp', { range: [50, 100], by: 'test' });
      await until(run, (s) => s.tasks[0]?.setpoint === 100, 4 * TEND_SECONDS * 1000);
      expect(await run.exited).toBe(0);

      const entries = await history(run);
      const hold = entries.findIndex((e) => e.kind === 'hold');
      const resume = entries.findIndex((e) => e.kind === 'resume');
      expect(entries[hold]).toMatchObject({
        task: '*',
        reason: 'provider looks unhappy',
        by: 'test',
      });
      // Nothing climbed between hold and resume; it climbed after.
      expect(entries.slice(hold, resume).filter((e) => e.kind === 'setpoint')).toEqual([]);
      expect(entries.slice(resume).some((e) => e.kind === 'setpoint' && e.to! > e.from!)).toBe(
        true,
      );
      const narrowed = entries.find((e) => e.kind === 'setpoint' && e.to === 100);
      expect(narrowed!.from).toBeGreaterThanOrEqual(160);
      expect(narrowed!.reason).toMatch(/range/);
      // No sample was cancelled or run twice: each completed once, by its first attempt.
      const records = await readSampleRecords(run.logDir, 't');
      expect(records).toHaveLength(1_000);
      expect(records.every((r) => r.attempt === 1)).toBe(true);
    } finally {
      if (run) await stop(run);
      await provider.close();
    }
  });

  test("a host short of memory holds every climb (gate 6); status and tend.jsonl show the hosts' memory", async () => {
    const provider = await startSimProvider({ latencyMs: 5_000, jitterMs: 200 });
    let run: Run | undefined;
    try {
      run = await launch('memory', provider, 1_000);
      // The supervisor's own report: this machine, its worker processes and what they hold.
      const reported = await until(
        run,
        (s) => (s.tasks[0]?.setpoint ?? 0) >= 90 && !!s.hosts?.length,
      );
      const [own] = reported.hosts!;
      expect(own.host).toMatch(/:\d+$/);
      expect(own.processes).toBeGreaterThanOrEqual(1);
      expect(own.fleet_resident_bytes).toBeGreaterThan(100 * 1024 ** 2);
      // The window's lowest counts the headroom at the report itself.
      expect(own.lowest_headroom_share).toBeGreaterThan(0.1);
      expect(own.lowest_headroom_share).toBeLessThanOrEqual(own.headroom_bytes / own.total_bytes);

      // A second host whose headroom dips to 6.25% of its RAM, reporting every second.
      const GiB = 1024 ** 3;
      const tight = {
        host: 'tight:1',
        totalBytes: 16 * GiB,
        headroomBytes: 2 * GiB,
        lowestHeadroomBytes: 1 * GiB,
        fleetResidentBytes: 14 * GiB,
        processes: 8,
      };
      let reporting = true;
      const reports = (async () => {
        while (reporting) {
          await signal(run!, 'hostReport', tight);
          await new Promise((r) => setTimeout(r, 1_000));
        }
      })();
      const held = await until(run, (s) =>
        (s.tasks[0]?.ramp_reason ?? '').includes('host memory low (tight:1: headroom 6.2% of RAM'),
      );
      const heldAt = setpointOf(held);
      await new Promise((r) => setTimeout(r, 3 * TEND_SECONDS * 1000));
      expect(setpointOf((await status(run))!)).toBe(heldAt);
      expect((await status(run))!.hosts!.map((h) => h.host)).toContain('tight:1');
      reporting = false;
      await reports;
      // Its reports stop: the climb goes on.
      await until(run, (s) => setpointOf(s) > heldAt);

      const tends = (await fs.readFile(path.join(run.logDir, 'tend.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { hosts?: { host: string; processes: number }[] });
      expect(tends.some((t) => t.hosts?.some((h) => h.host === own.host && h.processes >= 1))).toBe(
        true,
      );
    } finally {
      if (run) await stop(run);
      await provider.close();
    }
  });

  test('editing _steward.yaml while steward launch runs narrows the live run at the next tend', async () => {
    const provider = await startSimProvider({ latencyMs: 5_000, jitterMs: 200 });
    const dir = await tempDir();
    const stewardYaml = path.join(dir, '_steward.yaml');
    await fs.writeFile(stewardYaml, 'samples_ramp: [50, 200]\n');
    let run: Run | undefined;
    try {
      run = await launch('edit', provider, 1_000, [], dir);
      await until(run, (s) => (s.tasks[0]?.setpoint ?? 0) >= 110);
      await fs.writeFile(stewardYaml, 'samples_ramp: [50, 90]\n');
      const narrowed = await until(
        run,
        (s) => s.tasks[0]?.setpoint === 90,
        6 * TEND_SECONDS * 1000,
      );
      expect(
        narrowed.ramp_history.some(
          (e) => e.kind === 'range' && e.reason === 'samples_ramp set to [50, 90]',
        ),
      ).toBe(true);
    } finally {
      if (run) await stop(run);
      await provider.close();
    }
  });

  test('max_samples 30 stays exactly 30 throughout', async () => {
    const provider = await startSimProvider({ latencyMs: 1_000, jitterMs: 100 });
    let run: Run | undefined;
    try {
      run = await launch('pinned', provider, 300, ['--max-samples', '30']);
      const seen = new Set<number>();
      // Watch until the CLI exits (a finished eval set answers no query once its workers stop).
      let exited = false;
      void run.exited.then(() => (exited = true));
      while (!exited) {
        const s = await status(run);
        if (s?.tasks[0]?.state === 'running') seen.add(setpointOf(s));
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(await run.exited).toBe(0);
      expect([...seen]).toEqual([30]);
      const entries = await fs
        .readFile(path.join(run.logDir, 'ramp-history.jsonl'), 'utf8')
        .catch(() => '');
      expect(entries).not.toMatch(/"kind":"setpoint"/);
      const peak = peakConcurrency(await readSampleRecords(run.logDir, 't'));
      expect(peak).toBeLessThanOrEqual(30);
      expect(peak).toBeGreaterThanOrEqual(25);
    } finally {
      if (run) await stop(run);
      await provider.close();
    }
  });

  test('a provider of 40 concurrent requests: the ceiling is held below where it pushed back, and the 429s stop', async () => {
    // 120 samples of one 2 s call each want far more than 40 calls at once, even on a loaded
    // machine where starting a sample is slow; the controllers double past 40 before the first
    // 429. Without the wall they would sit at 64 after the cut, and go on meeting 429s.
    const provider = await startSimProvider({ latencyMs: 2_000, jitterMs: 100, concurrency: 40 });
    const providerStart = Date.now();
    const run = await launch('wall', provider, 3_000, ['--samples-ramp', '120,200']);
    try {
      const held = await until(run, (s) => s.tasks[0]?.connection_limit === 40);
      const walls = held.ramp_history.filter((e) => e.reason.startsWith('wall: '));
      expect(walls.length).toBeGreaterThanOrEqual(1);
      const last = walls[walls.length - 1];
      // The level is the calls in flight when the provider refused one: just over its 40.
      const level = Number(/pushed back at (\d+) connections/.exec(last.reason)![1]);
      expect(level).toBeGreaterThanOrEqual(41);
      expect(level).toBeLessThanOrEqual(45);
      expect(last).toMatchObject({ kind: 'connections', to: 40 });
      expect(last.reason).toBe(
        `wall: the provider pushed back at ${level} connections; held at 40 for 120 s before trying ${level} again`,
      );

      // Held there, the controllers never walk into it again: not one 429 in the next windows,
      // counted once the workers have picked the ceiling up (they poll every second) and the
      // calls admitted under the old limit (2 s each) have drained. The windows outlast the
      // cooldown of the controllers' cut, after which they climb back to the ceiling.
      await new Promise((r) => setTimeout(r, 4_000));
      const from = Math.ceil((Date.now() - providerStart) / 1000) + 1;
      await new Promise((r) => setTimeout(r, 5 * TEND_SECONDS * 1000 + CONTROLLER_COOLDOWN_MS));
      const after = provider.stats().series.filter((p) => p.t >= from);
      expect(after.length).toBeGreaterThanOrEqual(4 * TEND_SECONDS);
      expect(after.reduce((n, p) => n + p.rate_limited, 0)).toBe(0);
      expect(Math.max(...after.map((p) => p.in_flight))).toBe(40);
    } finally {
      await stop(run);
      await provider.close();
    }
  });

  test('a provider limited below demand: after two pushback windows the setpoint and ceiling come down', async () => {
    // 60 requests a minute: the first seconds use up the bucket, then every window sees 429s.
    // A provider that sends no x-ratelimit-* headers (many compatible servers): with them, the
    // account's calls are paced below the limit and the 429s stop (test/pacing.test.ts).
    const provider = await startSimProvider({
      latencyMs: 1_000,
      jitterMs: 100,
      rpm: 60,
      rateLimitHeaders: false,
    });
    const providerStart = Date.now();
    const run = await launch('pushback', provider, 600, ['--samples-ramp', '20,200']);
    try {
      const down = await until(run, (s) =>
        s.ramp_history.some((e) => e.kind === 'setpoint' && e.to! < e.from!),
      );
      const reversal = down.ramp_history.find((e) => e.kind === 'setpoint' && e.to! < e.from!)!;
      expect(reversal.reason).toBe('reversal: rate-limit pushback in 2 consecutive windows');
      expect(reversal.to).toBe(reversal.from! - 20);
      const clamp = down.ramp_history.find((e) => e.kind === 'connections' && e.to! < e.from!);
      expect(clamp!.to).toBeGreaterThanOrEqual(20);
      expect(clamp!.to).toBeLessThan(200);

      // The 429 rate falls: fewer per second in the windows after the reversal than before it.
      await new Promise((r) => setTimeout(r, 4 * TEND_SECONDS * 1000));
      const series = provider.stats().series;
      const at = Math.floor((Date.parse(reversal.time) - providerStart) / 1000);
      const rate = (from: number, to: number): number => {
        const points = series.filter((p) => p.t >= from && p.t < to);
        return points.reduce((n, p) => n + p.rate_limited, 0) / Math.max(1, points.length);
      };
      expect(rate(at + 2, at + 2 + 3 * TEND_SECONDS)).toBeLessThan(rate(at - 2 * TEND_SECONDS, at));
    } finally {
      await stop(run);
      await provider.close();
    }
  });

  test("Anthropic's 529 overloaded_error is pushback: after two windows of it the ramp reverses", async () => {
    // A third of the calls answered 529, every window; the samples' retries get through.
    const provider = await startSimProvider({ latencyMs: 1_000, jitterMs: 100, overloadRate: 0.3 });
    const run = await launch(
      'overloaded',
      provider,
      600,
      ['--samples-ramp', '20,200'],
      undefined,
      'anthropic/sim-claude',
    );
    try {
      const down = await until(run, (s) =>
        s.ramp_history.some((e) => e.kind === 'setpoint' && e.to! < e.from!),
      );
      const reversal = down.ramp_history.find((e) => e.kind === 'setpoint' && e.to! < e.from!)!;
      expect(reversal.reason).toBe('reversal: rate-limit pushback in 2 consecutive windows');
      expect(reversal.to).toBe(reversal.from! - 20);
      // The controllers cut on it too, and the ceiling came down to where they fell.
      const clamp = down.ramp_history.find((e) => e.kind === 'connections' && e.to! < e.from!);
      expect(clamp!.to).toBeLessThan(200);
      // Nothing but overload pushed back: no 429, and no sample failed for it.
      const stats = provider.stats();
      expect(stats.by_status['529']).toBeGreaterThan(0);
      expect(stats.by_status['429']).toBeUndefined();
      expect(down.tasks[0].errored).toBe(0);
    } finally {
      await stop(run);
      await provider.close();
    }
  });
});

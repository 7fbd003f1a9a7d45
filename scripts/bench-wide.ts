/**
 * Steward against Inspect AI's `eval_set` (0.3.285) on wide eval sets, side by side in the same
 * run: many tasks of few samples, and few tasks of many, against a provider with room for a
 * thousand calls at once, so that what bounds the wall time is the tool, not the provider.
 *
 *   100x20   100 tasks × 20 samples     (2,000 calls: ideal 2 waves of 5 s)
 *   500x4    500 tasks × 4 samples      (2,000 calls)
 *   20x1000  20 tasks × 1,000 samples   (20,000 calls: ideal 20 waves)
 *   4x1500   4 tasks × 1,500 samples    (6,000 calls)
 *
 * The same data for both (one `generate` call per sample, scored by `match`:
 * `peers/eval-sets.ts`), each tool at its defaults and driven as a user drives it:
 * `steward launch <definition> --json --log-dir ...` on a fresh Temporal dev server of its own,
 * and `python -m inspect_ai eval-set tasks.py --model openai-api/sim/peers` from the venv
 * `scripts/peers/setup-inspect.sh` makes. The provider is `steward sim-provider --concurrency
 * 1000 --latency-ms 5000` with no rate limit, started afresh for every run and read over its
 * `/stats` endpoint.
 *
 * For each run: wall time (process start to exit) against the ideal, the seconds to the first
 * call and to the first sample record, the samples completed, the peak memory of all the run's
 * processes at once (PSS and RSS sums; Steward's include its dev server), the processes seen by
 * kind and their CPU seconds (`test/helpers/process-tree.ts`), and Steward's wall over
 * Inspect's. Below the table, the issue's goals with a verdict each, and per run where the time
 * went (worker process starts, calls in flight over the first minute). Prints it all and writes
 * it to bench/wide-table.txt; each run stops at a deadline (15 min), so a stall cannot hang it.
 *
 *   npm run bench:wide
 *   npm run bench:wide -- --sweeps 100x20 --latency-ms 500
 *   npm run bench:wide -- --sweeps 500x4,4x1500 --tools steward --keep
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { stopDevServer } from '../src/temporal/devserver';
import { writeData } from './peers/eval-sets';
import { TOOL_LABEL, type Tool } from './peers/report';
import { startSimProcess, type SimLimits, type SimProcess } from './peers/sim-process';
import { positive, setupInspect, withoutToolSettings } from './peers/tools';
import { ROOT } from './ramp/launch';
import { runInspect, runSteward, type WideContext, type WideRun } from './wide/measure';
import { goals, legend, summaryLine, table, timelines } from './wide/report';
import { idealSeconds, selectSweeps, SWEEPS, totalSamples } from './wide/sweeps';

const run = promisify(execFile);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      sweeps: { type: 'string', default: SWEEPS.map((s) => s.name).join(',') },
      tools: { type: 'string', default: 'steward,inspect' },
      concurrency: { type: 'string', default: '1000' },
      'latency-ms': { type: 'string', default: '5000' },
      'jitter-ms': { type: 'string', default: '0' },
      seed: { type: 'string', default: '7' },
      'deadline-s': { type: 'string', default: '900' },
      table: { type: 'string', default: path.join(ROOT, 'bench', 'wide-table.txt') },
      keep: { type: 'boolean', default: false },
    },
  });
  const sweeps = selectSweeps(values.sweeps);
  const tools = values.tools.split(',').map((t) => {
    if (t !== 'steward' && t !== 'inspect') throw new Error(`unknown tool ${t}`);
    return t as Tool;
  });
  const limits: SimLimits = {
    concurrency: positive(values.concurrency, '--concurrency'),
    latencyMs: Number(values['latency-ms']),
    jitterMs: Number(values['jitter-ms']),
    seed: Number(values.seed),
  };
  const deadlineMs = positive(values['deadline-s'], '--deadline-s') * 1000;

  const ctx: WideContext = {
    env: withoutToolSettings(process.env),
    python: tools.includes('inspect') ? await setupInspect() : '',
    deadlineMs,
  };
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'steward-bench-wide-'));
  const header = await describeSetting(limits, deadlineMs);
  console.log(header.join('\n'));
  console.log(`runs under ${dir}`);

  const runs: WideRun[] = [];
  let failed = false;
  let sim: SimProcess | undefined;
  let stewardDir: string | undefined;
  // Ctrl-C reaches the tools through the terminal; the provider and the dev server would outlive
  // the bench without this.
  const interrupted = (signal: NodeJS.Signals) => {
    console.error(`${signal}: stopping the provider and the dev server; kept ${dir}`);
    void Promise.allSettled([sim?.close(), stewardDir && stopDevServer(stewardDir)]).then(() =>
      process.exit(130),
    );
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    for (const sweep of sweeps) {
      const sweepDir = path.join(dir, sweep.name);
      await fs.mkdir(sweepDir, { recursive: true });
      // writeData takes the samples over all tasks.
      const data = await writeData(sweepDir, sweep.tasks, totalSamples(sweep));
      const idealS = idealSeconds(sweep, limits);
      for (const tool of tools) {
        console.log(`${sweep.name} (${totalSamples(sweep)} samples), ${TOOL_LABEL[tool]} ...`);
        sim = await startSimProcess(limits);
        stewardDir = tool === 'steward' ? path.join(sweepDir, 'steward', '.steward') : undefined;
        try {
          const one = { sweep, idealS, dir: sweepDir, data, sim };
          const result =
            tool === 'steward' ? await runSteward(ctx, one) : await runInspect(ctx, one);
          runs.push(result);
          console.log(`  ${summaryLine(result)}`);
          if (result.problem) failed = true;
        } catch (error) {
          failed = true;
          console.error(`  failed: ${error instanceof Error ? error.message : String(error)}`);
        } finally {
          await sim.close();
          sim = undefined;
          stewardDir = undefined;
        }
      }
    }
  } finally {
    // Everything measured, for a second look at a kept run (the series, the process starts).
    await fs.writeFile(path.join(dir, 'runs.json'), JSON.stringify(runs));
    if (values.keep || failed) console.log(`kept ${dir} (data, logs, worker logs, provider stats)`);
    else await fs.rm(dir, { recursive: true, force: true });
  }

  const text = [
    ...header,
    `  load average at the end: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
    '',
    table(runs),
    '',
    ...legend(),
    '',
    ...goals(runs, sweeps),
    '',
    ...timelines(runs),
  ].join('\n');
  console.log(`\n${text}`);
  await fs.mkdir(path.dirname(values.table), { recursive: true });
  await fs.writeFile(values.table, `${text}\n`);
  console.log(`table: ${values.table}`);
  if (failed) process.exitCode = 1;
}

/** The table's header: what ran against what, on which machine, in what state. */
async function describeSetting(limits: SimLimits, deadlineMs: number): Promise<string[]> {
  const cpus = os.cpus();
  const git = async (...args: string[]) =>
    (await run('git', args, { cwd: ROOT }).catch(() => ({ stdout: '?' }))).stdout.trim();
  const head = await git('rev-parse', '--short', 'HEAD');
  const dirty = (await git('status', '--porcelain', '--', 'src')).split('\n').filter(Boolean);
  return [
    'Steward vs Inspect AI 0.3.285 (inspect eval-set) on wide eval sets: one model call per sample, both tools at their defaults',
    `  provider: steward sim-provider --concurrency ${limits.concurrency} --latency-ms ${limits.latencyMs} --jitter-ms ${limits.jitterMs} (no rpm/tpm limit), a fresh process per run`,
    `  machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? '?'}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM; load average at the start: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} (other work shares the machine)`,
    `  Steward: HEAD ${head}${dirty.length > 0 ? ` with ${dirty.length} uncommitted file(s) under src/ as built` : ''}; a fresh Temporal dev server per run; deadline ${deadlineMs / 1000} s a run`,
    `  ${new Date().toISOString()}`,
  ];
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

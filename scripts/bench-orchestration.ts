/**
 * Orchestration cost per sample, Steward against Inspect AI in the same run, with the in-process
 * baseline beside them (see scripts/orchestration/measure.ts). Prints the table and writes it to
 * bench/orchestration-table.txt; `--guard` instead writes Steward's share of the baseline to
 * bench/orchestration-guard.json, the figure CI's short run is held to; `--check` runs that short
 * run and exits 1 when Steward keeps less than GUARD_FLOOR of the committed share
 * (test/orchestration.test.ts runs it, in a process of its own like the one that committed it).
 *
 *   npm run bench:orchestration                       # 5,000 samples, both tools
 *   npm run bench:orchestration -- --samples 2000 --tools steward
 *   npm run bench:orchestration -- --guard            # CI's shape, Steward alone: record
 *   npm run bench:orchestration -- --check            # CI's shape, Steward alone: compare
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import {
  orchestrationTable,
  runOrchestration,
  stewardShare,
  type OrchestrationTool,
} from './orchestration/measure';
import { GUARD_FILE, GUARD_FLOOR, GUARD_SAMPLES } from './orchestration/guard';
import { positive, setupInspect } from './peers/tools';
import { ROOT } from './ramp/launch';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      samples: { type: 'string', default: '5000' },
      tools: { type: 'string', default: 'steward,inspect' },
      guard: { type: 'boolean', default: false },
      check: { type: 'boolean', default: false },
      table: { type: 'string', default: path.join(ROOT, 'bench', 'orchestration-table.txt') },
      keep: { type: 'boolean', default: false },
    },
  });
  const short = values.guard || values.check;
  const samples = short ? GUARD_SAMPLES : positive(values.samples, '--samples');
  const tools = (short ? 'steward' : values.tools).split(',').map((t) => {
    if (t !== 'steward' && t !== 'inspect') throw new Error(`unknown tool ${t}`);
    return t as OrchestrationTool;
  });
  const python = tools.includes('inspect') ? await setupInspect() : undefined;
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'steward-bench-orchestration-'));
  try {
    const run = await runOrchestration({ samples, tools, python, dir, deadlineMs: 30 * 60_000 });
    const text = [
      `Orchestration: ${samples} one-call samples, one task, max_samples 200 and max_connections 200,`,
      'against steward sim-provider answering at once with no limits.',
      '',
      orchestrationTable(run),
      '',
      'of baseline: samples/s over the in-process baseline (the same samples through the same',
      'HTTP path, solved and scored 200 at a time in one process, no orchestration).',
    ].join('\n');
    console.log(`\n${text}`);
    const share = stewardShare(run);
    if (values.check) {
      const committed = await readGuard();
      const floor = GUARD_FLOOR * committed.stewardShare;
      const verdict = share !== undefined && share >= floor ? 'ok' : 'FAILED';
      console.log(
        `guard ${verdict}: Steward's share of the baseline ${share?.toFixed(4) ?? 'none'}, ` +
          `floor ${floor.toFixed(4)} (${GUARD_FLOOR} of the committed ${committed.stewardShare.toFixed(4)})`,
      );
      if (verdict !== 'ok') process.exitCode = 1;
    } else if (values.guard) {
      if (share === undefined) throw new Error('the Steward run failed; nothing to record');
      await fs.writeFile(
        GUARD_FILE,
        `${JSON.stringify({ samples, stewardShare: share }, null, 2)}\n`,
      );
      console.log(`guard: ${GUARD_FILE}`);
    } else {
      await fs.writeFile(values.table, `${text}\n`);
      console.log(`table: ${values.table}`);
    }
    if (run.runs.some((r) => r.problem)) process.exitCode = 1;
  } finally {
    if (values.keep) console.log(`kept ${dir}`);
    else await fs.rm(dir, { recursive: true, force: true });
  }
}

async function readGuard(): Promise<{ samples: number; stewardShare: number }> {
  const committed = JSON.parse(await fs.readFile(GUARD_FILE, 'utf8')) as {
    samples: number;
    stewardShare: number;
  };
  if (committed.samples !== GUARD_SAMPLES) {
    throw new Error(
      `${GUARD_FILE} records ${committed.samples} samples, the guard runs ${GUARD_SAMPLES}`,
    );
  }
  return committed;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

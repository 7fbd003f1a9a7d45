/**
 * Orchestration cost per sample, Steward against Inspect AI in the same run, with the in-process
 * baseline beside them (see scripts/orchestration/measure.ts). Prints the table and writes it to
 * bench/orchestration-table.txt; `--guard` instead writes Steward's share of the baseline to
 * bench/orchestration-guard.json, the figure CI's short run is held to (test/orchestration.test.ts).
 *
 *   npm run bench:orchestration                       # 5,000 samples, both tools
 *   npm run bench:orchestration -- --samples 2000 --tools steward
 *   npm run bench:orchestration -- --guard            # CI's shape, Steward alone
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
import { GUARD_FILE, GUARD_SAMPLES } from './orchestration/guard';
import { positive, setupInspect } from './peers/tools';
import { ROOT } from './ramp/launch';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      samples: { type: 'string', default: '5000' },
      tools: { type: 'string', default: 'steward,inspect' },
      guard: { type: 'boolean', default: false },
      table: { type: 'string', default: path.join(ROOT, 'bench', 'orchestration-table.txt') },
      keep: { type: 'boolean', default: false },
    },
  });
  const samples = values.guard ? GUARD_SAMPLES : positive(values.samples, '--samples');
  const tools = (values.guard ? 'steward' : values.tools).split(',').map((t) => {
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
    if (values.guard) {
      const share = stewardShare(run);
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

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

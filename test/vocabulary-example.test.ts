/**
 * examples/multiple-choice.yaml as a newcomer runs it: `steward launch` (on the test's Temporal),
 * the table it prints, and its `.eval` logs as Inspect AI's `read_eval_log` reads them: the
 * scores, the picked answer mapped back to the dataset's letters, the shuffled order in the
 * explanation, and the dataset's choices on each sample. Needs `npm run build` (bin/steward.js
 * runs dist/) and the Inspect venv.
 */
import * as path from 'node:path';
import { REPO_ROOT, runCli, runCommand, tempDir } from './helpers/cli';

const PYTHON =
  process.env.STEWARD_INSPECT_PYTHON ??
  path.join(__dirname, '..', '.tools', 'inspect-venv', 'bin', 'python');

/** What the test reads of each log, with Inspect's own reader. */
const READ_LOGS = `
import glob, json, sys
from inspect_ai.log import read_eval_log
out = {}
for file in sorted(glob.glob(sys.argv[1] + "/*.eval")):
    log = read_eval_log(file)
    out[log.eval.task] = {
        "status": log.status,
        "plan": [[step.solver, step.params] for step in log.plan.steps],
        "metrics": {k: round(m.value, 3) for k, m in log.results.scores[0].metrics.items()},
        "samples": [
            {
                "id": s.id,
                "epoch": s.epoch,
                "choices": s.choices,
                "target": s.target,
                "score": s.scores["choice"].value,
                "answer": s.scores["choice"].answer,
                "explanation": s.scores["choice"].explanation,
                "completion": s.output.completion,
            }
            for s in log.samples
        ],
    }
print(json.dumps(out))
`;

interface LogView {
  status: string;
  plan: Array<[string, Record<string, unknown>]>;
  metrics: Record<string, number>;
  samples: Array<{
    id: string;
    epoch: number;
    choices: string[];
    target: string;
    score: string;
    answer: string;
    explanation: string;
    completion: string;
  }>;
}

test('examples/multiple-choice.yaml runs, and Inspect reads its logs', async () => {
  const logDir = path.join(await tempDir('steward-mc-example-'), 'logs');
  const run = await runCli(
    ['launch', path.join(REPO_ROOT, 'examples', 'multiple-choice.yaml'), '--log-dir', logDir],
    { cwd: REPO_ROOT },
  );
  expect(run.stderr).not.toContain('internal error');
  expect(run.code).toBe(0);
  expect(run.stdout).toMatch(/answer-key\s+24\s+24\s+0\s+0\s+0\s+0\s+mean\s+1\.000\s+0\.000/);
  // The mock answers by the dataset's letter: a seeded shuffle moves most answers away from it.
  expect(run.stdout).toMatch(/answer-key-shuffled\s+24\s+24\s+0\s+0\s+0\s+0\s+mean\s+0\.208/);
  expect(run.stdout).toMatch(/always-c\s+48\s+48\s+0\s+0\s+0\s+0\s+mean\s+0\.250/);

  const read = await runCommand(PYTHON, ['-c', READ_LOGS, logDir]);
  if (read.code !== 0) throw new Error(`Inspect's reader failed:\n${read.stderr}`);
  const logs = JSON.parse(read.stdout) as Record<string, LogView>;
  expect(Object.keys(logs).sort()).toEqual(['always-c', 'answer-key', 'answer-key-shuffled']);
  expect(logs['answer-key'].metrics).toEqual({ accuracy: 1, stderr: 0 });
  expect(logs['always-c'].plan).toEqual([
    ['system_message', { template: 'You are taking a general knowledge quiz.' }],
    ['multiple_choice', { cot: true }],
  ]);
  for (const log of Object.values(logs)) {
    expect(log.status).toBe('success');
    for (const sample of log.samples) {
      expect(sample.choices).toHaveLength(4);
      expect(sample.score).toBe(sample.answer === sample.target ? 'C' : 'I');
    }
  }

  const shuffled = logs['answer-key-shuffled'];
  expect(shuffled.metrics.accuracy).toBeCloseTo(5 / 24, 3);
  const first = shuffled.samples.find((s) => s.id === 'q01')!;
  // The dataset's A) Venus, B) Mars: the model saw Mars first, replied B (Venus there), so it
  // picked the dataset's A; the explanation shows the order it saw and its own letter.
  expect(first).toMatchObject({
    choices: ['Venus', 'Mars', 'Jupiter', 'Mercury'],
    target: 'B',
    score: 'I',
    answer: 'A',
    completion: 'ANSWER: A',
  });
  expect(first.explanation).toBe(
    'The choices were shuffled before the model saw them. It was shown:\n\n' +
      'A) Mars\nB) Venus\nC) Mercury\nD) Jupiter\nand answered, in that order:\nANSWER: B',
  );
}, 120_000);

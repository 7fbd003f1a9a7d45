/**
 * The peers bench's data, written once for both tools: T tasks sharing the samples, each task's
 * samples in its own JSONL file in Inspect AI's format (`id`, `input`, `target`), which
 * Steward reads as well. Each sample is one `generate` call scored by `match`. Then, per run,
 * the same tasks as a Steward definition and as an Inspect task file.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { estimateTokens } from '../../src/sim/script';
import { mulberry32 } from '../../src/util/random';

/** The model both tools call; they read `SIM_BASE_URL` and `SIM_API_KEY` for it. */
export const MODEL = 'openai-api/sim/peers';
export const API_KEY = 'sim-peers';

/** Filler around each question, so prompts vary in size and a tokens limit differs from a requests limit. */
const FILLER_CHARS: [min: number, max: number] = [40, 760];
const FILLER = 'Context that the model reads before it answers. ';

export interface TaskData {
  name: string;
  /** File name, relative to the run's directory. */
  dataset: string;
  samples: number;
}

export interface BenchData {
  tasks: TaskData[];
  /** Prompt + completion tokens of every sample's one call, as the simulated provider counts them. */
  tokens: number;
}

/**
 * Writes `<dir>/t<i>.jsonl` for `taskCount` tasks holding `samples` samples in all (the first
 * tasks take one more when they do not divide evenly). Sample `k` of the whole set is the same
 * question whatever the task count, so the runs of one profile ask the same.
 */
export async function writeData(
  dir: string,
  taskCount: number,
  samples: number,
): Promise<BenchData> {
  const draw = mulberry32(20261201);
  const rows = Array.from({ length: samples }, (_, k) => {
    const length = FILLER_CHARS[0] + Math.floor(draw() * (FILLER_CHARS[1] - FILLER_CHARS[0]));
    const filler = FILLER.repeat(Math.ceil(length / FILLER.length)).slice(0, length);
    const answer = String(k + 1);
    // The simulated provider answers with the `ANSWER:` line of the last user message.
    return { input: `${filler}\nWhat is ${k} + 1?\nANSWER: ${answer}`, target: answer };
  });
  const tokens = rows.reduce(
    (sum, r) => sum + estimateTokens(r.input.length) + estimateTokens(r.target.length),
    0,
  );
  const tasks: TaskData[] = [];
  let next = 0;
  for (let i = 0; i < taskCount; i++) {
    const count = Math.floor(samples / taskCount) + (i < samples % taskCount ? 1 : 0);
    const task = { name: `t${i + 1}`, dataset: `t${i + 1}-of-${taskCount}.jsonl`, samples: count };
    const lines = rows
      .slice(next, next + count)
      .map((row, j) => JSON.stringify({ id: j + 1, ...row }));
    next += count;
    await fs.writeFile(path.join(dir, task.dataset), `${lines.join('\n')}\n`);
    tasks.push(task);
  }
  return { tasks, tokens };
}

/** A Steward definition of the tasks: at its defaults unless `knobs` sets some (`max_samples`). */
export async function writeStewardDefinition(
  dir: string,
  name: string,
  tasks: TaskData[],
  knobs: Record<string, number> = {},
): Promise<string> {
  const file = path.join(dir, `${name}.yaml`);
  const definition = {
    name,
    ...knobs,
    model: MODEL,
    tasks: tasks.map((t) => ({
      name: t.name,
      dataset: t.dataset,
      solver: ['generate'],
      scorer: 'match',
    })),
  };
  await fs.writeFile(file, stringify(definition));
  return file;
}

/** An Inspect AI task file declaring the same tasks, for `inspect eval-set`. */
export async function writeInspectTasks(
  dir: string,
  name: string,
  tasks: TaskData[],
): Promise<string> {
  const file = path.join(dir, `${name}.py`);
  const lines = [
    'from inspect_ai import Task, task',
    'from inspect_ai.dataset import json_dataset',
    'from inspect_ai.scorer import match',
    'from inspect_ai.solver import generate',
    '',
    ...tasks.flatMap((t) => [
      '',
      '@task',
      `def ${t.name}():`,
      `    return Task(dataset=json_dataset(${JSON.stringify(path.join(dir, t.dataset))}), solver=generate(), scorer=match())`,
      '',
    ]),
  ];
  await fs.writeFile(file, `${lines.join('\n')}`);
  return file;
}

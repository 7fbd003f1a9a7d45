/**
 * Writes the ramp bench's eval set: one task of `samples` questions, each answered by a chain of
 * {@link STEPS_PER_SAMPLE} model calls to the simulated provider, scored by `match`.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { MODEL, STEPS_PER_SAMPLE } from './provider';

/** The task's name, as it appears in status and in the ramp history. */
export const TASK = 'bench';

/**
 * Writes `<dir>/ramp.jsonl` once and one definition per name, `<dir>/<name>.yaml`, all of the
 * same task on the same dataset (the eval set's name is its workflow id, so each run needs its
 * own). Returns the definitions' paths by name.
 */
export async function writeBenchEvalSets(
  dir: string,
  names: string[],
  samples: number,
): Promise<Record<string, string>> {
  // The simulated provider answers with the `ANSWER:` line of the last user message.
  const rows = Array.from({ length: samples }, (_, i) =>
    JSON.stringify({ id: i + 1, input: `What is ${i} + 1?\nANSWER: ${i + 1}`, target: `${i + 1}` }),
  );
  await fs.writeFile(path.join(dir, 'ramp.jsonl'), `${rows.join('\n')}\n`);
  const files: Record<string, string> = {};
  for (const name of names) {
    files[name] = path.join(dir, `${name}.yaml`);
    const definition = {
      name,
      model: MODEL,
      tasks: [
        {
          name: TASK,
          dataset: 'ramp.jsonl',
          solver: Array.from({ length: STEPS_PER_SAMPLE }, () => 'generate'),
          scorer: 'match',
        },
      ],
    };
    await fs.writeFile(files[name], stringify(definition));
  }
  return files;
}

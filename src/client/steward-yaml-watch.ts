/**
 * `_steward.yaml` edited while `steward launch` runs: a new `samples_ramp` is sent to the live
 * eval set, which applies it at its next tend. Only when no flag or `STEWARD_SAMPLES_RAMP` wins
 * over the file (the precedence of SPEC §2).
 */
import { unwatchFile, watchFile } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { loadStewardYaml } from '../config/load';
import { STEWARD_YAML } from '../config/settings';
import { rampRangeProblem, samplesRampSchema } from '../config/knobs';
import { setSamplesRampSignal } from '../workflows/types';
import { steerAcrossHandOvers } from './steer-retry';

const POLL_MS = 1_000;

/** Starts watching; returns the function that stops it. */
export function watchStewardYaml(
  dir: string,
  handle: WorkflowHandle,
  say: (line: string) => void,
): () => void {
  const file = path.join(dir, STEWARD_YAML);
  let last: string | undefined;
  void current().then((range) => (last = JSON.stringify(range)));

  async function current(): Promise<unknown> {
    const raw = (await loadStewardYaml(dir).catch(() => undefined)) as
      { samples_ramp?: unknown } | undefined;
    return raw?.samples_ramp;
  }

  const onChange = (): void => {
    void current().then(async (value) => {
      const text = JSON.stringify(value);
      if (text === last || value === undefined) return;
      last = text;
      const parsed = samplesRampSchema.safeParse(value);
      if (!parsed.success || (parsed.data !== false && rampRangeProblem(parsed.data))) {
        say(
          `${file}: samples_ramp: expected [lo, hi] with lo <= hi, or false (${text}); not applied`,
        );
        return;
      }
      const range = { range: parsed.data, by: `${STEWARD_YAML} edit (${os.hostname()})` };
      try {
        await steerAcrossHandOvers(() => handle.signal(setSamplesRampSignal, range));
      } catch (err) {
        // Saving the file again sends it again.
        last = undefined;
        say(`${file} changed, but samples_ramp ${text} was not sent: ${(err as Error).message}`);
        return;
      }
      say(`${file} changed: samples_ramp ${text} takes effect at the next tend`);
    });
  };
  watchFile(file, { interval: POLL_MS }, onChange);
  return () => unwatchFile(file, onChange);
}

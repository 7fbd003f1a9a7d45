/**
 * The knobs are declared once (src/config/knobs.ts). This walks that declaration and checks that
 * every knob reaches every place a user sets or reads one: a flag of `steward launch`, a
 * `STEWARD_*` variable, `_steward.yaml`, the definition, the workflow input, and a row of the
 * README's knob table. A knob added to the schema and missing anywhere fails here.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import {
  checkSamplesRamp,
  KNOBS,
  knobEnvVar,
  knobFlag,
  knobMetaOf,
  knobOption,
  knobsSchema,
  parseKnobText,
  settingsFromFlags,
  type Knob,
} from '../src/config/knobs';
import { chooseSettings, samplesSettingForRange, withDefaults } from '../src/config/settings';
import { validateDefinition } from '../src/config/validate';
import { REPO_ROOT, runCli } from './helpers/cli';

/** Each knob's example value, parsed. */
function example(knob: Knob): unknown {
  const parsed = parseKnobText(knob, knobMetaOf(knob).example);
  if ('error' in parsed) throw new Error(`${knob}: its example does not parse: ${parsed.error}`);
  return parsed.value;
}

let launchHelp: string;
let readmeRows: string[];

beforeAll(async () => {
  const help = await runCli(['launch', '--help']);
  expect(help.code).toBe(0);
  launchHelp = help.stdout;
  const readme = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
  // The section alone: later sections have tables of their own (Notifications' events).
  const start = readme.indexOf('## The knobs');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  readmeRows = section.split('\n').filter((line) => line.startsWith('| `'));
});

test('the schema declares the knobs of SPEC §2, notify, and the sample limits and retries, and nothing else', () => {
  expect([...KNOBS].sort()).toEqual(
    [
      'max_connections',
      'max_samples',
      'max_sandboxes',
      'max_tasks',
      'max_workers',
      'samples_ramp',
      'tend_interval',
      'notify',
      'time_limit',
      'working_limit',
      'message_limit',
      'token_limit',
      'stuck_after',
      'retry_on_error',
    ].sort(),
  );
  expect(Object.keys(knobsSchema.shape)).toEqual([...KNOBS]);
});

describe.each(KNOBS.map((knob) => [knob]))('%s', (knob) => {
  test('has a text parser and help, and its example is a valid value', () => {
    const meta = knobMetaOf(knob);
    expect(meta.help).not.toBe('');
    expect(knobsSchema.shape[knob].safeParse(example(knob)).success).toBe(true);
  });

  test('is a flag of `steward launch`, parsed by the same parser', () => {
    const { placeholder, help } = knobMetaOf(knob);
    expect(launchHelp).toContain(`${knobFlag(knob)} ${placeholder}`);
    expect(launchHelp.replace(/\s+/g, ' ')).toContain(help);
    const flags = { [knobOption(knob)]: example(knob) };
    expect(settingsFromFlags(flags)).toEqual({ [knob]: example(knob) });
    expect(chooseSettings({ flags: settingsFromFlags(flags) }).origins[knob]).toBe('flag');
  });

  test('is a STEWARD_* environment variable', () => {
    const env = { [knobEnvVar(knob)]: knobMetaOf(knob).example };
    const chosen = chooseSettings({ env });
    expect(chosen.errors).toEqual([]);
    expect(chosen.settings).toEqual({ [knob]: example(knob) });
    expect(chosen.origins[knob]).toBe('env');
  });

  test('is a key of _steward.yaml, of the definition and of the workflow input', () => {
    const value = example(knob);
    expect(chooseSettings({ stewardYaml: { [knob]: value } }).settings).toEqual({ [knob]: value });
    expect(chooseSettings({ input: { [knob]: value } }).settings).toEqual({ [knob]: value });
    const { definition, errors } = validateDefinition(
      {
        name: 'k',
        model: 'mockllm/model',
        tasks: [{ name: 't', dataset: [{ input: 'q', target: 'a' }], scorer: 'match' }],
        [knob]: value,
      },
      { file: 'evalset.yaml' },
    );
    expect(errors).toEqual([]);
    expect(definition?.settings).toEqual({ [knob]: value });
  });

  test('changes what Steward runs with', () => {
    expect(withDefaults({ [knob]: example(knob) })).not.toEqual(withDefaults({}));
  });

  test("has a row in README's knob table, with its flag and its variable", () => {
    const row = readmeRows.find((line) => line.startsWith(`| \`${knob}\``));
    expect(row).toBeDefined();
    expect(row).toContain(`\`${knobFlag(knob)} `);
    expect(row).toContain(`\`${knobEnvVar(knob)}\``);
  });
});

test("README's knob table has no row for a knob that does not exist", () => {
  const documented = readmeRows.map((line) => /^\| `([a-z_]+)`/.exec(line)?.[1]);
  expect(documented.sort()).toEqual([...KNOBS].sort());
});

describe('samplesSettingForRange: the one rule for what a samples_ramp means', () => {
  test.each([
    ['a range around 50 starts at 50', [40, 300], { type: 'ramp', lo: 40, hi: 300, start: 50 }],
    ['a range above 50 starts at its lo', [80, 120], { type: 'ramp', lo: 80, hi: 120, start: 80 }],
    ['a range below 50 starts at its hi', [5, 30], { type: 'ramp', lo: 5, hi: 30, start: 30 }],
    ['a one-point range stays there', [7, 7], { type: 'ramp', lo: 7, hi: 7, start: 7 }],
  ] as const)('%s', (_name, range, expected) => {
    expect(samplesSettingForRange(range)).toEqual({ ...expected, step: 20 });
  });

  test('false is a fixed setpoint of 50', () => {
    expect(samplesSettingForRange(false)).toEqual({ type: 'fixed', value: 50 });
  });

  test('is what a resolved samples_ramp means', () => {
    expect(withDefaults({ samples_ramp: [80, 120] }).samples).toEqual(
      samplesSettingForRange([80, 120]),
    );
    expect(withDefaults({}).samples).toEqual(samplesSettingForRange([50, 200]));
  });
});

describe('checkSamplesRamp: a range from outside, checked without throwing', () => {
  test.each([
    [[40, 300], { value: [40, 300] }],
    [[7, 7], { value: [7, 7] }],
    [false, { value: false }],
    [[5, 2], { error: 'lo must not exceed hi' }],
    ['bogus', { error: 'expected [lo, hi] of whole numbers of at least 1, or false' }],
    [[0, 5], { error: 'expected [lo, hi] of whole numbers of at least 1, or false' }],
    [[1.5, 5], { error: 'expected [lo, hi] of whole numbers of at least 1, or false' }],
    [[1, 2, 3], { error: 'expected [lo, hi] of whole numbers of at least 1, or false' }],
    [true, { error: 'expected [lo, hi] of whole numbers of at least 1, or false' }],
    [undefined, { error: 'expected [lo, hi] of whole numbers of at least 1, or false' }],
    [{ rnage: [2, 6] }, { error: 'expected [lo, hi] of whole numbers of at least 1, or false' }],
  ])('%j', (value, expected) => {
    expect(checkSamplesRamp(value)).toEqual(expected);
  });
});

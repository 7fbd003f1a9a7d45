import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { loadStewardYaml } from '../src/config/load';
import { parseKnobText } from '../src/config/knobs';
import {
  NON_KNOB_ENV_VARS,
  resolveSettings,
  type ResolvedSettings,
  type SettingsSources,
} from '../src/config/settings';
import { ConfigError, formatIssue } from '../src/errors';

const DEFAULTS: ResolvedSettings = {
  maxTasks: null,
  samples: { type: 'ramp', lo: 50, hi: 200, step: 20, start: 50 },
  maxSandboxes: null,
  connections: { type: 'adaptive', min: 10, start: 20, max: 100 },
  maxWorkers: null,
  tendIntervalMs: 60_000,
  limits: {},
};

function resolved(sources: SettingsSources) {
  const { settings, errors, warnings } = resolveSettings(sources);
  return { settings, errors: errors.map(formatIssue), warnings: warnings.map(formatIssue) };
}

describe('resolveSettings', () => {
  test('with nothing set, uses the defaults of SPEC §2', () => {
    expect(resolved({})).toEqual({ settings: DEFAULTS, errors: [], warnings: [] });
  });

  // Each row sets max_samples at one level and every level below it: the highest one wins.
  test.each([
    ['the flag over everything', 1],
    ['the environment over _steward.yaml and the definition', 2],
    ['_steward.yaml over the definition', 3],
    ['the definition over the default', 4],
  ])('takes %s', (_name, level) => {
    const sources: SettingsSources = {
      ...(level <= 1 ? { flags: { max_samples: 1 } } : {}),
      ...(level <= 2 ? { env: { STEWARD_MAX_SAMPLES: '2' } } : {}),
      ...(level <= 3 ? { stewardYaml: { max_samples: 3 } } : {}),
      definition: { max_samples: 4 },
    };
    expect(resolved(sources).settings.samples).toEqual({ type: 'pinned', value: level });
  });

  test('resolves each knob on its own', () => {
    const { settings, errors } = resolved({
      flags: { max_tasks: 3 },
      env: { STEWARD_MAX_CONNECTIONS: '40', STEWARD_TEND_INTERVAL: '0.5' },
      stewardYaml: { max_workers: 8, max_tasks: 99 },
      definition: { max_sandboxes: 16, max_connections: 99, samples_ramp: [40, 300] },
    });
    expect(errors).toEqual([]);
    expect(settings).toEqual({
      maxTasks: 3,
      samples: { type: 'ramp', lo: 40, hi: 300, step: 20, start: 50 },
      maxSandboxes: 16,
      connections: { type: 'fixed', n: 40 },
      maxWorkers: 8,
      tendIntervalMs: 500,
      limits: {},
    });
  });

  test.each([
    ['a range around 50 starts at 50', [40, 300], { lo: 40, hi: 300, start: 50 }],
    ['a range above 50 starts at its lo', [80, 120], { lo: 80, hi: 120, start: 80 }],
    ['a range below 50 starts at its hi', [5, 30], { lo: 5, hi: 30, start: 30 }],
    ['a one-point range stays there', [7, 7], { lo: 7, hi: 7, start: 7 }],
  ] as Array<[string, [number, number], object]>)('samples_ramp: %s', (_name, range, expected) => {
    expect(resolved({ stewardYaml: { samples_ramp: range } }).settings.samples).toEqual({
      type: 'ramp',
      step: 20,
      ...expected,
    });
  });

  test('samples_ramp: false keeps tasks at 50', () => {
    expect(resolved({ definition: { samples_ramp: false } }).settings.samples).toEqual({
      type: 'fixed',
      value: 50,
    });
  });

  test.each([
    ['40,300', [40, 300]],
    ['[40, 300]', [40, 300]],
    [' [40,300] ', [40, 300]],
    ['40 , 300', [40, 300]],
    ['false', false],
  ])('reads STEWARD_SAMPLES_RAMP=%j', (text, range) => {
    const { settings, errors } = resolved({
      env: { STEWARD_SAMPLES_RAMP: text },
      stewardYaml: { samples_ramp: [1, 2] },
    });
    expect(errors).toEqual([]);
    expect(settings.samples).toEqual(
      range === false
        ? { type: 'fixed', value: 50 }
        : { type: 'ramp', lo: 40, hi: 300, step: 20, start: 50 },
    );
  });

  test('a pinned max_samples wins over a ramp set higher up, with a warning', () => {
    expect(
      resolved({ env: { STEWARD_SAMPLES_RAMP: '40,300' }, definition: { max_samples: 100 } }),
    ).toEqual({
      settings: { ...DEFAULTS, samples: { type: 'pinned', value: 100 } },
      errors: [],
      warnings: [
        'samples_ramp: STEWARD_SAMPLES_RAMP has no effect: max_samples in the definition pins samples at 100',
      ],
    });
  });

  test.each([
    [
      'an unknown STEWARD_ variable, by name',
      { STEWARD_MAX_SAMPLE: '10' },
      [
        'STEWARD_MAX_SAMPLE: unknown Steward setting; the settings are STEWARD_MAX_TASKS, STEWARD_MAX_SAMPLES, STEWARD_MAX_SANDBOXES, STEWARD_MAX_CONNECTIONS, STEWARD_SAMPLES_RAMP, STEWARD_MAX_WORKERS, STEWARD_TEND_INTERVAL, STEWARD_NOTIFY, STEWARD_TIME_LIMIT, STEWARD_WORKING_LIMIT, STEWARD_MESSAGE_LIMIT, STEWARD_TOKEN_LIMIT, STEWARD_STUCK_AFTER, STEWARD_RETRY_ON_ERROR',
      ],
    ],
    [
      'a number with trailing text',
      { STEWARD_MAX_SAMPLES: '12abc' },
      ['STEWARD_MAX_SAMPLES: expected a positive integer ("12abc")'],
    ],
    ['zero', { STEWARD_MAX_TASKS: '0' }, ['STEWARD_MAX_TASKS: expected a positive integer ("0")']],
    [
      'a negative number',
      { STEWARD_MAX_WORKERS: '-2' },
      ['STEWARD_MAX_WORKERS: expected a positive integer ("-2")'],
    ],
    [
      'exponent notation',
      { STEWARD_MAX_CONNECTIONS: '1e3' },
      ['STEWARD_MAX_CONNECTIONS: expected a positive integer ("1e3")'],
    ],
    [
      'a fraction where an integer is needed',
      { STEWARD_MAX_SANDBOXES: '2.5' },
      ['STEWARD_MAX_SANDBOXES: expected a positive integer ("2.5")'],
    ],
    [
      'a zero interval',
      { STEWARD_TEND_INTERVAL: '0' },
      ['STEWARD_TEND_INTERVAL: expected a positive number of seconds ("0")'],
    ],
    [
      'an interval with a unit',
      { STEWARD_TEND_INTERVAL: '60s' },
      ['STEWARD_TEND_INTERVAL: expected a positive number of seconds ("60s")'],
    ],
    [
      'a ramp in another notation',
      { STEWARD_SAMPLES_RAMP: '40-300' },
      ['STEWARD_SAMPLES_RAMP: expected "LO,HI", "[LO, HI]" or "false" ("40-300")'],
    ],
    [
      'a ramp with one bracket',
      { STEWARD_SAMPLES_RAMP: '[40,300' },
      ['STEWARD_SAMPLES_RAMP: expected "LO,HI", "[LO, HI]" or "false" ("[40,300")'],
    ],
    [
      'a ramp turned on with true',
      { STEWARD_SAMPLES_RAMP: 'true' },
      ['STEWARD_SAMPLES_RAMP: expected "LO,HI", "[LO, HI]" or "false" ("true")'],
    ],
    [
      'a ramp upside down',
      { STEWARD_SAMPLES_RAMP: '300,40' },
      ['STEWARD_SAMPLES_RAMP: lo must not exceed hi ("300,40")'],
    ],
    [
      'a ramp from zero',
      { STEWARD_SAMPLES_RAMP: '0,40' },
      ['STEWARD_SAMPLES_RAMP: lo must be at least 1 ("0,40")'],
    ],
  ])('refuses %s in the environment', (_name, env, errors) => {
    expect(resolved({ env }).errors).toEqual(errors);
  });

  test('ignores other variables, the allowlisted STEWARD_ ones and empty knobs', () => {
    const env = {
      PATH: '/usr/bin',
      STEWARDSHIP: 'x',
      ...Object.fromEntries(NON_KNOB_ENV_VARS.map((name) => [name, 'anything'])),
      STEWARD_MAX_SAMPLES: '',
    };
    expect(resolved({ env })).toEqual({ settings: DEFAULTS, errors: [], warnings: [] });
  });

  test.each([
    [
      'an unknown key, by name',
      { max_sample: 10, samples_ramp: [40, 300] },
      ['_steward.yaml: unknown key "max_sample"'],
    ],
    ['a negative number', { max_tasks: -1 }, ['_steward.yaml: max_tasks: must be at least 1 (-1)']],
    ['zero', { max_workers: 0 }, ['_steward.yaml: max_workers: must be at least 1 (0)']],
    [
      'a string number',
      { max_samples: '10' },
      ['_steward.yaml: max_samples: expected number, got string ("10")'],
    ],
    [
      'a zero interval',
      { tend_interval: 0 },
      ['_steward.yaml: tend_interval: must be greater than 0 (0)'],
    ],
    [
      'a ramp of true',
      { samples_ramp: true },
      ['_steward.yaml: samples_ramp: expected [lo, hi] or false (true)'],
    ],
    [
      'a ramp of three numbers',
      { samples_ramp: [1, 2, 3] },
      ['_steward.yaml: samples_ramp: must have at most 2 items ([1,2,3])'],
    ],
    [
      'a ramp from zero',
      { samples_ramp: [0, 40] },
      ['_steward.yaml: samples_ramp.0: must be at least 1 (0)'],
    ],
    [
      'a ramp upside down',
      { samples_ramp: [300, 40] },
      ['_steward.yaml: samples_ramp: lo must not exceed hi ([300,40])'],
    ],
    ['a list instead of a mapping', [1], ['_steward.yaml: expected object, got array ([1])']],
  ])('refuses %s in _steward.yaml', (_name, stewardYaml, errors) => {
    expect(resolved({ stewardYaml }).errors).toEqual(errors);
  });

  test('keeps the valid knobs of a source that has errors', () => {
    const { settings, errors } = resolved({
      stewardYaml: { max_tasks: 0, max_workers: 4, samples_ramp: [300, 40] },
      definition: { max_tasks: 2, samples_ramp: [60, 100] },
    });
    expect(errors).toHaveLength(2);
    expect(settings.maxTasks).toBe(2);
    expect(settings.maxWorkers).toBe(4);
    expect(settings.samples).toEqual({ type: 'ramp', lo: 60, hi: 100, step: 20, start: 60 });
  });

  test('names flags by their command-line spelling', () => {
    expect(resolved({ flags: { max_samples: 0, samples_ramp: [9, 3] } }).errors).toEqual([
      '--max-samples: must be at least 1 (0)',
      '--samples-ramp: lo must not exceed hi ([9,3])',
    ]);
  });

  test('names _steward.yaml as the caller read it', () => {
    expect(
      resolved({ stewardYaml: { max_tasks: 0 }, stewardYamlFile: '/x/_steward.yaml' }).errors,
    ).toEqual(['/x/_steward.yaml: max_tasks: must be at least 1 (0)']);
  });

  test('an empty _steward.yaml sets nothing', () => {
    expect(resolved({ stewardYaml: null })).toEqual({
      settings: DEFAULTS,
      errors: [],
      warnings: [],
    });
  });
});

describe('parseKnobText', () => {
  test.each([
    ['max_samples', '100', { value: 100 }],
    ['max_samples', ' 100 ', { value: 100 }],
    ['tend_interval', '1.5', { value: 1.5 }],
    ['samples_ramp', '[1,1]', { value: [1, 1] }],
    ['max_tasks', '', { error: 'expected a positive integer' }],
    ['max_tasks', '99999999999999999999', { error: 'expected a positive integer' }],
  ] as const)('%s %j', (knob, text, expected) => {
    expect(parseKnobText(knob, text)).toEqual(expected);
  });
});

describe('loadStewardYaml', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'steward-settings-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  test('is undefined when the directory has none', async () => {
    await expect(loadStewardYaml(dir)).resolves.toBeUndefined();
  });

  test('parses the file', async () => {
    await writeFile(path.join(dir, '_steward.yaml'), 'samples_ramp: [40, 300]\nmax_workers: 8\n');
    await expect(loadStewardYaml(dir)).resolves.toEqual({
      samples_ramp: [40, 300],
      max_workers: 8,
    });
  });

  test.each([
    [
      'a duplicate key',
      'max_workers: 8\nmax_workers: 9\n',
      ':2: invalid YAML at column 1: Map keys must be unique',
    ],
    [
      'a nested mapping on one line',
      'max_workers: 8\nsamples_ramp: lo: 40\n',
      ':2: invalid YAML at column 15: Nested mappings are not allowed in compact mappings',
    ],
  ])('reports %s at its line and column', async (_name, text, expected) => {
    await writeFile(path.join(dir, '_steward.yaml'), text);
    const error = await loadStewardYaml(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues.map(formatIssue)).toEqual([
      `${dir}/_steward.yaml${expected}`,
    ]);
  });
});

/**
 * What the workflows refuse, word for word (docs/errors.md quotes these): every start input,
 * signal and update payload is parsed by src/workflows/schemas.ts before it touches state.
 */
import {
  evalSetCarrySchema,
  evalSetStartSchema,
  evalTaskStartSchema,
  holdRampArgsSchema,
  parse,
  resumeRampArgsSchema,
  sampleDoneSchema,
  samplesDoneSchema,
  setLimitsSchema,
  setSamplesRampArgsSchema,
  taskDoneSchema,
  workerReportSchema,
  hostReportSchema,
} from '../src/workflows/schemas';

const report = { tasks: ['p'], pid: 1, limit: 20, rateLimitEpisodes: 0, cuts: 0, retries: 0 };

test.each<[string, unknown, string, Parameters<typeof parse>[0]]>([
  [
    'evalSet input',
    { definition: 5 },
    'definition: expected string, received number (5)',
    evalSetStartSchema,
  ],
  ['evalSet input', 'x', 'expected object, received string ("x")', evalSetStartSchema],
  [
    'evalSet input',
    { definition: '/a', defintion: '/b' },
    'unknown key "defintion"',
    evalSetStartSchema,
  ],
  [
    'evalSet input',
    { definition: '/a', settings: { max_sample: 3 } },
    'settings: unknown key "max_sample"',
    evalSetStartSchema,
  ],
  [
    'evalSet input',
    { definition: '/a', settings: { samples_ramp: [9, 3] } },
    'settings.samples_ramp: lo must not exceed hi ([9,3])',
    evalSetStartSchema,
  ],
  [
    'evalSet input',
    { definition: '/a', definition_hash: 'abc' },
    'definition_hash: expected 64 lowercase hex digits ("abc")',
    evalSetStartSchema,
  ],
  [
    'setSamplesRamp',
    { rnage: [2, 6] },
    'range: expected [lo, hi] (whole numbers from 1) or false; unknown key "rnage"',
    setSamplesRampArgsSchema,
  ],
  [
    'setSamplesRamp',
    { range: 'bogus' },
    'range: expected [lo, hi] (whole numbers from 1) or false ("bogus")',
    setSamplesRampArgsSchema,
  ],
  [
    'setSamplesRamp',
    { range: [5, 2] },
    'range: lo must not exceed hi ([5,2])',
    setSamplesRampArgsSchema,
  ],
  [
    'setSamplesRamp',
    { range: [0, 5] },
    'range.0: Too small: expected number to be >=1 (0)',
    setSamplesRampArgsSchema,
  ],
  [
    'setSamplesRamp',
    { range: true },
    'range: expected [lo, hi] (whole numbers from 1) or false (true)',
    setSamplesRampArgsSchema,
  ],
  ['setSamplesRamp', null, 'expected object, received null (null)', setSamplesRampArgsSchema],
  ['holdRamp', { reason: '' }, 'reason: must say why the climb stops ("")', holdRampArgsSchema],
  ['holdRamp', { reason: '  ' }, 'reason: must say why the climb stops ("")', holdRampArgsSchema],
  [
    'holdRamp',
    { reason: 'x', task: 'no such' },
    'task: may only contain letters, digits, "_", "." and "-" ("no such")',
    holdRampArgsSchema,
  ],
  [
    'holdRamp',
    { reason: 'x', by: 5 },
    'by: expected string, received number (5)',
    holdRampArgsSchema,
  ],
  ['resumeRamp', { reason: 'x' }, 'unknown key "reason"', resumeRampArgsSchema],
  [
    'workerReport',
    { ...report, rateLimitEpisodes: -3 },
    'rateLimitEpisodes: Too small: expected number to be >=0 (-3)',
    workerReportSchema,
  ],
  [
    'workerReport',
    { ...report, queuedShare: 2 },
    'queuedShare: Too big: expected number to be <=1 (2)',
    workerReportSchema,
  ],
  [
    'hostReport',
    {
      host: 'h:1',
      totalBytes: 2 ** 34,
      headroomBytes: 2 ** 30,
      lowestHeadroomBytes: 2 ** 31,
      fleetResidentBytes: 0,
      processes: 1,
    },
    'lowestHeadroomBytes: above headroomBytes 1073741824 (2147483648)',
    hostReportSchema,
  ],
  ['taskDone', { task: 17 }, 'task: expected string, received number (17)', taskDoneSchema],
  [
    'sampleDone',
    { index: -1, ok: true },
    'index: Too small: expected number to be >=0 (-1)',
    sampleDoneSchema,
  ],
  [
    'samplesDone',
    { reports: [] },
    'reports: Too small: expected array to have >=1 items ([])',
    samplesDoneSchema,
  ],
  [
    'samplesDone',
    { reports: [{ index: 3, ok: 'yes' }] },
    'reports.0.ok: expected boolean, received string ("yes")',
    samplesDoneSchema,
  ],
  [
    'setLimits',
    { setpoint: 5 },
    'connectionLimit: expected number, received undefined',
    setLimitsSchema,
  ],
])('%s %j is refused', (what, payload, message, schema) => {
  expect(parse(schema, payload, what)).toEqual({ ok: false, message: `${what}: ${message}` });
});

test.each<[Parameters<typeof parse>[0], unknown]>([
  [
    evalSetStartSchema,
    { definition: '/abs/evalset.yaml', log_dir: '/logs', settings: { max_samples: 3 } },
  ],
  [setSamplesRampArgsSchema, { range: [40, 300], by: 'a@b' }],
  [setSamplesRampArgsSchema, { range: false }],
  [holdRampArgsSchema, { reason: 'provider looks unhappy', task: 't1' }],
  [resumeRampArgsSchema, {}],
  [workerReportSchema, { ...report, queuedShare: 0.5, pushbackLevel: null }],
  [taskDoneSchema, { task: 'a' }],
])('%#: a good payload parses', (schema, payload) => {
  expect(parse(schema, payload, 'x')).toMatchObject({ ok: true });
});

test('a hold reason is trimmed as it is recorded', () => {
  expect(parse(holdRampArgsSchema, { reason: '  why  ' }, 'holdRamp')).toEqual({
    ok: true,
    value: { reason: 'why' },
  });
});

test('a forged carry is refused, not trusted', () => {
  const result = parse(
    evalSetCarrySchema,
    { plan: {}, tender: [], started: 'x', runs: 0 },
    'carry',
  );
  expect(result.ok).toBe(false);
  expect(!result.ok && result.message).toMatch(/^carry: plan\.name: expected string/);
});

describe("a task's carry", () => {
  const start = {
    evalSet: 'es',
    task: 't1',
    definition: '/abs/evalset.yaml',
    logDir: '/logs',
    parentId: 'steward/es',
    setpoint: 8,
  };
  const carry = {
    total: 100,
    pending: [[40, 100]],
    inFlight: [3, 4, 5, 9],
    groups: [[3, 4, 5]],
    completed: 30,
    errored: 6,
    resumed: 0,
    saturations: 0,
    networkErrors: 0,
    runs: 2,
  };

  test('as a run hands it over, it parses', () => {
    expect(parse(evalTaskStartSchema, { ...start, carry }, 'evalTask input')).toMatchObject({
      ok: true,
    });
    // A group whose first, which names its workflow, is done while the others run.
    const firstDone = { ...carry, inFlight: [4, 5, 9] };
    expect(parse(evalTaskStartSchema, { ...start, carry: firstDone }, 'x')).toMatchObject({
      ok: true,
    });
    // Carries from before groups, limits and retries.
    const { groups: _, ...older } = carry;
    expect(parse(evalTaskStartSchema, { ...start, carry: older }, 'x')).toMatchObject({
      ok: true,
    });
  });

  test.each<[string, object, string]>([
    [
      'a sample past the task',
      { inFlight: [3, 4, 5, 100] },
      'carry.inFlight.3: expected a sample below 100 (100)',
    ],
    [
      'a group naming a sample not in flight',
      { groups: [[3, 7]] },
      'carry.groups.0.1: expected a sample in flight (7)',
    ],
    [
      'samples to admit past the task',
      { pending: [[40, 120]] },
      'carry.pending.0: expected a range of samples within [0, 100) ([40,120])',
    ],
    [
      'a count that is not one',
      { completed: -1 },
      'carry.completed: Too small: expected number to be >=0 (-1)',
    ],
  ])('forged, %s, it is refused', (_, forged, message) => {
    const result = parse(
      evalTaskStartSchema,
      { ...start, carry: { ...carry, ...forged } },
      'evalTask input',
    );
    expect(result.ok).toBe(false);
    expect(!result.ok && result.message).toContain(`evalTask input: ${message}`);
  });
});

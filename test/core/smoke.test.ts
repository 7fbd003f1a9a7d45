/** The smoke run's classification of failed samples and its verdicts: pure tables. */
import {
  classifySmokeError,
  smokeReportLines,
  smokeVerdicts,
  type SmokeError,
  type SmokeFailure,
} from '../../src/core/smoke';

const fatal = (error: string): SmokeError => ({ error, error_type: 'StewardModelFatalError' });

describe('classifySmokeError', () => {
  const cases: [string, SmokeError, SmokeFailure][] = [
    [
      'OpenAI 401',
      fatal(
        'model openai/gpt-4o: the provider refused the request: 401 Incorrect API key provided.',
      ),
      'credentials',
    ],
    [
      '403 forbidden',
      fatal(
        'model openai/gpt-4o: the provider refused the request: 403 Project does not have access',
      ),
      'credentials',
    ],
    [
      'Anthropic 401 worded by the model layer',
      fatal(
        'model anthropic/claude: the provider refused the request: 401 authentication_error: invalid x-api-key',
      ),
      'credentials',
    ],
    [
      'OpenAI 404 model',
      fatal(
        'model openai/gpt-9: the provider refused the request: 404 The model `gpt-9` does not exist or you do not have access to it.',
      ),
      'unknown_model',
    ],
    [
      'Anthropic not_found_error',
      fatal(
        'model anthropic/claude-x: the provider refused the request: 404 not_found_error: model: claude-x',
      ),
      'unknown_model',
    ],
    [
      'OpenAI context length',
      fatal(
        "model openai/gpt-4o: the provider refused the request: 400 This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
      ),
      'context_too_long',
    ],
    [
      'Anthropic prompt too long',
      fatal(
        'model anthropic/claude: the provider refused the request: 400 invalid_request_error: prompt is too long: 210000 tokens > 200000 maximum',
      ),
      'context_too_long',
    ],
    [
      'another 400',
      fatal(
        'model openai/gpt-4o: the provider refused the request: 400 Invalid value for temperature',
      ),
      'other',
    ],
    [
      'quota exhausted (a 429 that is fatal)',
      fatal(
        'model openai/gpt-4o: the provider refused the request: 429 You exceeded your current quota',
      ),
      'other',
    ],
    [
      'retries exhausted',
      {
        error: 'model openai-api/x/y: gave up after 2 attempts: 500 The server had an error',
        error_type: 'StewardModelRetriesExhausted',
      },
      'other',
    ],
    [
      'missing image',
      {
        error:
          'sandbox image nope:latest is not on the Docker daemon and could not be pulled: (HTTP code 404) unexpected - pull access denied for nope',
        error_type: 'StewardSampleError',
      },
      'sandbox_image',
    ],
    [
      'a scorer that threw',
      { error: 'the scorer broke', error_type: 'StewardSampleError', failed_in: 'scorer' },
      'scorer',
    ],
    [
      'a solver that threw',
      { error: 'bad tool', error_type: 'StewardSampleError', failed_in: 'solver' },
      'solver',
    ],
    [
      'a 401 inside a scorer is still the credentials',
      { ...fatal('model x/y: the provider refused the request: 401 no'), failed_in: 'scorer' },
      'credentials',
    ],
    ['stuck', { error: 'no progress for 5 s', error_type: 'StewardSampleStuck' }, 'other'],
    ['no type at all', { error: 'something' }, 'other'],
  ];
  test.each(cases)('%s', (_, record, expected) => {
    expect(classifySmokeError(record)).toBe(expected);
  });
});

describe('smokeVerdicts', () => {
  test('passed, failed by the first error, time cap, and nothing recorded', () => {
    const verdicts = smokeVerdicts(
      [
        { task: 'ok', samples: 2, completed: 2, errors: [] },
        {
          task: 'key',
          samples: 2,
          completed: 0,
          errors: [fatal('model m: the provider refused the request: 401 bad key'), fatal('x')],
        },
        { task: 'slow', samples: 2, completed: 1, errors: [] },
      ],
      { afterS: 30 },
    );
    expect(verdicts).toEqual([
      { task: 'ok', passed: true, completed: 2, samples: 2 },
      {
        task: 'key',
        passed: false,
        failure: 'credentials',
        detail: 'model m: the provider refused the request: 401 bad key',
        completed: 0,
        samples: 2,
      },
      {
        task: 'slow',
        passed: false,
        failure: 'time_cap',
        detail: '1 sample(s) still running after 30 s (--smoke-timeout raises the cap)',
        completed: 1,
        samples: 2,
      },
    ]);
    expect(smokeReportLines(verdicts)).toEqual([
      '  key: FAILED, credentials refused (401/403) (0/2 completed): model m: the provider refused the request: 401 bad key',
      '  slow: FAILED, time cap reached (1/2 completed): 1 sample(s) still running after 30 s (--smoke-timeout raises the cap)',
      '  ok: passed (2/2 completed)',
    ]);
    const [unrecorded] = smokeVerdicts(
      [{ task: 't', samples: 1, completed: 0, errors: [] }],
      undefined,
    );
    expect(unrecorded).toMatchObject({ passed: false, failure: 'other' });
  });
});

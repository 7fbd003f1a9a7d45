import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { loadDataset, parseDataset } from '../src/definition/dataset';
import type { FileLookup } from '../src/definition/sample-files';
import { ConfigError, formatIssue } from '../src/errors';
import { loadDefinition } from '../src/loader/definition';
import { loadSnapshot, snapshotDefinition } from '../src/loader/snapshot';

const FIXTURES = path.join(__dirname, 'fixtures', 'config');

function problems(text: string, format: 'jsonl' | 'json' | 'csv'): string[] {
  return parseDataset(text, format, `data.${format}`).issues.map(formatIssue);
}

async function loadProblems(...args: Parameters<typeof loadDataset>): Promise<string[]> {
  try {
    await loadDataset(...args);
  } catch (error) {
    if (error instanceof ConfigError) return error.issues.map(formatIssue);
    throw error;
  }
  throw new Error('expected the dataset to be refused');
}

describe('JSONL', () => {
  test.each([
    [
      'string input, default id and target',
      '{"input": "1 + 1?"}',
      [{ id: 1, input: '1 + 1?', target: '' }],
    ],
    [
      'blank lines are skipped and ids count records, not lines',
      '\n{"input": "a", "target": "A"}\n\n   \n{"input": "b", "target": ["B", "b"]}\n',
      [
        { id: 1, input: 'a', target: 'A' },
        { id: 2, input: 'b', target: ['B', 'b'] },
      ],
    ],
    [
      'explicit ids, chat messages and metadata',
      '{"id": "q1", "input": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"}], "metadata": {"level": 2}}\r\n{"id": 7, "input": "x"}',
      [
        {
          id: 'q1',
          input: [
            { role: 'system', content: 'Be terse.' },
            { role: 'user', content: 'Hi' },
          ],
          target: '',
          metadata: { level: 2 },
        },
        { id: 7, input: 'x', target: '' },
      ],
    ],
  ])('reads %s', (_name, text, samples) => {
    expect(parseDataset(text, 'jsonl', 'data.jsonl')).toEqual({ samples, issues: [] });
  });

  test.each([
    [
      'a malformed line, at its line, without losing the others',
      '{"input": "ok"}\n{"input": "no closing brace"\n{"input": "fine"}',
      [
        `data.jsonl:2: invalid JSON: Expected ',' or '}' after property value in JSON at position 28`,
      ],
    ],
    ['a missing input', '{"target": "x"}', ['data.jsonl:1: input: required']],
    ['an empty input', '{"input": ""}', ['data.jsonl:1: input: must not be empty ("")']],
    [
      'wrong types, every one of them',
      '{"input": 5, "target": true, "id": 1.5, "metadata": [1], "files": {"a": 1}, "setup": 2}',
      [
        'data.jsonl:1: input: expected a string or a list of chat messages (5)',
        'data.jsonl:1: target: expected a string or a number (true)',
        'data.jsonl:1: id: expected a string or an integer (1.5)',
        'data.jsonl:1: metadata: expected object, got array ([1])',
        'data.jsonl:1: files.a: expected string, got number (1)',
        'data.jsonl:1: setup: expected string, got number (2)',
      ],
    ],
    [
      'a record that is not an object',
      '["input", "x"]',
      ['data.jsonl:1: expected object, got array (["input","x"])'],
    ],
    [
      'an unknown field, by name',
      '{"input": "x", "answer": "y"}',
      ['data.jsonl:1: unknown key "answer"'],
    ],
    [
      'a chat message with an unknown role',
      '{"input": [{"role": "robot", "content": "beep"}]}',
      [
        'data.jsonl:1: input.0.role: expected system, user, assistant or tool ({"role":"robot","content":"beep"})',
      ],
    ],
    [
      'a duplicate id, naming the id and both lines',
      '{"id": "a", "input": "x"}\n{"id": "b", "input": "y"}\n\n{"id": "a", "input": "z"}',
      ['data.jsonl:4: duplicate sample id "a" (first used at line 1)'],
    ],
    [
      'an explicit id equal to another record’s position',
      '{"input": "x"}\n{"id": 1, "input": "y"}',
      ['data.jsonl:2: duplicate sample id 1 (first used at line 1)'],
    ],
    [
      'ids 1 and "1" as the same id',
      '{"id": 1, "input": "x"}\n{"id": "1", "input": "y"}',
      ['data.jsonl:2: duplicate sample id "1" (first used at line 1)'],
    ],
    ['an empty file', '', ['data.jsonl: dataset has no samples']],
    ['a file of blank lines', '\n  \n\n', ['data.jsonl: dataset has no samples']],
  ])('reports %s', (_name, text, expected) => {
    expect(problems(text, 'jsonl')).toEqual(expected);
  });
});

describe('CSV', () => {
  test.each([
    ['the minimal form', 'input,target\n1 + 1?,2\n', [{ id: 1, input: '1 + 1?', target: '2' }]],
    [
      'ids, JSON target lists, metadata and extra columns',
      'id,input,target,metadata,level\nq1,"multi\nline","[""a"", ""b""]","{""k"": 1}",hard\n,plain,,,\n',
      [
        {
          id: 'q1',
          input: 'multi\nline',
          target: ['a', 'b'],
          metadata: { level: 'hard', k: 1 },
        },
        { id: 2, input: 'plain', target: '', metadata: { level: '' } },
      ],
    ],
    [
      'a byte-order mark, CRLF line ends and blank lines',
      '\uFEFFinput,target\r\n\r\nx,y\r\n',
      [{ id: 1, input: 'x', target: 'y' }],
    ],
  ])('reads %s', (_name, text, samples) => {
    expect(parseDataset(text, 'csv', 'data.csv')).toEqual({ samples, issues: [] });
  });

  test.each([
    [
      'no input column',
      'question,answer\nx,y\n',
      ['data.csv:1: no "input" column (columns: question, answer)'],
    ],
    ['a duplicate column', 'input,target,input\nx,y,z\n', ['data.csv:1: duplicate column "input"']],
    [
      'a row with too few or too many fields, at the line it starts on',
      'input,target\n"two\nlines",t\nonly\na,b,c\n',
      ['data.csv:4: 1 fields, but the header has 2', 'data.csv:5: 3 fields, but the header has 2'],
    ],
    [
      'a target list of other things than strings and numbers, or not JSON',
      'input,target\nx,"[{}]"\ny,"[""a"""\n',
      [
        'data.csv:2: target.0: expected a string or a number ({})',
        'data.csv:3: target: expected a JSON list of strings ("[\\"a\\"")',
      ],
    ],
    [
      'metadata that is not a JSON object, and an empty input on the same row',
      'input,metadata\n,[]\n',
      [
        'data.csv:2: metadata: expected a JSON object ("[]")',
        'data.csv:2: input: must not be empty ("")',
      ],
    ],
    [
      'a duplicate id',
      'id,input\nx,a\ny,b\nx,c\n',
      ['data.csv:4: duplicate sample id "x" (first used at line 2)'],
    ],
    [
      'a quote left open',
      'input\n"never closed\n',
      [
        'data.csv:2: invalid CSV: a quoted field starts on this line and is never closed (a missing ")',
      ],
    ],
    ['a header without rows', 'input,target\n', ['data.csv: dataset has no samples']],
  ])('reports %s', (_name, text, expected) => {
    expect(problems(text, 'csv')).toEqual(expected);
  });
});

describe('loadDataset', () => {
  const dir = path.join(FIXTURES, 'hello', 'data');

  test('reads a file, telling the format from its name', async () => {
    await expect(loadDataset(path.join(dir, 'capitals.csv'))).resolves.toEqual([
      { id: 'fr', input: 'Capital of France?', target: 'Paris', metadata: { difficulty: 'easy' } },
      {
        id: 2,
        input: 'Capital of\nItaly?',
        target: ['Rome', 'Roma'],
        metadata: { difficulty: 'hard' },
      },
    ]);
  });

  test.each([
    [
      'a missing file',
      [path.join(dir, 'nope.jsonl')],
      [`${dir}/nope.jsonl: dataset file not found`],
    ],
    ['a directory', [dir, 'jsonl'], [`${dir}: cannot read dataset file: it is a directory`]],
    [
      'a mistyped name as missing, not as of unknown format',
      [path.join(dir, 'arith.jsnol')],
      [`${dir}/arith.jsnol: dataset file not found`],
    ],
    [
      'a file with problems, at file:line',
      [path.join(FIXTURES, 'broken', 'data', 'malformed.jsonl')],
      [
        `${FIXTURES}/broken/data/malformed.jsonl:2: invalid JSON: Expected ',' or '}' after property value in JSON at position 28`,
        `${FIXTURES}/broken/data/malformed.jsonl:3: duplicate sample id 1 (first used at line 1)`,
      ],
    ],
  ] as Array<[string, Parameters<typeof loadDataset>, string[]]>)(
    'refuses %s',
    async (_name, args, expected) => {
      expect(await loadProblems(...args)).toEqual(expected);
    },
  );
});

describe("Inspect's conventions", () => {
  const samplesOf = (text: string, format: 'jsonl' | 'json' | 'csv', lookup?: FileLookup) => {
    const { samples, issues } = parseDataset(text, format, `data.${format}`, lookup);
    expect(issues.map(formatIssue)).toEqual([]);
    return samples;
  };
  const base64 = (text: string) => Buffer.from(text).toString('base64');

  test('numeric targets become their text, in lists too', () => {
    expect(
      samplesOf(
        '{"input": "a", "target": 3}\n{"input": "b", "target": [1, 2.5, "x"]}\n{"input": "c", "target": -0.5}',
        'jsonl',
      ).map((sample) => sample.target),
    ).toEqual(['3', ['1', '2.5', 'x'], '-0.5']);
    expect(
      samplesOf('input,target\na,42\nb,"[1, ""two""]"\n', 'csv').map((sample) => sample.target),
    ).toEqual(['42', ['1', 'two']]);
  });

  test('choices are kept: a list (numbers as text, blanks dropped), or a cell split at commas, else spaces', () => {
    expect(
      samplesOf('{"input": "a", "choices": ["Paris", 2, " ", "Rome"]}', 'jsonl')[0].choices,
    ).toEqual(['Paris', '2', 'Rome']);
    expect(
      samplesOf('input,choices\na,"red, green ,,blue"\nb,up down\nc,\n', 'csv').map(
        (sample) => sample.choices,
      ),
    ).toEqual([['red', 'green', 'blue'], ['up', 'down'], undefined]);
  });

  test('null means absent, as in Inspect', () => {
    expect(
      samplesOf(
        '{"input": "a", "id": null, "target": null, "metadata": null, "choices": null, "files": null, "setup": null}',
        'jsonl',
      ),
    ).toEqual([{ id: 1, input: 'a', target: '' }]);
  });

  test('missing ids are 1-based positions; present ones are kept, and a clash is reported', () => {
    expect(
      samplesOf('{"input": "a"}\n{"id": "q", "input": "b"}\n{"input": "c"}', 'jsonl').map(
        (sample) => sample.id,
      ),
    ).toEqual([1, 'q', 3]);
    // Inspect numbers by position too, so an explicit 3 collides with the third record's.
    expect(problems('{"input": "a"}\n{"id": 3, "input": "b"}\n{"input": "c"}', 'jsonl')).toEqual([
      'data.jsonl:3: duplicate sample id 3 (first used at line 2)',
    ]);
  });

  test('files and setup: data: URLs decoded, other text kept as it is', () => {
    const [sample] = samplesOf(
      JSON.stringify({
        input: 'a',
        files: {
          'note.txt': 'plain text',
          'b64.bin': 'data:application/octet-stream;base64,AAEC',
          'pct.txt': 'data:,hello%20world',
          'empty.txt': '',
        },
        setup: 'echo ready > /tmp/ready',
      }),
      'jsonl',
    );
    expect(sample.files).toEqual({
      'note.txt': base64('plain text'),
      'b64.bin': Buffer.from([0, 1, 2]).toString('base64'),
      'pct.txt': base64('hello world'),
      'empty.txt': '',
    });
    expect(sample.setup).toBe('echo ready > /tmp/ready');
  });

  test('a value that names a file is its contents; a directory is each of its files', () => {
    const lookup: FileLookup = (ref) =>
      ref === 'setup.sh'
        ? { type: 'file', content: Buffer.from('#!/bin/sh\necho hi\n') }
        : ref === 'assets'
          ? {
              type: 'directory',
              files: [
                { path: 'a.txt', content: Buffer.from('A') },
                { path: 'sub/b.txt', content: Buffer.from('B') },
              ],
            }
          : undefined;
    const [sample] = samplesOf(
      '{"input": "a", "files": {"/srv/assets/": "assets", "db:/x": "x"}, "setup": "setup.sh"}',
      'jsonl',
      lookup,
    );
    expect(sample.files).toEqual({
      '/srv/assets/a.txt': base64('A'),
      '/srv/assets/sub/b.txt': base64('B'),
      'db:/x': base64('x'),
    });
    expect(sample.setup).toBe('#!/bin/sh\necho hi\n');
  });

  test('files and setup that cannot be read are reported at their record', () => {
    expect(
      problems(
        '{"input": "a", "files": {"x": "https://example.com/x"}}\n{"input": "b", "setup": "data:text/plain"}',
        'jsonl',
      ),
    ).toEqual([
      'data.jsonl:1: files["x"]: URLs are not fetched (https://example.com/x); save the file beside the dataset and name it',
      'data.jsonl:2: setup: a data: URL needs a comma before its data',
    ]);
    const unreadable: FileLookup = () => {
      throw new Error('EACCES: permission denied');
    };
    expect(
      parseDataset('{"input": "a", "setup": "s.sh"}', 'jsonl', 'data.jsonl', unreadable).issues.map(
        formatIssue,
      ),
    ).toEqual(['data.jsonl:1: setup: cannot read s.sh: EACCES: permission denied']);
    expect(problems('input,files\na,[1]\n', 'csv')).toEqual([
      'data.csv:2: files: expected a JSON object ("[1]")',
    ]);
  });

  test('CSV cells: files as JSON, setup as text, metadata kept', () => {
    const [sample] = samplesOf(
      'input,files,setup,metadata\na,"{""/x"": ""X""}",touch /y,"{""k"": 1}"\n',
      'csv',
    );
    expect(sample).toEqual({
      id: 1,
      input: 'a',
      target: '',
      files: { '/x': base64('X') },
      setup: 'touch /y',
      metadata: { k: 1 },
    });
  });

  describe('JSON: an array of records', () => {
    test('reads every field, ids by position', () => {
      expect(
        samplesOf(
          '[\n  {"input": "a", "target": 1, "metadata": {"k": "v"}},\n  {"id": "b", "input": "b", "choices": ["x", "y"]}\n]\n',
          'json',
        ),
      ).toEqual([
        { id: 1, input: 'a', target: '1', metadata: { k: 'v' } },
        { id: 'b', input: 'b', target: '', choices: ['x', 'y'] },
      ]);
    });

    test('one object is one record, as Inspect reads it', () => {
      expect(samplesOf('{"input": "only"}', 'json')).toEqual([
        { id: 1, input: 'only', target: '' },
      ]);
    });

    test('problems are at the line where their record starts', () => {
      const text = [
        '[',
        '  {"input": "ok, [with] {brackets} and \\"quotes\\""},',
        '  {',
        '    "target": "x"',
        '  },',
        '  {"input": "dup", "id": 1}, {"input": "ok", "extra": [1, {"a": 2}]}',
        ']',
      ].join('\n');
      expect(problems(text, 'json')).toEqual([
        'data.json:3: input: required',
        'data.json:6: unknown key "extra"',
        'data.json:6: duplicate sample id 1 (first used at line 2)',
      ]);
    });

    test.each([
      ['invalid JSON', '[{"input": "a"},]', /^data\.json: invalid JSON: /],
      [
        'a value that is not an array of records',
        '"text"',
        /^data\.json: expected an array of records, got "text"$/,
      ],
      ['an empty array', '[]', /^data\.json: dataset has no samples$/],
    ])('reports %s', (_name, text, expected) => {
      const found = problems(text, 'json');
      expect(found).toHaveLength(1);
      expect(found[0]).toMatch(expected);
    });
  });

  describe('from disk', () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'steward-dataset-'));
      await mkdir(path.join(dir, 'assets', 'sub'), { recursive: true });
      await writeFile(path.join(dir, 'assets', 'a.txt'), 'A');
      await writeFile(path.join(dir, 'assets', 'sub', 'b.bin'), Buffer.from([0xff, 0]));
      await writeFile(path.join(dir, 'setup.sh'), 'mkdir -p /work\n');
      await writeFile(
        path.join(dir, 'tasks.json'),
        JSON.stringify([
          {
            input: 'go',
            target: 7,
            files: {
              '/work/a.txt': 'assets/a.txt',
              '/work/all': 'assets',
              '/work/t': 'assets/nope',
            },
            setup: 'setup.sh',
          },
        ]),
      );
      await writeFile(path.join(dir, 'tasks.data'), '{"input": "a"}\n');
    });
    afterAll(() => rm(dir, { recursive: true, force: true }));

    test('a .json file, its files and setup read relative to it', async () => {
      expect(await loadDataset(path.join(dir, 'tasks.json'))).toEqual([
        {
          id: 1,
          input: 'go',
          target: '7',
          files: {
            '/work/a.txt': base64('A'),
            '/work/all/a.txt': base64('A'),
            '/work/all/sub/b.bin': Buffer.from([0xff, 0]).toString('base64'),
            // Not a file there: the text itself, as in Inspect.
            '/work/t': base64('assets/nope'),
          },
          setup: 'mkdir -p /work\n',
        },
      ]);
    });

    test('a name without a known extension needs format, once the file is found', async () => {
      expect(await loadProblems(path.join(dir, 'tasks.data'))).toEqual([
        `${dir}/tasks.data: cannot tell the dataset format from the file name: use .jsonl, .json or .csv, or set format`,
      ]);
      await expect(loadDataset(path.join(dir, 'tasks.data'), 'jsonl')).resolves.toEqual([
        { id: 1, input: 'a', target: '' },
      ]);
    });
  });
});

describe("a snapshot pins the files a dataset's samples name", () => {
  let dir: string;
  afterAll(() => rm(dir, { recursive: true, force: true }));

  test('copied at launch (text that names no file is not), read from the copy after an edit', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'steward-dataset-snapshot-'));
    const project = path.join(dir, 'project');
    await mkdir(path.join(project, 'data', 'assets', 'sub'), { recursive: true });
    await writeFile(path.join(project, 'data', 'assets', 'a.txt'), 'A1');
    await writeFile(path.join(project, 'data', 'assets', 'sub', 'b.txt'), 'B1');
    await writeFile(path.join(project, 'data', 'setup.sh'), 'echo one\n');
    const outside = path.join(dir, 'outside');
    await mkdir(outside);
    await writeFile(path.join(outside, 'c.txt'), 'C1');
    await writeFile(
      path.join(project, 'data', 'samples.jsonl'),
      `${JSON.stringify({
        input: 'x',
        files: {
          '/a': 'assets/a.txt',
          '/tree': 'assets',
          '/text': 'just text',
          '/abs': outside,
        },
        setup: 'setup.sh',
      })}\n`,
    );
    await writeFile(
      path.join(project, 'evalset.yaml'),
      'name: pinned\nmodel: mockllm/model\ntasks:\n  - name: t\n    dataset: data/samples.jsonl\n    scorer: match\n',
    );
    const logDir = path.join(dir, 'logs');
    const { hash } = await snapshotDefinition(path.join(project, 'evalset.yaml'), logDir);

    await writeFile(path.join(project, 'data', 'assets', 'a.txt'), 'A2');
    await writeFile(path.join(project, 'data', 'assets', 'sub', 'b.txt'), 'B2');
    await writeFile(path.join(project, 'data', 'setup.sh'), 'echo two\n');
    await rm(outside, { recursive: true });
    const pinned = await loadSnapshot({ logDir, hash });
    const text = (base64: string | undefined) => Buffer.from(base64 ?? '', 'base64').toString();
    const [sample] = pinned.tasks[0].dataset;
    expect(
      Object.fromEntries(Object.entries(sample.files ?? {}).map(([k, v]) => [k, text(v)])),
    ).toEqual({
      '/a': 'A1',
      '/tree/a.txt': 'A1',
      '/tree/sub/b.txt': 'B1',
      '/text': 'just text',
      '/abs/c.txt': 'C1',
    });
    expect(sample.setup).toBe('echo one\n');
  });
});

test('a task without a sandbox is warned that its samples’ files and setup are ignored', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'steward-dataset-nosandbox-'));
  try {
    await writeFile(
      path.join(dir, 'evalset.yaml'),
      [
        'name: plain',
        'model: mockllm/model',
        'tasks:',
        '  - name: t',
        '    scorer: match',
        '    dataset:',
        '      - { input: a, setup: "touch /x" }',
        '      - { input: b, files: { /y: y } }',
        '      - { input: c }',
      ].join('\n'),
    );
    const warnings: string[] = [];
    const definition = await loadDefinition(path.join(dir, 'evalset.yaml'), {
      onWarning: (issue) => warnings.push(formatIssue(issue)),
    });
    expect(warnings).toEqual([
      `${dir}/evalset.yaml: tasks.0.sandbox: 2 of the task's samples have files or setup, which need a sandbox: without one they are ignored`,
    ]);
    expect(definition.tasks[0].dataset[0].setup).toBe('touch /x');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

import * as path from 'node:path';
import { loadDataset, parseDataset } from '../src/definition/dataset';
import { ConfigError, formatIssue } from '../src/errors';

const FIXTURES = path.join(__dirname, 'fixtures', 'config');

function problems(text: string, format: 'jsonl' | 'csv'): string[] {
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
      '{"input": 5, "target": 3, "id": 1.5, "metadata": [1]}',
      [
        'data.jsonl:1: input: expected a string or a list of chat messages (5)',
        'data.jsonl:1: target: expected a string or a list of strings (3)',
        'data.jsonl:1: id: expected a string or an integer (1.5)',
        'data.jsonl:1: metadata: expected object, got array ([1])',
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
      'a target that is not a JSON list of strings',
      'input,target\nx,"[1, 2]"\ny,"[""a"""\n',
      [
        'data.csv:2: target: expected a JSON list of strings ("[1, 2]")',
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
      'a name that implies no format',
      [path.join(dir, 'arith.txt')],
      [`${dir}/arith.txt: cannot tell the dataset format from the file name: use .jsonl or .csv`],
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

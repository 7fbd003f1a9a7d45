/**
 * Steward reads Inspect's datasets as Inspect does: the same files, loaded by Inspect AI's own
 * `json_dataset` and `csv_dataset` (in the pinned virtual environment that
 * `scripts/peers/setup-inspect.sh` makes), give the same samples, field by field, including the
 * ids Inspect's eval assigns and the bytes its sandbox would receive.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';

import { loadDataset } from '../src/definition/dataset';
import { REPO_ROOT } from './helpers/cli';

const run = promisify(execFile);
jest.setTimeout(600_000);

const READER = path.join(__dirname, 'fixtures', 'inspect', 'read-dataset.py');

/** Samples with Inspect's fields in every shape a real dataset has them. */
const RECORDS = [
  { input: 'no id, numeric target', target: 42 },
  {
    id: 'named',
    input: 'a list target with numbers',
    target: [1, 2.5, 'three'],
    choices: ['Paris', 'Rome', ' ', 7],
    metadata: { level: 2, tags: ['a'] },
  },
  { input: 'position 3, null fields', target: null, metadata: null, choices: null },
  { id: 10, input: [{ role: 'user', content: 'chat input' }], target: 'x' },
  {
    input: 'files and setup',
    files: {
      '/work/readme.txt': 'assets/readme.txt',
      '/work/assets': 'assets',
      '/work/inline.txt': 'not a file, so the text itself',
      '/work/b64.bin': 'data:application/octet-stream;base64,AP8A',
      '/work/empty': '',
    },
    setup: 'setup.sh',
  },
  { input: 'inline setup', setup: 'echo inline > /tmp/x' },
];

const CSV = [
  // No id column: Inspect reads an empty id cell as the id "" (Steward: absent, so numbered).
  'input,target,choices,metadata,files,setup',
  // Inspect reads an empty metadata or files cell as JSON and fails: real datasets fill them.
  'no id,3,"A, B ,,C","{""k"": 1}",{},',
  'space choices,x,up down,{},"{""/w/r.txt"": ""assets/readme.txt""}",setup.sh',
  '"multi',
  'line",,,{},{},',
].join('\n');

let python: string;
let dir: string;

beforeAll(async () => {
  const setup = await run(path.join(REPO_ROOT, 'scripts', 'peers', 'setup-inspect.sh'), [], {
    maxBuffer: 16 * 1024 * 1024,
  });
  python = setup.stdout.trim().split('\n').pop()!;

  dir = await mkdtemp(path.join(tmpdir(), 'steward-dataset-inspect-'));
  await mkdir(path.join(dir, 'assets', 'sub'), { recursive: true });
  await writeFile(path.join(dir, 'assets', 'readme.txt'), 'read me\n');
  await writeFile(path.join(dir, 'assets', 'sub', 'bytes.bin'), Buffer.from([0, 255, 1]));
  await writeFile(path.join(dir, 'setup.sh'), '#!/bin/sh\ntouch /work/ready\n');
  await writeFile(path.join(dir, 'samples.json'), JSON.stringify(RECORDS, null, 2));
  await writeFile(
    path.join(dir, 'samples.jsonl'),
    RECORDS.map((record) => JSON.stringify(record)).join('\n'),
  );
  await writeFile(path.join(dir, 'samples.csv'), CSV);
});

afterAll(() => (dir ? rm(dir, { recursive: true, force: true }) : undefined));

const FILES = ['samples.json', 'samples.jsonl', 'samples.csv'];

/** Inspect's samples of every file, read in one Python process (importing Inspect takes seconds). */
async function inspectSamples(): Promise<Map<string, unknown[]>> {
  const files = FILES.map((name) => path.join(dir, name));
  const { stdout } = await run(python, [READER, ...files], { cwd: dir });
  const lines = stdout.trim().split('\n');
  return new Map(
    FILES.map((name, i) => [name, (JSON.parse(lines[i]) as { samples: unknown[] }).samples]),
  );
}

let inspect: Promise<Map<string, unknown[]>> | undefined;

test.each(FILES)('%s: the samples Inspect reads', async (name) => {
  inspect ??= inspectSamples();
  const expected = (await inspect).get(name)!;
  expect(expected.length).toBeGreaterThan(2);
  expect(await loadDataset(path.join(dir, name))).toEqual(expected);
});

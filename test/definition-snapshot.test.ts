/**
 * The definition's snapshot (src/loader/snapshot.ts) and the task identity
 * (src/definition/identity.ts): the hash and layout by tables, then the copy on disk as
 * `steward launch` takes it and as every worker loads it, with the originals edited, moved away
 * or the copy tampered with. Module definitions load through tsx, which Jest's sandbox cannot
 * host: those cases run in a plain Node child, as the workers do.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { identityChanges, identityRefusal, type TaskIdentity } from '../src/definition/identity';
import {
  MANIFEST_FILE,
  SNAPSHOTS_DIR,
  isSnapshotHash,
  loadDefinitionFiles,
  loadSnapshot,
  snapshotDefinition,
  snapshotHash,
  snapshotLayout,
  writeSnapshot,
} from '../src/loader/snapshot';
import { REPO_ROOT, tempDir } from './helpers/cli';

const file = (p: string, text: string) => ({ path: p, content: Buffer.from(text) });

describe('snapshotHash', () => {
  const base = snapshotHash([file('evalset.yaml', 'name: x\n'), file('data.jsonl', '{}\n')]);

  test.each([
    [
      'the same files in another order',
      [file('data.jsonl', '{}\n'), file('evalset.yaml', 'name: x\n')],
      true,
    ],
    [
      'a byte of content changed',
      [file('evalset.yaml', 'name: y\n'), file('data.jsonl', '{}\n')],
      false,
    ],
    ['a file renamed', [file('evalset.yaml', 'name: x\n'), file('data2.jsonl', '{}\n')], false],
    [
      'a file added',
      [file('evalset.yaml', 'name: x\n'), file('data.jsonl', '{}\n'), file('b', '')],
      false,
    ],
    // The boundary between a name and its content is part of the hash.
    [
      'bytes moved from a name into its content',
      [file('evalset.yam', 'lname: x\n'), file('data.jsonl', '{}\n')],
      false,
    ],
  ])('%s', (_what, files, same) => {
    const hash = snapshotHash(files);
    expect(isSnapshotHash(hash)).toBe(true);
    expect(hash === base).toBe(same);
  });

  test('is sha256 over the sorted, length-prefixed (path, content) pairs', () => {
    const expected = createHash('sha256').update('5:b.txt2:hi5:c.txt0:').digest('hex');
    expect(snapshotHash([file('c.txt', ''), file('b.txt', 'hi')])).toBe(expected);
  });

  test.each([['abc'], ['A'.repeat(64)], [42], ['0'.repeat(63)]])('%p is not a hash', (value) => {
    expect(isSnapshotHash(value)).toBe(false);
  });
});

describe('snapshotLayout', () => {
  test('keeps the layout of files named relatively, and maps files named by absolute path', () => {
    const { entries, manifest } = snapshotLayout({
      definition: '/home/u/sets/a/evalset.yaml',
      relative: ['/home/u/sets/a/data/x.jsonl', '/home/u/sets/shared/y.csv'],
      absolute: ['/data/z.jsonl'],
    });
    expect(entries).toEqual([
      { source: '/home/u/sets/a/evalset.yaml', path: 'a/evalset.yaml' },
      { source: '/home/u/sets/a/data/x.jsonl', path: 'a/data/x.jsonl' },
      { source: '/home/u/sets/shared/y.csv', path: 'shared/y.csv' },
      { source: '/data/z.jsonl', path: '.steward-absolute/data/z.jsonl' },
    ]);
    expect(manifest).toEqual({
      version: 1,
      definition: 'a/evalset.yaml',
      absolute: { '/data/z.jsonl': '.steward-absolute/data/z.jsonl' },
    });
  });
});

describe('a snapshot on disk', () => {
  let dir: string;
  let outside: string;
  let logDir: string;
  let definitionFile: string;

  beforeEach(async () => {
    dir = await tempDir('steward-snapshot-');
    outside = await tempDir('steward-snapshot-abs-');
    logDir = path.join(await tempDir('steward-snapshot-logs-'), 'logs');
    await fs.mkdir(path.join(dir, 'set', 'sandbox'), { recursive: true });
    await fs.mkdir(path.join(dir, 'data'));
    await fs.writeFile(
      path.join(dir, 'data', 'one.jsonl'),
      '{"id": "a", "input": "1", "target": "1"}\n',
    );
    await fs.writeFile(path.join(outside, 'two.csv'), 'id,input,target\nb,2,2\n');
    await fs.writeFile(
      path.join(dir, 'set', 'sandbox', 'compose.yaml'),
      stringify({ services: { default: { image: 'busybox', command: 'sleep infinity' } } }),
    );
    definitionFile = path.join(dir, 'set', 'evalset.yaml');
    await fs.writeFile(
      definitionFile,
      stringify({
        name: 'pinned',
        model: 'mockllm/model',
        tasks: [
          { name: 'rel', dataset: '../data/one.jsonl', scorer: 'match' },
          {
            name: 'abs',
            dataset: path.join(outside, 'two.csv'),
            scorer: 'match',
            sandbox: 'sandbox/compose.yaml',
          },
        ],
      }),
    );
  });

  async function snapshotFiles(hash: string): Promise<string[]> {
    const root = path.join(logDir, SNAPSHOTS_DIR, hash);
    const entries = await fs.readdir(root, { recursive: true, withFileTypes: true });
    return entries
      .filter((e) => !e.isDirectory())
      .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
      .sort();
  }

  test('holds the definition and every file it uses, in their layout', async () => {
    const { hash, definition } = await snapshotDefinition(definitionFile, logDir);
    expect(await snapshotFiles(hash)).toEqual([
      `.steward-absolute${outside}/two.csv`,
      MANIFEST_FILE,
      'data/one.jsonl',
      'set/evalset.yaml',
      'set/sandbox/compose.yaml',
    ]);
    expect(definition.source).toBe(definitionFile);
    expect(definition.tasks.map((t) => [t.name, t.dataset.map((s) => s.id)])).toEqual([
      ['rel', ['a']],
      ['abs', ['b']],
    ]);
    expect(definition.tasks[1].sandbox?.services[0]).toMatchObject({ image: 'busybox' });
    // Nothing half-written is left beside it.
    expect(await fs.readdir(path.join(logDir, SNAPSHOTS_DIR))).toEqual([hash]);
  });

  test('loads as launched after the originals are edited, then removed', async () => {
    const { hash } = await snapshotDefinition(definitionFile, logDir);
    await fs.writeFile(path.join(dir, 'data', 'one.jsonl'), '{"id": "changed", "input": "9"}\n');
    await fs.writeFile(definitionFile, 'name: edited\n');
    const edited = await loadSnapshot({ logDir, hash });
    expect(edited.name).toBe('pinned');
    expect(edited.tasks[0].dataset.map((s) => s.id)).toEqual(['a']);

    await fs.rm(dir, { recursive: true });
    await fs.rm(outside, { recursive: true });
    const gone = await loadSnapshot({ logDir, hash, origin: definitionFile });
    expect(gone.tasks.map((t) => t.dataset[0].id)).toEqual(['a', 'b']);
    expect(gone.source).toBe(definitionFile);
  });

  test('the same content is the same snapshot; an edit is a new one', async () => {
    const first = await snapshotDefinition(definitionFile, logDir);
    const again = await snapshotDefinition(definitionFile, logDir);
    expect(again.hash).toBe(first.hash);
    await fs.appendFile(path.join(dir, 'data', 'one.jsonl'), '{"id": "c", "input": "3"}\n');
    const edited = await snapshotDefinition(definitionFile, logDir);
    expect(edited.hash).not.toBe(first.hash);
    expect((await fs.readdir(path.join(logDir, SNAPSHOTS_DIR))).sort()).toEqual(
      [first.hash, edited.hash].sort(),
    );
  });

  test('a snapshot changed after launch is refused, naming it', async () => {
    const { hash } = await snapshotDefinition(definitionFile, logDir);
    const root = path.join(logDir, SNAPSHOTS_DIR, hash);
    await fs.appendFile(path.join(root, 'data', 'one.jsonl'), '{"id": "sneaked", "input": "4"}\n');
    await expect(loadSnapshot({ logDir, hash })).rejects.toMatchObject({
      type: 'StewardSnapshotError',
      name: 'StewardError',
      message: `the definition's snapshot ${root} does not match its hash: its files were changed after launch (remove that directory and launch again to take a new snapshot)`,
    });
  });

  test('a snapshot that is not there, or a hash that is not one, is refused', async () => {
    const hash = 'f'.repeat(64);
    await expect(loadSnapshot({ logDir, hash })).rejects.toMatchObject({
      type: 'StewardSnapshotError',
      message: `the definition's snapshot ${path.join(logDir, SNAPSHOTS_DIR, hash)} does not exist: the log dir must be the one the eval set was launched with, readable by every worker`,
    });
    await expect(loadSnapshot({ logDir, hash: '../x' })).rejects.toMatchObject({
      message: 'definition hash "../x" is not a sha256 (64 hex digits)',
    });
  });
});

describe('a module definition', () => {
  /** Runs test/fixtures/config/snapshot-in-node.ts in a plain Node process. */
  async function inNode(...args: string[]): Promise<Record<string, unknown>> {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        '--require',
        'tsx/cjs',
        path.join(REPO_ROOT, 'test/fixtures/config/snapshot-in-node.ts'),
        ...args,
      ],
      { cwd: REPO_ROOT },
    );
    return JSON.parse(stdout) as Record<string, unknown>;
  }

  test('is pinned with its local imports, and loads from the snapshot once they are gone', async () => {
    const root = await tempDir('steward-snapshot-module-');
    const project = path.join(root, 'project');
    const logDir = path.join(root, 'logs');
    await fs.mkdir(path.join(project, 'lib'), { recursive: true });
    await fs.mkdir(path.join(project, 'node_modules'));
    // `steward` is a package of the project, as users install it.
    await fs.symlink(REPO_ROOT, path.join(project, 'node_modules', 'steward'));
    await fs.writeFile(
      path.join(project, 'lib', 'solver.ts'),
      "import type { Solver } from 'steward';\n" +
        'export const shout: Solver = async (state) => ({\n' +
        "  ...state,\n  messages: [...state.messages, { role: 'assistant', content: 'HI' }],\n});\n",
    );
    await fs.writeFile(
      path.join(project, 'data.jsonl'),
      '{"id": "a", "input": "hi", "target": "HI"}\n',
    );
    const definition = path.join(project, 'evalset.ts');
    await fs.writeFile(
      definition,
      "import { defineEvalSet, systemMessage } from 'steward';\n" +
        "import { shout } from './lib/solver';\n" +
        'export default defineEvalSet({\n' +
        "  name: 'module-pinned',\n  model: 'mockllm/model',\n" +
        "  tasks: [{ name: 't', dataset: 'data.jsonl', solver: [systemMessage('Shout.'), shout], scorer: 'exact' }],\n" +
        '});\n',
    );

    const taken = await inNode('snapshot', definition, logDir);
    expect(taken.files).toEqual([MANIFEST_FILE, 'data.jsonl', 'evalset.ts', 'lib/solver.ts']);

    // The project is gone: its files, and the package it resolved `steward` from.
    await fs.rm(project, { recursive: true });
    const loaded = await inNode('load', logDir, taken.hash as string, definition);
    expect(loaded).toEqual({
      name: 'module-pinned',
      identity: expect.objectContaining({
        solver: [{ system_message: 'Shout.' }, { function: 'shout' }],
        scorer: { exact: {} },
      }),
      completion: 'HI',
    });
  });
});

describe('task identity', () => {
  const identity: TaskIdentity = {
    model: 'mockllm/model',
    model_args: { outputs: ['{target}'] },
    solver: [{ generate: {} }],
    scorer: { match: {} },
    dataset: { samples: 10, sha256: 'a'.repeat(64) },
    epochs: 1,
    config: {},
    sandbox: null,
  };
  const recorded = { eval_set: 'set', identity };

  test.each([
    ['nothing', {}, []],
    ['the model', { model: 'openai/gpt-4o' }, ['model "mockllm/model" → "openai/gpt-4o"']],
    ['the epochs', { epochs: 3 }, ['epochs 1 → 3']],
    [
      'the dataset',
      { dataset: { samples: 12, sha256: 'b'.repeat(64) } },
      ['dataset 10 samples, sha256 aaaaaaaaaaaa → 12 samples, sha256 bbbbbbbbbbbb'],
    ],
    ['the scorer', { scorer: { includes: {} } }, ['scorer {"match":{}} → {"includes":{}}']],
    [
      'a long value, cut short',
      { model_args: { outputs: ['x'.repeat(100)] } },
      [`model_args {"outputs":["{target}"]} → {"outputs":["${'x'.repeat(46)}…`],
    ],
  ])('a change of %s', (_what, change, expected) => {
    const changes = identityChanges(recorded, {
      eval_set: 'set',
      identity: { ...identity, ...change },
    });
    expect(changes.map((c) => `${c.field} ${c.from} → ${c.to}`)).toEqual(expected);
  });

  test('key order does not count', () => {
    const reordered = { ...identity, model_args: {}, config: { temperature: 0, max_tokens: 5 } };
    const same = { ...identity, model_args: {}, config: { max_tokens: 5, temperature: 0 } };
    expect(
      identityChanges(
        { eval_set: 'set', identity: reordered },
        { eval_set: 'set', identity: same },
      ),
    ).toEqual([]);
  });

  test('the refusal names the task, what changed, and what to do', () => {
    const changes = identityChanges(recorded, {
      eval_set: 'set',
      identity: { ...identity, model: 'openai/gpt-4o', epochs: 2 },
    });
    expect(identityRefusal('t', '/logs/set', changes)).toBe(
      'task "t" differs from the one whose records are in /logs/set: model "mockllm/model" → "openai/gpt-4o"; epochs 1 → 2. ' +
        'Use a new log dir (--log-dir) for the changed task, or remove /logs/set/t to discard its records.',
    );
  });
});

describe("a smoke run's snapshot", () => {
  test('is its own hash, and loads renamed, cut to the first samples, one epoch', async () => {
    const dir = await tempDir();
    const rows = [1, 2, 3, 4].map((i) => JSON.stringify({ id: `s${i}`, input: 'q', target: 'a' }));
    await fs.writeFile(path.join(dir, 'data.jsonl'), `${rows.join('\n')}\n`);
    const yaml = path.join(dir, 'evalset.yaml');
    await fs.writeFile(
      yaml,
      stringify({
        name: 'hello',
        model: 'mockllm/model',
        tasks: [{ name: 't', dataset: 'data.jsonl', epochs: 3, scorer: 'match' }],
      }),
    );
    const logDir = path.join(dir, 'logs');
    const { definition, used } = await loadDefinitionFiles(yaml);
    const real = await writeSnapshot(used, logDir);
    const smoke = await writeSnapshot(used, logDir, { name: 'hello-smoke', samples: 2 });
    expect(smoke).not.toBe(real);
    const loaded = await loadSnapshot({ logDir, hash: smoke, origin: yaml });
    expect(loaded.name).toBe('hello-smoke');
    expect(loaded.tasks[0].dataset.map((s) => s.id)).toEqual(['s1', 's2']);
    expect(loaded.tasks[0].epochs).toBe(1);
    expect(loaded.identities.t).toMatchObject({ epochs: 1, dataset: { samples: 2 } });
    // The real snapshot is untouched by the smoke run's.
    const again = await loadSnapshot({ logDir, hash: real, origin: yaml });
    expect(again.name).toBe('hello');
    expect(again.identities).toEqual(definition.identities);
  });
});

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { ConfigError, ExitCode, StewardError } from '../src/errors';
import {
  buildRecipe,
  findTemporalBinary,
  temporalCliPackage,
  temporalCliVersion,
} from '../src/temporal/binary';
import {
  loadTemporalDevConfig,
  validateTemporalDevConfig,
  type TemporalDevConfig,
} from '../src/temporal/config';
import { connectClient, resolveTemporal } from '../src/temporal/connection';
import { isAlive } from '../src/util/processes';
import {
  devServerArgs,
  devServerFiles,
  ensureDevServer,
  stopDevServer,
} from '../src/temporal/devserver';
import { freePort } from './setup/global-setup';

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'steward-devserver-test-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function freshDir(name: string): Promise<string> {
  const dir = path.join(scratch, `${name}-${randomUUID().slice(0, 8)}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

describe('temporal-dev.yaml', () => {
  it('ships the documented defaults', () => {
    const config = loadTemporalDevConfig(undefined, { cwd: '/work/dir', env: {} });
    expect(config).toEqual({
      ip: '127.0.0.1',
      port: 7233,
      uiPort: 8233,
      namespace: 'default',
      dbFilename: '/work/dir/.steward/temporal.db',
      logLevel: 'warn',
      logFormat: 'text',
      searchAttributes: { StewardEvalSet: 'Keyword' },
      dynamicConfig: {},
      sqlitePragmas: { journal_mode: 'wal', synchronous: 'normal' },
    });
  });

  it('reads the file STEWARD_TEMPORAL_CONFIG names, relative to the working directory', async () => {
    const dir = await freshDir('config');
    await writeFile(
      path.join(dir, 'dev.yaml'),
      [
        'port: 7300',
        'ui_port: false',
        'db_filename: state/t.db',
        'search_attributes: { Team: Keyword }',
        'dynamic_config: { limit.maxIDLength: 64, some.flag: true }',
      ].join('\n'),
    );
    const config = loadTemporalDevConfig(undefined, {
      cwd: dir,
      env: { STEWARD_TEMPORAL_CONFIG: 'dev.yaml' },
    });
    expect(config).toMatchObject({
      port: 7300,
      uiPort: false,
      dbFilename: path.join(dir, 'state/t.db'),
      searchAttributes: { Team: 'Keyword', StewardEvalSet: 'Keyword' },
      dynamicConfig: { 'limit.maxIDLength': 64, 'some.flag': true },
    });
  });

  it('defaults ui_port to port + 1000, as the dev server does', () => {
    expect(validateTemporalDevConfig({ port: 9000 }, '/').config?.uiPort).toBe(10000);
  });

  it.each([
    [{ prot: 7233 }, 'prot: unknown key (7233)'],
    [{ dynamic_config: { 'limit.x': 1 }, extra: { a: 1 } }, 'extra: unknown key ({"a":1})'],
    [{ port: '7233' }, 'port: Invalid input: expected number, received string ("7233")'],
    [{ port: 70000 }, 'port: Too big'],
    [{ ui_port: true }, 'ui_port: '],
    [{ port: 7233, ui_port: 7233 }, 'ui_port: must differ from port (7233)'],
    [{ log_level: 'loud' }, 'log_level: Invalid option'],
    [{ search_attributes: { Team: 'String' } }, 'search_attributes.Team: Invalid option'],
    [{ search_attributes: { 'my-team': 'Keyword' } }, 'search_attributes.my-team: invalid name'],
    [
      { search_attributes: { StewardEvalSet: 'Text' } },
      'StewardEvalSet: Steward\'s workflows need this to be Keyword ("Text")',
    ],
    [{ dynamic_config: { 'limit x': 1 } }, 'dynamic_config.limit x: invalid name'],
    [{ dynamic_config: { 'limit.x': null } }, 'dynamic_config.limit.x: must be a string, number'],
  ])('rejects %j, naming the key', (raw, message) => {
    const { config, issues } = validateTemporalDevConfig(raw, '/');
    expect(config).toBeUndefined();
    expect(issues.map((issue) => new ConfigError([issue]).message).join('\n')).toContain(message);
  });

  it('names the file in load errors, with the line for invalid YAML', async () => {
    const dir = await freshDir('config');
    const file = path.join(dir, 'bad.yaml');
    await writeFile(file, 'port: 7233\nnamespcae: x\n');
    expect(() => loadTemporalDevConfig(file)).toThrow(`${file}: namespcae: unknown key ("x")`);
    await writeFile(file, 'port: 7233\nip: [unclosed\n');
    expect(() => loadTemporalDevConfig(file)).toThrow(new RegExp(`^${file}:\\d+: invalid YAML`));
    expect(() => loadTemporalDevConfig(path.join(dir, 'missing.yaml'))).toThrow(/Cannot read/);
  });
});

const baseConfig: TemporalDevConfig = {
  ip: '127.0.0.1',
  port: 7233,
  uiPort: 8233,
  namespace: 'default',
  dbFilename: '/data/t.db',
  logLevel: 'warn',
  logFormat: 'text',
  searchAttributes: { StewardEvalSet: 'Keyword' },
  dynamicConfig: {},
  sqlitePragmas: {},
};

describe('devServerArgs', () => {
  it.each<[Partial<TemporalDevConfig>, string[]]>([
    [{}, ['--ui-port', '8233', '--search-attribute', 'StewardEvalSet=Keyword']],
    [{ uiPort: false }, ['--headless']],
    [{ namespace: 'evals' }, ['--namespace', 'evals']],
    [{ sqlitePragmas: { journal_mode: 'wal' } }, ['--sqlite-pragma', 'journal_mode=wal']],
    [
      { dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 200, 'a.b': 'x' } },
      [
        '--dynamic-config-value',
        'limit.historyCount.suggestContinueAsNew=200',
        '--dynamic-config-value',
        'a.b="x"',
      ],
    ],
  ])('%j passes %j', (change, expected) => {
    const args = devServerArgs({ ...baseConfig, ...change });
    expect(args.slice(0, 12)).toEqual([
      'server',
      'start-dev',
      '--ip',
      '127.0.0.1',
      '--port',
      '7233',
      '--db-filename',
      '/data/t.db',
      '--log-level',
      'warn',
      '--log-format',
      'text',
    ]);
    expect(args.join(' ')).toContain(expected.join(' '));
  });
});

describe('findTemporalBinary', () => {
  async function executable(file: string, script: string): Promise<string> {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, `#!/bin/sh\n${script}\n`);
    await chmod(file, 0o755);
    return file;
  }

  it('prefers the temporal on PATH, then the one built under .tools/bin', async () => {
    const dir = await freshDir('binary');
    const onPath = await executable(path.join(dir, 'path', 'temporal'), 'exit 0');
    const built = await executable(path.join(dir, 'root', '.tools', 'bin', 'temporal'), 'exit 0');
    await writeFile(path.join(dir, 'root', '.tools', 'bin', 'temporal.recipe'), buildRecipe);
    const root = path.join(dir, 'root');
    const env = { PATH: path.dirname(onPath) };
    expect(await findTemporalBinary({ env, root })).toBe(onPath);
    expect(await findTemporalBinary({ env: { PATH: path.join(dir, 'empty') }, root })).toBe(built);
  });

  /** A fake `go` that logs each invocation and, asked to build, writes the `-o` file. */
  async function fakeGo(dir: string, record: string): Promise<void> {
    await executable(
      path.join(dir, 'bin', 'go'),
      [
        `echo "$@" >> ${record}`,
        'if [ "$1" = build ]; then printf \'#!/bin/sh\\n\' > "$3"; /bin/chmod +x "$3"; fi',
      ].join('\n'),
    );
  }

  it('builds it once into .tools/bin with the fixed SQLite driver, saying so', async () => {
    const dir = await freshDir('binary');
    const record = path.join(dir, 'go-args');
    await fakeGo(dir, record);
    const progress: string[] = [];
    const root = path.join(dir, 'root');
    const env = { PATH: path.join(dir, 'bin') };
    const binary = await findTemporalBinary({ env, root, onProgress: (m) => progress.push(m) });

    expect(binary).toBe(path.join(root, '.tools', 'bin', 'temporal'));
    // The build runs in a scratch module under .tools/bin, gone afterwards.
    const invocations = (await readFile(record, 'utf8')).replace(
      /\S*\/\.build-[^/]+\//g,
      'SCRATCH/',
    );
    expect(invocations).toBe(
      [
        'mod init steward.local/temporal-build',
        `get ${temporalCliPackage}@${temporalCliVersion} modernc.org/sqlite@v1.44.3`,
        `build -o SCRATCH/temporal ${temporalCliPackage}`,
        '',
      ].join('\n'),
    );
    expect(progress).toEqual([
      'Building the Temporal CLI v1.5.1 with Go (one time, a few minutes)...',
    ]);
    expect((await readdir(path.join(root, '.tools', 'bin'))).sort()).toEqual([
      'temporal',
      'temporal.recipe',
    ]);
    expect(await findTemporalBinary({ env, root, onProgress: (m) => progress.push(m) })).toBe(
      binary,
    );
    expect(progress).toHaveLength(1);
  });

  it('builds again over a binary of another recipe (the stock SQLite driver)', async () => {
    const dir = await freshDir('binary');
    const record = path.join(dir, 'go-args');
    await fakeGo(dir, record);
    const root = path.join(dir, 'root');
    await executable(path.join(root, '.tools', 'bin', 'temporal'), 'exit 0');
    await findTemporalBinary({ env: { PATH: path.join(dir, 'bin') }, root });
    expect(await readFile(record, 'utf8')).toContain('build -o');
    expect(await readFile(path.join(root, '.tools', 'bin', 'temporal.recipe'), 'utf8')).toBe(
      `${buildRecipe}\n`,
    );
  });

  it('fails with the end of go output when the build fails, leaving nothing behind', async () => {
    const dir = await freshDir('binary');
    const lines = Array.from({ length: 40 }, (_, i) => `echo "go: line ${i + 1}" >&2`);
    await executable(path.join(dir, 'bin', 'go'), `${lines.join('\n')}\nexit 1`);
    const root = path.join(dir, 'root');
    const error = await findTemporalBinary({ env: { PATH: path.join(dir, 'bin') }, root }).catch(
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(StewardError);
    expect((error as StewardError).exitCode).toBe(ExitCode.environment);
    expect((error as Error).message).toMatch(/go mod init .* exited with 1/);
    expect((error as Error).message).toContain('go: line 40');
    expect((error as Error).message).not.toContain('go: line 20\n');
    expect(await readdir(path.join(root, '.tools', 'bin'))).toEqual([]);
  });

  // Without Go it is downloaded: test/temporal-binary-download.test.ts, against a local server.
});

describe('ensureDevServer, against the real Temporal CLI', () => {
  let stewardDir: string;
  let config: TemporalDevConfig;
  let client: Client | undefined;

  beforeAll(async () => {
    stewardDir = await freshDir('server');
    config = {
      ...baseConfig,
      port: await freePort(),
      uiPort: false,
      dbFilename: path.join(stewardDir, 'db', 'temporal.db'),
      searchAttributes: { StewardEvalSet: 'Keyword', StewardTestRank: 'Int' },
      dynamicConfig: { 'limit.maxIDLength': 64 },
    };
  });
  afterAll(async () => {
    await client?.connection.close();
    await stopDevServer(stewardDir);
  });

  async function connected(): Promise<Client> {
    client ??= await connectClient({
      address: `127.0.0.1:${config.port}`,
      namespace: 'default',
      embedded: true,
    });
    return client;
  }

  async function searchAttributes(): Promise<Record<string, number>> {
    const { customAttributes } = await (
      await connected()
    ).connection.operatorService.listSearchAttributes({ namespace: config.namespace });
    return customAttributes;
  }

  async function startUnservedWorkflow(workflowId: string) {
    return (await connected()).workflow.start('noWorkerServesThis', {
      workflowId,
      taskQueue: `test-${randomUUID()}`,
    });
  }

  it('starts one server when two callers race, and the other reuses it', async () => {
    const endpoints = await Promise.all([
      ensureDevServer(config, { stewardDir }),
      ensureDevServer(config, { stewardDir }),
    ]);
    expect(endpoints.map((e) => e.started).sort()).toEqual([false, true]);
    expect(endpoints[0].address).toBe(`127.0.0.1:${config.port}`);
    expect(existsSync(devServerFiles(stewardDir).pid)).toBe(true);
    expect(existsSync(devServerFiles(stewardDir).lock)).toBe(false);
  });

  it('registers the configured search attributes', async () => {
    // Wire values of IndexedValueType: 2 = Keyword, 3 = Int.
    expect(await searchAttributes()).toMatchObject({ StewardEvalSet: 2, StewardTestRank: 3 });
  });

  it('passes dynamic config to the server', async () => {
    // limit.maxIDLength is 1,000 by default and 64 here.
    const tooLong = await startUnservedWorkflow('x'.repeat(65)).catch((e: Error) => e);
    expect(String((tooLong as Error).cause)).toMatch(/WorkflowId length exceeds limit/i);
    await expect(startUnservedWorkflow('x'.repeat(64))).resolves.toBeDefined();
  });

  it('reuses a running server', async () => {
    expect(await ensureDevServer(config, { stewardDir })).toEqual({
      address: `127.0.0.1:${config.port}`,
      namespace: 'default',
      started: false,
    });
  });

  it('refuses to start a second server on the database of one still running', async () => {
    const moved = { ...config, port: await freePort() };
    const error = await ensureDevServer(moved, { stewardDir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StewardError);
    expect((error as Error).message).toMatch(/is running but does not answer at .*kill \d+/);
  });

  it('keeps workflows across a kill -9 and a restart on the same database', async () => {
    const workflowId = `persist-${randomUUID()}`;
    await startUnservedWorkflow(workflowId);
    const pid = Number(await readFile(devServerFiles(stewardDir).pid, 'utf8'));
    process.kill(pid, 'SIGKILL');
    await waitUntil(() => !isAlive(pid));

    expect((await ensureDevServer(config, { stewardDir })).started).toBe(true);
    const description = await (await connected()).workflow.getHandle(workflowId).describe();
    expect(description.status.name).toBe('RUNNING');
  });

  it('registers a search attribute added to the config after the database was made', async () => {
    expect(await stopDevServer(stewardDir)).toBe(true);
    const grown = {
      ...config,
      searchAttributes: { ...config.searchAttributes, StewardLate: 'Bool' as const },
    };
    expect((await ensureDevServer(grown, { stewardDir })).started).toBe(true);
    expect(await searchAttributes()).toMatchObject({ StewardTestRank: 3, StewardLate: 5 });
  });

  it('reports a server that dies at startup with the end of its log', async () => {
    const blocker = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    const dir = await freshDir('blocked');
    try {
      const blocked = { ...config, port, dbFilename: path.join(dir, 'temporal.db') };
      const error = await ensureDevServer(blocked, { stewardDir: dir }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StewardError);
      expect((error as Error).message).toMatch(/exited during startup \(exit code 1\)/);
      expect((error as Error).message).toContain(`can't set frontend port ${port}`);
      expect(existsSync(devServerFiles(dir).pid)).toBe(false);
    } finally {
      blocker.close();
    }
  });
});

describe('resolveTemporal', () => {
  it('uses TEMPORAL_ADDRESS as given, starting nothing', async () => {
    const env = { TEMPORAL_ADDRESS: 'temporal.example:7233', TEMPORAL_API_KEY: 'secret' };
    expect(await resolveTemporal(env, { cwd: '/nonexistent' })).toEqual({
      address: 'temporal.example:7233',
      namespace: 'default',
      embedded: false,
      apiKey: 'secret',
      tls: true,
    });
  });

  it('without TEMPORAL_ADDRESS, starts the dev server its config file describes', async () => {
    const cwd = await freshDir('resolve');
    const port = await freePort();
    await writeFile(
      path.join(cwd, 'dev.yaml'),
      `port: ${port}\nui_port: false\nnamespace: evals\ndb_filename: state/temporal.db\n`,
    );
    const env = { STEWARD_TEMPORAL_CONFIG: 'dev.yaml', STEWARD_HOME: 'home' };
    try {
      const target = await resolveTemporal(env, { cwd });
      expect(target).toEqual({ address: `127.0.0.1:${port}`, namespace: 'evals', embedded: true });
      expect(existsSync(path.join(cwd, 'state', 'temporal.db'))).toBe(true);
      expect(existsSync(path.join(cwd, 'home', 'temporal.log'))).toBe(true);

      const client = await connectClient(target);
      try {
        const handle = await client.workflow.start('noWorkerServesThis', {
          workflowId: `resolve-${randomUUID()}`,
          taskQueue: `test-${randomUUID()}`,
        });
        expect((await handle.describe()).status.name).toBe('RUNNING');
      } finally {
        await client.connection.close();
      }
    } finally {
      await stopDevServer(path.join(cwd, 'home'));
    }
  });
});

describe('runDevServerForeground', () => {
  it('passes Ctrl-C on to the server and exits with it', async () => {
    const stewardDir = await freshDir('foreground');
    const config = {
      ...baseConfig,
      port: await freePort(),
      uiPort: false as const,
      dbFilename: path.join(stewardDir, 'temporal.db'),
    };
    const fixture = path.join(__dirname, 'devserver', 'foreground.ts');
    const child = spawn(
      process.execPath,
      ['--require', 'tsx/cjs', fixture, JSON.stringify(config), stewardDir],
      { stdio: 'ignore' },
    );
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      // The lock is released once the server answers, and a caller racing it reuses it.
      await waitUntil(() => existsSync(devServerFiles(stewardDir).pid));
      expect((await ensureDevServer(config, { stewardDir })).started).toBe(false);
      const serverPid = Number(await readFile(devServerFiles(stewardDir).pid, 'utf8'));

      child.kill('SIGINT');
      expect(await exited).toBe(0);
      expect(isAlive(serverPid)).toBe(false);
      expect(existsSync(devServerFiles(stewardDir).pid)).toBe(false);
    } finally {
      child.kill('SIGKILL');
      await stopDevServer(stewardDir);
    }
  });
});

async function waitUntil(condition: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await sleep(50);
  }
}

import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import type Docker from 'dockerode';

import { RECOMMENDED_POOLS } from '../src/core/pools';
import {
  daemonJsonPath,
  mergeAddressPools,
  readDaemonJson,
  writeDaemonJson,
} from '../src/docker/daemon-json';
import { dockerPreflight, offerPoolFix, type PreflightReport } from '../src/docker/preflight';
import { ExitCode, StewardError } from '../src/errors';
import { requireDocker } from './fixtures/docker/docker';

const FIX = { 'default-address-pools': RECOMMENDED_POOLS };
const now = (): number => Date.parse('2025-03-04T05:06:07.089Z');

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'steward-daemon-json-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

async function listDir(): Promise<string[]> {
  return (await fs.readdir(dir)).sort();
}

describe('daemonJsonPath', () => {
  const where = { home: '/home/ada', env: {} };
  test.each([
    ['systemd', '/etc/docker/daemon.json'],
    ['sysvinit', '/etc/docker/daemon.json'],
    ['rootless', '/home/ada/.config/docker/daemon.json'],
    ['docker-desktop-mac', '/home/ada/.docker/daemon.json'],
    ['docker-desktop-linux', '/home/ada/.docker/daemon.json'],
  ] as const)('%s: %s', (kind, expected) => {
    expect(daemonJsonPath(kind, where)).toBe(expected);
  });

  test('rootless honours XDG_CONFIG_HOME', () => {
    expect(
      daemonJsonPath('rootless', { home: '/home/ada', env: { XDG_CONFIG_HOME: '/cfg' } }),
    ).toBe('/cfg/docker/daemon.json');
  });

  test('the Windows service reads ProgramData', () => {
    expect(daemonJsonPath('windows-service', { home: 'C:\\Users\\ada', env: {} })).toBe(
      'C:\\ProgramData\\docker\\config\\daemon.json',
    );
  });
});

describe('mergeAddressPools', () => {
  test('keeps every other key and adds the pools', () => {
    const merged = mergeAddressPools(
      { 'log-driver': 'local', 'live-restore': true },
      RECOMMENDED_POOLS,
    );
    expect(merged).toEqual({ 'log-driver': 'local', 'live-restore': true, ...FIX });
  });

  test('replaces the pools the fix overlaps and keeps the others, ahead of it', () => {
    const merged = mergeAddressPools(
      {
        'default-address-pools': [
          { base: '172.17.0.0/12', size: 16 },
          { base: '10.10.0.0/16', size: 24 },
          { base: 'fd00::/48', size: 64 },
        ],
      },
      RECOMMENDED_POOLS,
    );
    expect(merged['default-address-pools']).toEqual([
      { base: '10.10.0.0/16', size: 24 },
      { base: 'fd00::/48', size: 64 },
      ...RECOMMENDED_POOLS,
    ]);
  });

  test('merging twice changes nothing', () => {
    const once = mergeAddressPools(
      { bip: '10.99.0.1/24', 'default-address-pools': [{ base: '10.10.0.0/16', size: 24 }] },
      RECOMMENDED_POOLS,
    );
    expect(mergeAddressPools(once, RECOMMENDED_POOLS)).toEqual(once);
  });
});

describe('readDaemonJson', () => {
  test('a missing file is an empty config', async () => {
    const file = path.join(dir, 'daemon.json');
    expect(await readDaemonJson(file)).toEqual({ path: file, exists: false, config: {} });
  });

  test('an empty file is an empty config, as the daemon reads it', async () => {
    const file = path.join(dir, 'daemon.json');
    await fs.writeFile(file, '\n');
    expect((await readDaemonJson(file)).config).toEqual({});
  });

  test.each([
    ['{ "debug": true, }', 'not valid JSON'],
    ['[1, 2]', 'must hold a JSON object'],
  ])('%s is an error naming the file', async (text, message) => {
    const file = path.join(dir, 'daemon.json');
    await fs.writeFile(file, text);
    const error = await readDaemonJson(file).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StewardError);
    expect((error as StewardError).exitCode).toBe(ExitCode.environment);
    expect((error as StewardError).message).toContain(file);
    expect((error as StewardError).message).toContain(message);
  });
});

describe('writeDaemonJson', () => {
  test('creates a missing file (and its directory) without a backup', async () => {
    const file = path.join(dir, 'docker', 'daemon.json');
    expect(await writeDaemonJson(file, FIX, { now })).toEqual({
      changed: true,
      backupPath: undefined,
    });
    expect(JSON.parse(await fs.readFile(file, 'utf8'))).toEqual(FIX);
  });

  test('backs up the previous file, keeps its mode, and is idempotent', async () => {
    const file = path.join(dir, 'daemon.json');
    const original = '{"log-driver": "local"}';
    await fs.writeFile(file, original, { mode: 0o600 });
    const merged = mergeAddressPools((await readDaemonJson(file)).config, RECOMMENDED_POOLS);

    const first = await writeDaemonJson(file, merged, { now });
    expect(first.backupPath).toBe(`${file}.steward-backup-2025-03-04T05-06-07-089Z`);
    expect(await fs.readFile(first.backupPath!, 'utf8')).toBe(original);
    expect(JSON.parse(await fs.readFile(file, 'utf8'))).toEqual({ 'log-driver': 'local', ...FIX });
    expect((await fs.stat(file)).mode & 0o777).toBe(0o600);

    const files = await listDir();
    expect(await writeDaemonJson(file, merged, { now: () => now() + 60_000 })).toEqual({
      changed: false,
    });
    expect(await listDir()).toEqual(files);
  });
});

describe('offerPoolFix', () => {
  let docker: Docker;
  beforeAll(async () => {
    docker = await requireDocker();
  });

  /** A real preflight against the local daemon, wanting more than its built-in pools give. */
  async function report(file: string, demand = 100): Promise<PreflightReport> {
    const result = await dockerPreflight({ docker, demand, daemonJsonPath: file });
    // These tests need the daemon's built-in pools (about 30 networks), as a fresh install has.
    expect({ source: result.source, ok: result.ok }).toEqual({ source: 'built-in', ok: false });
    return result;
  }

  function recorder(answer = '') {
    const printed: string[] = [];
    const prompts: string[] = [];
    return {
      printed,
      prompts,
      print: (text: string) => void printed.push(text),
      prompt: async (question: string) => {
        prompts.push(question);
        return answer;
      },
    };
  }

  async function seed(): Promise<string> {
    const file = path.join(dir, 'daemon.json');
    await fs.writeFile(
      file,
      JSON.stringify({ 'log-driver': 'local', features: { buildkit: true } }),
    );
    return file;
  }

  test('says both numbers, and declining (the default) writes nothing but prints the JSON and path', async () => {
    const file = await seed();
    const before = await fs.readFile(file, 'utf8');
    const io = recorder('');
    const outcome = await offerPoolFix({
      report: await report(file),
      isTTY: true,
      yes: false,
      now,
      ...io,
    });

    expect(outcome).toEqual({ action: 'printed', reason: 'declined' });
    expect(io.prompts).toHaveLength(1);
    expect(io.prompts[0]).toMatch(/\[y\/N\]/);
    const text = io.printed.join('\n');
    expect(text).toMatch(/can want 100 sandboxes/);
    expect(text).toMatch(/only \d+ more networks/);
    expect(text).toContain('"base": "172.16.0.0/12"');
    expect(text).toContain(file);
    expect(await fs.readFile(file, 'utf8')).toBe(before);
    expect(await listDir()).toEqual(['daemon.json']);
  });

  test('"n" declines too', async () => {
    const file = await seed();
    const io = recorder('n');
    const outcome = await offerPoolFix({
      report: await report(file),
      isTTY: true,
      yes: false,
      now,
      ...io,
    });
    expect(outcome).toEqual({ action: 'printed', reason: 'declined' });
    expect(await listDir()).toEqual(['daemon.json']);
  });

  test('"y" at the prompt merges the fix, backs up, and prints the restart command', async () => {
    const file = await seed();
    const io = recorder('y');
    const rep = await report(file);
    const outcome = await offerPoolFix({ report: rep, isTTY: true, yes: false, now, ...io });

    expect(outcome).toMatchObject({ action: 'written', path: file });
    expect(JSON.parse(await fs.readFile(file, 'utf8'))).toEqual({
      'log-driver': 'local',
      features: { buildkit: true },
      ...FIX,
    });
    expect(await listDir()).toEqual([
      'daemon.json',
      'daemon.json.steward-backup-2025-03-04T05-06-07-089Z',
    ]);
    expect(io.printed.join('\n')).toContain(rep.restartHint.command ?? rep.restartHint.text);
  });

  test('--yes writes without asking; a second run changes nothing and says a restart is pending', async () => {
    const file = await seed();
    const io = recorder();
    const outcome = await offerPoolFix({
      report: await report(file),
      isTTY: false,
      yes: true,
      now,
      ...io,
    });
    expect(outcome).toMatchObject({ action: 'written' });
    expect(io.prompts).toEqual([]);
    const files = await listDir();
    const content = await fs.readFile(file, 'utf8');

    // The daemon has not been restarted: it still runs the built-in pools, daemon.json has more.
    const again = await report(file);
    expect(again.pending?.capacity).toBeGreaterThanOrEqual(100);
    const second = recorder();
    expect(await offerPoolFix({ report: again, isTTY: false, yes: true, now, ...second })).toEqual({
      action: 'restart-pending',
    });
    expect(second.printed.join('\n')).toMatch(/has not loaded them/);
    expect(await listDir()).toEqual(files);
    expect(await fs.readFile(file, 'utf8')).toBe(content);
  });

  test('--yes on a file that already holds the fix reports it unchanged', async () => {
    const file = path.join(dir, 'daemon.json');
    await fs.writeFile(file, JSON.stringify(FIX));
    // Demand beyond what even the fix gives, so no "restart pending" short-cut applies.
    const rep = await report(file, 100_000);
    const outcome = await offerPoolFix({
      report: rep,
      isTTY: false,
      yes: true,
      now,
      ...recorder(),
    });
    expect(outcome).toEqual({ action: 'unchanged', path: file });
    expect(await listDir()).toEqual(['daemon.json']);
  });

  test('without a TTY it prints the JSON and the path, and writes nothing', async () => {
    const file = await seed();
    const io = recorder('y');
    const outcome = await offerPoolFix({
      report: await report(file),
      isTTY: false,
      yes: false,
      now,
      ...io,
    });
    expect(outcome).toEqual({ action: 'printed', reason: 'no-tty' });
    expect(io.prompts).toEqual([]);
    expect(io.printed.join('\n')).toContain('"size": 24');
    expect(io.printed.join('\n')).toContain(file);
    expect(await listDir()).toEqual(['daemon.json']);
  });

  test('a file it cannot write falls back to printing', async () => {
    await fs.writeFile(path.join(dir, 'not-a-dir'), '');
    const file = path.join(dir, 'not-a-dir', 'daemon.json');
    const io = recorder();
    const outcome = await offerPoolFix({
      report: await report(file),
      isTTY: false,
      yes: true,
      now,
      ...io,
    });
    expect(outcome).toMatchObject({ action: 'printed', reason: 'write-failed' });
    expect(io.printed.join('\n')).toContain(`Could not write ${file}`);
    expect(io.printed.join('\n')).toContain('"base": "192.168.0.0/16"');
  });

  test('nothing to do when the daemon has room', async () => {
    const file = path.join(dir, 'daemon.json');
    const rep = await dockerPreflight({ docker, demand: 1, daemonJsonPath: file });
    const io = recorder();
    expect(await offerPoolFix({ report: rep, isTTY: true, yes: false, now, ...io })).toEqual({
      action: 'not-needed',
    });
    expect(io.printed).toEqual([]);
  });
});

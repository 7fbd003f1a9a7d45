import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { promisify } from 'node:util';

import Docker from 'dockerode';

import { ConfigError, ErrorType, ExitCode, StewardError } from '../src/errors';
import { dockerCpuCount, reapSandboxes } from '../src/sandbox/cleanup';
import {
  imageSandboxSpec,
  loadSandboxSpec,
  parseBytes,
  parseComposeSpec,
  splitShellWords,
} from '../src/sandbox/compose';
import { createSandbox, withSandbox, type CreateSandboxArgs } from '../src/sandbox/docker';
import { BUSYBOX_IMAGE, ensureBusyboxImage, hasImage } from '../src/sandbox/image';
import type { Sandbox, SandboxSpec } from '../src/sandbox/types';
import { FIXTURES, fixture, requireDocker } from './fixtures/docker/docker';

describe('compose files', () => {
  test('two services: x-default picks the default, fields normalised', async () => {
    const spec = await loadSandboxSpec('two-services.yaml', FIXTURES);
    expect(spec.defaultService).toBe('agent');
    expect(spec.services.map((service) => service.name)).toEqual(['agent', 'db']);
    expect(spec.services[0]).toEqual({
      name: 'agent',
      image: 'steward-busybox:latest',
      command: ['tail', '-f', '/dev/null'],
      working_dir: '/work',
      environment: { ROLE: 'agent' },
      mem_limit: 64 * 1024 * 1024,
      cpus: 0.5,
      init: true,
    });
    expect(spec.services[1].command).toEqual(['tail', '-f', '/dev/null']);
  });

  test('a service named default is the default; else the first', () => {
    const named = parseComposeSpec('services:\n  a: {image: x}\n  default: {image: y}\n', 'c.yaml');
    expect(named.defaultService).toBe('default');
    const first = parseComposeSpec('services:\n  a: {image: x}\n  b: {image: y}\n', 'c.yaml');
    expect(first.defaultService).toBe('a');
  });

  test('an image name is a one-service sandbox kept alive', async () => {
    expect(await loadSandboxSpec('python:3.12-slim', FIXTURES)).toEqual(
      imageSandboxSpec('python:3.12-slim'),
    );
  });

  test('unsupported and invalid fields are each reported with file and path', async () => {
    const error = await loadSandboxSpec('unsupported.yaml', FIXTURES).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    const file = fixture('unsupported.yaml');
    expect(message).toContain(`${file}: networks: is not supported in a Steward sandbox`);
    expect(message).toContain(
      `${file}: services.default.volumes: is not supported in a Steward sandbox`,
    );
    expect(message).toContain(
      `${file}: services.default.mem_limit: must be bytes or a size such as 512m or 2g ("lots")`,
    );
    expect(message).toContain(`${file}: services.second.image:`);
  });

  test('YAML syntax errors name the line', () => {
    expect(() => parseComposeSpec('services:\n  a: [1\nb: 2\n', '/x/c.yaml')).toThrow(
      /^\/x\/c\.yaml:3: /,
    );
  });

  test('a missing file is a config error naming it', async () => {
    await expect(loadSandboxSpec('nope.yml', FIXTURES)).rejects.toThrow(fixture('nope.yml'));
  });

  test.each([
    ['tail -f /dev/null', ['tail', '-f', '/dev/null']],
    [`sh -c 'echo "a b"; exit 3'`, ['sh', '-c', 'echo "a b"; exit 3']],
    ['echo "x \\"y\\"" z\\ w', ['echo', 'x "y"', 'z w']],
    ['  spaced   out  ', ['spaced', 'out']],
    [`empty ''`, ['empty', '']],
  ])('splitShellWords(%s)', (text, words) => {
    expect(splitShellWords(text)).toEqual(words);
  });

  test.each([
    ['512m', 512 * 1024 ** 2],
    ['1.5g', 1.5 * 1024 ** 3],
    ['2GB', 2 * 1024 ** 3],
    ['100k', 102400],
    [4096, 4096],
    ['lots', undefined],
    [0, undefined],
  ])('parseBytes(%s)', (value, bytes) => {
    expect(parseBytes(value)).toBe(bytes);
  });
});

describe('Docker sandboxes', () => {
  const evalSet = `test-${randomUUID().slice(0, 8)}`;
  let docker: Docker;
  let sampleCounter = 0;

  beforeAll(async () => {
    docker = await requireDocker();
    await ensureBusyboxImage(docker);
  });

  afterAll(async () => {
    if (docker) await reapSandboxes(docker, { evalSet });
  });

  function args(
    spec: SandboxSpec = imageSandboxSpec(BUSYBOX_IMAGE),
    task = 'lifecycle',
  ): CreateSandboxArgs {
    return { docker, evalSet, task, sampleId: ++sampleCounter, epoch: 1, spec };
  }

  async function ours(
    labels: Record<string, string | number> = {},
  ): Promise<{ containers: number; networks: number }> {
    const label = [
      'steward.managed=true',
      `steward.eval_set=${evalSet}`,
      ...Object.entries(labels).map(([k, v]) => `steward.${k}=${v}`),
    ];
    const filters = JSON.stringify({ label });
    const [containers, networks] = await Promise.all([
      docker.listContainers({ all: true, filters }),
      docker.listNetworks({ filters }),
    ]);
    return { containers: containers.length, networks: networks.length };
  }

  describe('building the busybox image', () => {
    const tags = [
      `steward-busybox-test:${randomUUID().slice(0, 8)}`,
      `steward-busybox-script:${randomUUID().slice(0, 8)}`,
    ];
    afterAll(async () => {
      for (const tag of tags)
        await docker
          .getImage(tag)
          .remove({ force: true })
          .catch(() => undefined);
    });

    async function runsAShell(tag: string): Promise<void> {
      const sandbox = await createSandbox(args(imageSandboxSpec(tag), 'image'));
      try {
        const result = await sandbox.exec(['sh', '-c', 'echo $0 works; ls /usr/bin/env /bin/sh']);
        expect(result).toMatchObject({ exitCode: 0, stdout: 'sh works\n/bin/sh\n/usr/bin/env\n' });
      } finally {
        await sandbox.destroy();
      }
    }

    test('ensureBusyboxImage builds one that runs a shell, then skips', async () => {
      expect(await ensureBusyboxImage(docker, tags[0])).toBe(true);
      await runsAShell(tags[0]);
      expect(await ensureBusyboxImage(docker, tags[0])).toBe(false);
    });

    test('scripts/make-busybox-image.sh builds the same for users', async () => {
      const { stdout } = await promisify(execFile)(
        path.join(__dirname, '..', 'scripts', 'make-busybox-image.sh'),
        [tags[1]],
      );
      expect(stdout).toBe(`built ${tags[1]}\n`);
      await runsAShell(tags[1]);
    });
  });

  test('the busybox image is there, and building it again is a no-op', async () => {
    expect(await hasImage(docker, BUSYBOX_IMAGE)).toBe(true);
    expect(await ensureBusyboxImage(docker)).toBe(false);
  });

  describe('one image sandbox', () => {
    let sandbox: Sandbox;
    beforeAll(async () => {
      sandbox = await createSandbox(args());
    });
    afterAll(async () => {
      await sandbox?.destroy();
    });

    test('has its own labelled network and container', async () => {
      expect(await ours({ sample: sandbox.owner.sampleId })).toEqual({
        containers: 1,
        networks: 1,
      });
      const [container] = await docker.listContainers({
        filters: JSON.stringify({
          label: [`steward.sample=${sandbox.owner.sampleId}`, `steward.eval_set=${evalSet}`],
        }),
      });
      expect(container.Labels).toMatchObject({
        'steward.managed': 'true',
        'steward.eval_set': evalSet,
        'steward.task': 'lifecycle',
        'steward.sample': String(sandbox.owner.sampleId),
        'steward.epoch': '1',
        'steward.service': 'default',
      });
      expect(Object.keys(container.NetworkSettings.Networks)).toEqual([sandbox.project]);
    });

    test('exec separates stdout and stderr and returns the exit code', async () => {
      expect(await sandbox.exec(['sh', '-c', 'echo out; echo err >&2; exit 3'])).toEqual({
        exitCode: 3,
        stdout: 'out\n',
        stderr: 'err\n',
        truncated: false,
        timedOut: false,
      });
    });

    test('exec feeds stdin and closes it', async () => {
      const result = await sandbox.exec(['sh', '-c', 'cat; echo done'], {
        stdin: 'line one\nline two\n',
      });
      expect(result.stdout).toBe('line one\nline two\ndone\n');
      expect(result.exitCode).toBe(0);
    });

    test('exec honours user, cwd and env', async () => {
      const result = await sandbox.exec(['sh', '-c', 'id -u; pwd; echo $GREETING'], {
        user: 'nobody',
        cwd: '/tmp',
        env: { GREETING: 'hi there' },
      });
      expect(result.stdout).toBe('65534\n/tmp\nhi there\n');
    });

    test('a command that cannot start is a result, not a throw', async () => {
      const result = await sandbox.exec(['no-such-command']);
      expect(result.exitCode).not.toBe(0);
      expect(result.timedOut).toBe(false);
    });

    test('a timeout kills the command and its children', async () => {
      const started = Date.now();
      const result = await sandbox.exec(['sh', '-c', 'sleep 300 & sleep 301; echo never'], {
        timeoutMs: 500,
      });
      expect(result.timedOut).toBe(true);
      expect(result.stdout).toBe('');
      expect(Date.now() - started).toBeLessThan(5_000);
      const ps = await sandbox.exec(['ps', '-o', 'args']);
      expect(ps.stdout).not.toMatch(/sleep 30[01]/);
    });

    test('output past the limit is dropped and flagged', async () => {
      const result = await sandbox.exec(['sh', '-c', 'yes | head -c 100000; echo tail >&2'], {
        maxOutputBytes: 1000,
      });
      expect(result.stdout).toBe('y\n'.repeat(500));
      expect(result.stderr).toBe('tail\n');
      expect(result.truncated).toBe(true);
      expect(result.exitCode).toBe(0);
    });

    test('large output arrives whole, across many frames', async () => {
      const result = await sandbox.exec(['sh', '-c', "head -c 3000000 /dev/zero | tr '\\0' a"]);
      expect(result.stdout.length).toBe(3_000_000);
      expect(result.stdout).toMatch(/^a+$/);
      expect(result.truncated).toBe(false);
    });

    test('writeFile creates parent directories; readFile reads it back', async () => {
      const content = 'héllo, wörld\nsecond line\n';
      await sandbox.writeFile('/work/deep/nested/notes.txt', content);
      expect(await sandbox.readFile('/work/deep/nested/notes.txt')).toBe(content);
      expect((await sandbox.exec(['cat', '/work/deep/nested/notes.txt'])).stdout).toBe(content);
    });

    test('writeFile replaces a file; binary content survives', async () => {
      await sandbox.writeFile('/tmp/data.bin', Buffer.from([0x00, 0xff, 0x10]));
      await sandbox.writeFile('/tmp/data.bin', 'second');
      expect(await sandbox.readFile('/tmp/data.bin')).toBe('second');
    });

    test('relative paths resolve against the working directory; symlinks are followed', async () => {
      await sandbox.writeFile('relative.txt', 'at the root');
      expect((await sandbox.exec(['cat', '/relative.txt'])).stdout).toBe('at the root');
      await sandbox.exec(['ln', '-s', '/relative.txt', '/tmp/link']);
      expect(await sandbox.readFile('/tmp/link')).toBe('at the root');
    });

    test('reading a missing file or a directory fails clearly', async () => {
      await expect(sandbox.readFile('/nope.txt')).rejects.toThrow(
        'sandbox: no such file: /nope.txt',
      );
      await expect(sandbox.readFile('/tmp')).rejects.toThrow('is a directory');
    });

    test('destroy removes container and network, and is idempotent', async () => {
      expect(await sandbox.destroy()).toEqual({ complete: true, errors: [] });
      expect(await ours({ sample: sandbox.owner.sampleId })).toEqual({
        containers: 0,
        networks: 0,
      });
      expect(await sandbox.destroy()).toEqual({ complete: true, errors: [] });
    });
  });

  test('two services share a network and find each other by name', async () => {
    const sandbox = await createSandbox(
      args(await loadSandboxSpec('two-services.yaml', FIXTURES), 'compose'),
    );
    try {
      expect(sandbox.services).toEqual(['agent', 'db']);
      expect(await ours({ sample: sandbox.owner.sampleId })).toEqual({
        containers: 2,
        networks: 1,
      });
      expect((await sandbox.exec(['sh', '-c', 'pwd; echo $ROLE'])).stdout).toBe('/work\nagent\n');
      expect((await sandbox.service('db').exec(['sh', '-c', 'echo $ROLE'])).stdout).toBe('db\n');
      const ping = await sandbox.exec(['ping', '-c', '1', '-W', '3', 'db']);
      expect(ping.exitCode).toBe(0);

      const [agent] = await docker.listContainers({
        filters: JSON.stringify({
          label: [
            `steward.sample=${sandbox.owner.sampleId}`,
            'steward.service=agent',
            `steward.eval_set=${evalSet}`,
          ],
        }),
      });
      const inspected = await docker.getContainer(agent.Id).inspect();
      expect(inspected.HostConfig.Memory).toBe(64 * 1024 * 1024);
      expect(inspected.HostConfig.NanoCpus).toBe(500_000_000);
      expect(() => sandbox.service('web')).toThrow('has no service web (it has agent, db)');
    } finally {
      await sandbox.destroy();
    }
    expect(await ours({ sample: sandbox.owner.sampleId })).toEqual({ containers: 0, networks: 0 });
  });

  test('services with network_mode none get no network at all', async () => {
    const sandbox = await createSandbox(
      args(await loadSandboxSpec('no-network.yaml', FIXTURES), 'offline'),
    );
    try {
      expect(await ours({ sample: sandbox.owner.sampleId })).toEqual({
        containers: 2,
        networks: 0,
      });
      const interfaces = await sandbox.exec(['ls', '/sys/class/net']);
      expect(interfaces.stdout.trim()).toBe('lo');
      expect((await sandbox.service('helper').exec(['id', '-u'])).stdout).toBe('65534\n');
    } finally {
      await sandbox.destroy();
    }
    expect(await ours({ sample: sandbox.owner.sampleId })).toEqual({ containers: 0, networks: 0 });
  });

  test('a default service that exits at once is a config error, and nothing is left behind', async () => {
    const spec: SandboxSpec = {
      services: [{ name: 'default', image: BUSYBOX_IMAGE, command: ['true'] }],
      defaultService: 'default',
    };
    const creation = args(spec, 'exits');
    const error = (await createSandbox(creation).catch((caught: unknown) => caught)) as {
      type?: string;
      message: string;
    };
    expect(error.type).toBe(ErrorType.config);
    expect(error.message).toMatch(/exited right after starting/);
    expect(await ours({ sample: creation.sampleId })).toEqual({ containers: 0, networks: 0 });
  });

  describe('withSandbox', () => {
    test('destroys after fn returns', async () => {
      const creation = args(undefined, 'with');
      const output = await withSandbox(
        creation,
        async (sandbox) => (await sandbox.exec(['echo', 'hi'])).stdout,
      );
      expect(output).toBe('hi\n');
      expect(await ours({ sample: creation.sampleId })).toEqual({ containers: 0, networks: 0 });
    });

    test('destroys when fn throws, and passes the error on', async () => {
      const creation = args(undefined, 'with');
      await expect(
        withSandbox(creation, async () => {
          throw new Error('solver broke');
        }),
      ).rejects.toThrow('solver broke');
      expect(await ours({ sample: creation.sampleId })).toEqual({ containers: 0, networks: 0 });
    });

    test('destroys at once when the signal aborts mid-command', async () => {
      const creation = args(undefined, 'with');
      const controller = new AbortController();
      const started = Date.now();
      const run = withSandbox({ ...creation, signal: controller.signal }, async (sandbox) => {
        setTimeout(() => controller.abort(new Error('sample cancelled')), 300);
        return sandbox.exec(['sleep', '60']);
      });
      await expect(run).rejects.toThrow('sample cancelled');
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(await ours({ sample: creation.sampleId })).toEqual({ containers: 0, networks: 0 });
    });

    test('destroys when the time runs out', async () => {
      const creation = args(undefined, 'with');
      const run = withSandbox({ ...creation, timeoutMs: 1_500 }, (sandbox) =>
        sandbox.exec(['sleep', '60']),
      );
      await expect(run).rejects.toThrow(/timeout|aborted/i);
      expect(await ours({ sample: creation.sampleId })).toEqual({ containers: 0, networks: 0 });
    });

    test('an already aborted signal creates nothing', async () => {
      const creation = args(undefined, 'with');
      const fn = jest.fn();
      await expect(
        withSandbox({ ...creation, signal: AbortSignal.abort(new Error('too late')) }, fn),
      ).rejects.toThrow('too late');
      expect(fn).not.toHaveBeenCalled();
      expect(await ours({ sample: creation.sampleId })).toEqual({ containers: 0, networks: 0 });
    });
  });

  test('reaping after a crash removes exactly the matching sandboxes', async () => {
    // A "crash": sandboxes created and never destroyed by their process.
    await createSandbox(args(undefined, 'crashed'));
    await createSandbox(args(await loadSandboxSpec('two-services.yaml', FIXTURES), 'crashed'));
    const survivor = await createSandbox(args(undefined, 'alive'));
    try {
      expect(await ours({ task: 'crashed' })).toEqual({ containers: 3, networks: 2 });

      expect(await reapSandboxes(docker, { evalSet, task: 'crashed' })).toEqual({
        containers: 3,
        networks: 2,
        errors: [],
      });
      expect(await ours({ task: 'crashed' })).toEqual({ containers: 0, networks: 0 });
      expect(await ours({ task: 'alive' })).toEqual({ containers: 1, networks: 1 });
      expect((await survivor.exec(['true'])).exitCode).toBe(0);
    } finally {
      await survivor.destroy();
    }
    expect(await reapSandboxes(docker, { evalSet })).toEqual({
      containers: 0,
      networks: 0,
      errors: [],
    });
  });

  test('dockerCpuCount reports the daemon CPUs', async () => {
    const info = (await docker.info()) as { NCPU: number };
    expect(await dockerCpuCount(docker)).toBe(info.NCPU);
  });

  test('Docker down is a clear environment error', async () => {
    const down = new Docker({ socketPath: '/tmp/steward-no-such-docker.sock' });
    const error = await createSandbox({ ...args(), docker: down }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(StewardError);
    expect((error as StewardError).exitCode).toBe(ExitCode.environment);
    expect((error as StewardError).message).toMatch(
      /^Docker is not running \(cannot reach \/tmp\/steward-no-such-docker.sock\)/,
    );
    await expect(reapSandboxes(down)).rejects.toThrow(/Docker is not running/);
  });
});

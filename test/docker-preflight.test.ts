import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import Docker from 'dockerode';

import { BUILT_IN_POOLS, capacity, RECOMMENDED_POOLS } from '../src/core/pools';
import { dockerPreflight } from '../src/docker/preflight';
import { detectDockerHost, restartHint, type DockerHostFacts } from '../src/docker/restart-hint';
import { ErrorType, ExitCode, StewardError } from '../src/errors';
import { imageSandboxSpec } from '../src/sandbox/compose';
import { createSandbox } from '../src/sandbox/docker';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../src/sandbox/image';
import { requireDocker } from './fixtures/docker/docker';

describe('detectDockerHost and restartHint', () => {
  const linux: DockerHostFacts = {
    platform: 'linux',
    osRelease: '6.8.0-45-generic',
    env: {},
    hasSystemd: true,
    info: {
      OperatingSystem: 'Ubuntu 24.04.1 LTS',
      SecurityOptions: ['name=apparmor', 'name=seccomp,profile=builtin'],
    },
  };
  const cases: Array<[string, Partial<DockerHostFacts>, string, string | undefined]> = [
    ['Linux with systemd', {}, 'systemd', 'sudo systemctl restart docker'],
    ['Linux without systemd', { hasSystemd: false }, 'sysvinit', 'sudo service docker restart'],
    [
      'rootless Docker',
      {
        info: {
          OperatingSystem: 'Ubuntu 24.04.1 LTS',
          SecurityOptions: ['name=seccomp,profile=builtin', 'name=rootless', 'name=cgroupns'],
        },
      },
      'rootless',
      'systemctl --user restart docker',
    ],
    [
      'Docker Desktop on macOS',
      { platform: 'darwin', info: { OperatingSystem: 'Docker Desktop' } },
      'docker-desktop-mac',
      `osascript -e 'quit app "Docker"' && open -a Docker`,
    ],
    [
      'Docker Desktop on Windows',
      { platform: 'win32', info: { OperatingSystem: 'Docker Desktop' } },
      'docker-desktop-windows',
      undefined,
    ],
    [
      'WSL talking to Docker Desktop',
      {
        osRelease: '5.15.153.1-microsoft-standard-WSL2',
        env: { WSL_DISTRO_NAME: 'Ubuntu' },
        info: { OperatingSystem: 'Docker Desktop' },
      },
      'docker-desktop-windows',
      undefined,
    ],
    [
      'WSL with its own dockerd and systemd',
      { osRelease: '5.15.153.1-microsoft-standard-WSL2', env: { WSL_DISTRO_NAME: 'Ubuntu' } },
      'systemd',
      'sudo systemctl restart docker',
    ],
    [
      'WSL with its own dockerd, no systemd',
      { osRelease: '5.15.153.1-microsoft-standard-WSL2', hasSystemd: false },
      'sysvinit',
      'sudo service docker restart',
    ],
    [
      'Docker Desktop for Linux',
      { info: { OperatingSystem: 'Docker Desktop' } },
      'docker-desktop-linux',
      'systemctl --user restart docker-desktop',
    ],
    [
      'Windows engine as a service',
      { platform: 'win32', info: { OperatingSystem: 'Windows Server 2022 Datacenter' } },
      'windows-service',
      'Restart-Service docker',
    ],
    ['a platform we do not know', { platform: 'freebsd' }, 'unknown', undefined],
  ];
  test.each(cases)('%s', (_name, overrides, kind, command) => {
    const detected = detectDockerHost({ ...linux, ...overrides });
    expect(detected).toBe(kind);
    const hint = restartHint(detected);
    expect(hint.command).toBe(command);
    expect(hint.text).toMatch(/restart/i);
    expect(hint.text).toMatch(/stops every running container/);
  });
});

describe('dockerPreflight', () => {
  test('Docker down is a clear environment error', async () => {
    const docker = new Docker({ socketPath: '/tmp/steward-no-such-docker.sock' });
    const error = await dockerPreflight({ docker, demand: 1 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StewardError);
    expect((error as StewardError).exitCode).toBe(ExitCode.environment);
    expect((error as StewardError).message).toBe(
      'Docker is not running (cannot reach /tmp/steward-no-such-docker.sock): start it and retry',
    );
  });

  describe('against the local daemon', () => {
    let docker: Docker;
    let dir: string;
    beforeAll(async () => {
      docker = await requireDocker();
      dir = await fs.mkdtemp(path.join(os.tmpdir(), 'steward-preflight-'));
    });
    afterAll(async () => {
      await fs.rm(dir, { recursive: true, force: true });
    });

    test('counts the pools in force minus every existing network', async () => {
      const report = await dockerPreflight({
        docker,
        demand: 5,
        daemonJsonPath: path.join(dir, 'none.json'),
      });
      const networks = await docker.listNetworks();
      const bridge = networks.find((network) => network.Name === 'bridge');
      expect(report.usedSubnets).toContain(bridge?.IPAM?.Config?.[0]?.Subnet);
      expect(report.capacity).toBe(capacity(report.pools, report.usedSubnets));
      expect(report.ok).toBe(report.capacity >= 5);
      expect(report.daemonJsonPath).toBe(path.join(dir, 'none.json'));
      if (report.source === 'built-in') expect(report.pools).toEqual(BUILT_IN_POOLS);
    });

    test('pools written to daemon.json but not loaded yet are reported as pending', async () => {
      const file = path.join(dir, 'daemon.json');
      await fs.writeFile(
        file,
        JSON.stringify({ 'default-address-pools': [{ base: '172.17.0.0/12', size: 20 }] }),
      );
      const report = await dockerPreflight({ docker, demand: 1, daemonJsonPath: file });
      // The running daemon lists the pools it loaded; these are not among them.
      expect(report.source).not.toBe('daemon.json');
      expect(report.pending?.pools).toEqual([RECOMMENDED_POOLS[0]]);
    });
  });
});

describe('the daemon running out of address pools', () => {
  const probe = `steward-test-pools-${randomUUID().slice(0, 8)}`;
  let docker: Docker;

  beforeAll(async () => {
    docker = await requireDocker();
    await ensureBusyboxImage(docker);
  });

  afterAll(async () => {
    if (!docker) return;
    const leftovers = await docker.listNetworks({
      filters: JSON.stringify({ label: [`steward.test=${probe}`] }),
    });
    await Promise.all(leftovers.map((network) => docker.getNetwork(network.Id).remove()));
  });

  test('the predicted capacity is where network creation fails, and a sandbox then says why', async () => {
    const report = await dockerPreflight({ docker, demand: 0 });
    // Stay bounded if the daemon has huge pools: this test is about the built-in ~30.
    expect(report.capacity).toBeLessThan(1100);

    let created = 0;
    let refusal: Error | undefined;
    while (!refusal && created <= report.capacity + 2) {
      try {
        await docker.createNetwork({
          Name: `${probe}-${created}`,
          Labels: { 'steward.test': probe },
        });
        created++;
      } catch (error) {
        refusal = error as Error;
      }
    }
    expect(refusal).toBeDefined();
    expect(Math.abs(created - report.capacity)).toBeLessThanOrEqual(1);
    expect(refusal?.message).toMatch(
      /could not find an available, non-overlapping IPv4 address pool among the defaults to assign to the network|all predefined address pools have been fully subnetted/,
    );

    // Every pool is taken now, and the preflight sees it.
    expect((await dockerPreflight({ docker, demand: 1 })).capacity).toBeLessThanOrEqual(1);

    const failure = await createSandbox({
      docker,
      evalSet: probe,
      task: 'pools',
      sampleId: 1,
      epoch: 1,
      spec: imageSandboxSpec(BUSYBOX_IMAGE),
    }).then(
      async (sandbox) => {
        await sandbox.destroy();
        return { type: 'none: the sandbox was created', message: '' };
      },
      (error: unknown) => error as { type?: string; message: string },
    );
    expect(failure.type).toBe(ErrorType.networkPoolExhausted);
    expect(failure.message).toContain('steward docker check');
    const containers = await docker.listContainers({
      all: true,
      filters: JSON.stringify({ label: [`steward.eval_set=${probe}`] }),
    });
    expect(containers).toEqual([]);
  });
});

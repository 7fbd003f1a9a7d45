/**
 * A sample's `files` and `setup` in a real sandbox: a definition on disk whose JSON dataset names
 * files beside it, loaded as `steward launch` loads it, and each sample run by `runSample` in its
 * own busybox sandbox of two services (on the real Docker daemon).
 */
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

import type Docker from 'dockerode';

import type { Sample, SampleContext, Solver, TaskDefinition } from '../src/definition/types';
import { runSample } from '../src/eval/run-sample';
import { prepareSandbox } from '../src/eval/sample-sandbox';
import { loadDefinition } from '../src/loader/definition';
import { createModel } from '../src/models';
import { reapSandboxes } from '../src/sandbox/cleanup';
import { loadSandboxSpec } from '../src/sandbox/compose';
import { withSandbox } from '../src/sandbox/docker';
import { ensureBusyboxImage } from '../src/sandbox/image';
import type { Sandbox } from '../src/sandbox/types';
import { FIXTURES, requireDocker } from './fixtures/docker/docker';

jest.setTimeout(30_000);

const evalSet = `test-sample-sandbox-${randomUUID().slice(0, 8)}`;
let docker: Docker;
let dir: string;

beforeAll(async () => {
  docker = await requireDocker();
  await ensureBusyboxImage(docker);
  dir = await mkdtemp(path.join(tmpdir(), 'steward-sample-sandbox-'));
  await mkdir(path.join(dir, 'assets', 'nested'), { recursive: true });
  await writeFile(path.join(dir, 'assets', 'readme.txt'), 'read me\n');
  await writeFile(path.join(dir, 'assets', 'nested', 'data.bin'), Buffer.from([0, 1, 2, 255]));
  // busybox has no bash: a script says which shell it wants, which Inspect honours too.
  await writeFile(
    path.join(dir, 'setup.sh'),
    '#!/bin/sh\nset -e\ncat /work/in/readme.txt > /work/ready\necho "$(id -u)" >> /work/ready\n',
  );
  await writeFile(
    path.join(dir, 'samples.json'),
    JSON.stringify([
      {
        id: 'ok',
        input: 'Read /work/ready.',
        target: 7,
        files: {
          '/work/in/readme.txt': 'assets/readme.txt',
          '/work/tree': 'assets',
          '/work/inline.txt': 'written as it is',
          'db:/srv/flag': 'data:,db%20only',
        },
        setup: 'setup.sh',
      },
      { id: 'no-bash', input: 'x', setup: 'echo this needs bash' },
    ]),
  );
  await writeFile(
    path.join(dir, 'evalset.yaml'),
    [
      'name: files-and-setup',
      'model: mockllm/model',
      'tasks:',
      '  - name: t',
      '    dataset: samples.json',
      `    sandbox: ${path.join(FIXTURES, 'two-services.yaml')}`,
      '    scorer: match',
    ].join('\n'),
  );
});

afterAll(async () => {
  if (docker) await reapSandboxes(docker, { evalSet });
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Runs `sample` of `task` in a fresh sandbox with a solver that looks around first. */
async function run(task: TaskDefinition, sample: Sample, look: Solver) {
  return withSandbox(
    {
      docker,
      spec: task.sandbox!,
      evalSet,
      task: task.name,
      sampleId: sample.id,
      epoch: 1,
      signal: new AbortController().signal,
    },
    (sandbox, signal) => {
      const ctx: SampleContext = {
        model: createModel('mockllm/model', {}, {}),
        heartbeat: () => undefined,
        signal,
        sandbox,
      };
      return runSample({ ...task, solver: [look, ...task.solver] }, sample, 1, ctx);
    },
  );
}

test('files are in place and setup has run before the first solver', async () => {
  const definition = await loadDefinition(path.join(dir, 'evalset.yaml'));
  const [task] = definition.tasks;
  const seen: Record<string, string> = {};
  const look: Solver = async (state, ctx) => {
    const sandbox = ctx.sandbox!;
    const read = async (service: string, cmd: string) =>
      (await sandbox.service(service).exec(['sh', '-c', cmd])).stdout;
    seen.ready = await read('agent', 'cat /work/ready');
    seen.tree = await read(
      'agent',
      'cd /work/tree && find . -type f | sort && od -An -tu1 nested/data.bin',
    );
    seen.inline = await read('agent', 'cat /work/inline.txt');
    seen.db = await read('db', 'cat /srv/flag');
    seen.notOnAgent = await read('agent', 'test -e /srv/flag && echo there || echo absent');
    seen.scriptsLeft = await read('agent', 'ls /tmp');
    return state;
  };

  const { state, score } = await run(task, task.dataset[0], look);
  expect(seen).toEqual({
    ready: 'read me\n0\n',
    tree: './nested/data.bin\n./readme.txt\n   0   1   2 255\n',
    inline: 'written as it is',
    db: 'db only',
    notOnAgent: 'absent\n',
    scriptsLeft: '',
  });
  expect(state.sample.target).toBe('7');
  expect(score.value).toBeDefined();
});

test('a setup that fails fails the sample, with its output, before any solver', async () => {
  const definition = await loadDefinition(path.join(dir, 'evalset.yaml'));
  const [task] = definition.tasks;
  let solved = false;
  const look: Solver = async (state) => {
    solved = true;
    return state;
  };
  // Without a #! line the script runs with bash, as in Inspect; busybox has none.
  await expect(run(task, task.dataset[1], look)).rejects.toThrow(
    /^the sample's setup script failed \(exit code 127\): .*bash/,
  );
  expect(solved).toBe(false);
});

test('a file for a service the sandbox lacks is refused by name', async () => {
  const spec = await loadSandboxSpec('two-services.yaml', FIXTURES);
  await expect(
    withSandbox(
      {
        docker,
        spec,
        evalSet,
        task: 't',
        sampleId: 'bad-service',
        epoch: 1,
        signal: new AbortController().signal,
      },
      (sandbox: Sandbox) => prepareSandbox({ files: { 'web:/x': 'eA==' } }, sandbox),
    ),
  ).rejects.toThrow(
    `the sample's file "web:/x" names service web, which the sandbox lacks (it has agent, db)`,
  );
});

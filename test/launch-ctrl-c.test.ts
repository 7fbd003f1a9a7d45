/**
 * Ctrl-C of `steward launch` at a terminal asks whether to cancel the eval set. The launch runs
 * under util-linux `script`, which gives it a pseudo-terminal: the Ctrl-C the test types goes
 * through the terminal's line discipline, which sends SIGINT to every process of the foreground
 * process group, as a user's does. Confirmed, the eval set is cancelled on the launch's own fleet
 * (which runs on through the question), nothing of it is left on Docker, and launching again runs
 * exactly what did not complete. Declined, the launch stops as it always did and the eval set
 * stays running.
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import type Docker from 'dockerode';
import { stringify } from 'yaml';
import { reapSandboxes } from '../src/sandbox/cleanup';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../src/sandbox/image';
import { startSimProvider, type SimProvider } from '../src/sim/provider';
import { evalSetWorkflowId } from '../src/workflows/types';
import { leftovers, requireDocker } from './fixtures/docker/docker';
import { REPO_ROOT, STEWARD_BIN, runCli, tempDir, uniqueName } from './helpers/cli';
import { killTree } from './helpers/detached';
import { commandLine, processTree } from './helpers/process-tree';
import { runningOf, waitFor, within } from './helpers/processes';
import { readSampleRecords } from './helpers/results';

let client: Client;
let docker: Docker;
let sim: SimProvider;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  client = new Client({
    connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS }),
    namespace: process.env.TEMPORAL_NAMESPACE,
  });
  docker = await requireDocker();
  await ensureBusyboxImage(docker);
  sim = await startSimProvider({ latencyMs: 20 });
  env = { ...process.env, SIM_BASE_URL: sim.url, SIM_API_KEY: 'sim' };
});

afterAll(async () => {
  await sim?.close();
  await client?.connection.close();
});

const SAMPLES = 6;
/** Samples running at once. */
const SETPOINT = 2;

/** An eval set of one task whose agents each run `sleep` in their sandbox, then submit. */
async function writeSlowSandboxed(prefix: string): Promise<{ name: string; file: string }> {
  const dir = await tempDir();
  const name = uniqueName(prefix);
  const lines = Array.from({ length: SAMPLES }, (_, i) =>
    JSON.stringify({ id: `slow-${i + 1}`, input: 'RUN: sleep 6; echo done', target: 'done' }),
  );
  await fs.writeFile(path.join(dir, 'slow.jsonl'), `${lines.join('\n')}\n`);
  const file = path.join(dir, 'evalset.yaml');
  await fs.writeFile(
    file,
    stringify({
      name,
      model: 'openai-api/sim/agent',
      max_samples: SETPOINT,
      tasks: [
        {
          name: 'slow',
          dataset: 'slow.jsonl',
          sandbox: BUSYBOX_IMAGE,
          solver: [{ agent: { max_turns: 4, command_timeout: 60 } }],
          scorer: 'match',
        },
      ],
    }),
  );
  return { name, file };
}

/** `steward launch` at a terminal: what it prints there, and a keyboard to type on it. */
interface TerminalLaunch {
  pid: number;
  output(): string;
  type(keys: string): void;
  exited: Promise<number | null>;
}

function launchAtTerminal(args: string[]): TerminalLaunch {
  const quoted = [process.execPath, STEWARD_BIN, 'launch', ...args].map((a) => `'${a}'`);
  // -e: script exits with the launch's exit code. `exec`: the launch replaces the shell script
  // runs it with, so no shell sees the Ctrl-C (dash, /bin/sh on Debian, exits 130 on its own
  // after one, whatever the launch then returns).
  const script = spawn('script', ['-q', '-e', '-c', `exec ${quoted.join(' ')}`, '/dev/null'], {
    cwd: REPO_ROOT,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  script.stdout.on('data', (d: Buffer) => (output += d.toString()));
  script.stderr.on('data', (d: Buffer) => (output += d.toString()));
  return {
    pid: script.pid!,
    output: () => output,
    type: (keys) => script.stdin.write(keys),
    exited: new Promise((resolve) => script.on('exit', (code) => resolve(code))),
  };
}

/** The task-worker processes of the launch's fleet. */
function taskWorkers(launch: TerminalLaunch): number[] {
  return processTree([launch.pid]).filter((pid) =>
    commandLine(pid)?.some((arg) => arg.endsWith('task-worker.js')),
  );
}

async function waitForOutput(launch: TerminalLaunch, text: string): Promise<void> {
  await waitFor(`"${text}" at the terminal`, () => launch.output().includes(text) || undefined, {
    timeoutMs: 30_000,
  }).catch((err: Error) => {
    throw new Error(`${err.message}; the terminal showed:\n${launch.output()}`);
  });
}

async function recorded(logDir: string): Promise<number> {
  return readSampleRecords(logDir, 'slow').then(
    (r) => r.length,
    () => 0,
  );
}

/** Ends whatever of eval set `name` a test left running: its workflows, then its sandboxes. */
async function cleanUp(name: string): Promise<void> {
  const open = client.workflow.list({
    query: `ExecutionStatus = 'Running' AND WorkflowId STARTS_WITH '${evalSetWorkflowId(name)}'`,
  });
  for await (const run of open) {
    await client.workflow
      .getHandle(run.workflowId)
      .terminate('test over')
      .catch(() => undefined);
  }
  await reapSandboxes(docker, { evalSet: name });
}

test('Ctrl-C at a terminal, confirmed: the eval set is cancelled, its sandboxes removed, and a relaunch runs the rest', async () => {
  const { name, file } = await writeSlowSandboxed('ctrl-c-yes');
  const logDir = path.join(path.dirname(file), 'logs');
  const launch = launchAtTerminal([file, '--log-dir', logDir]);
  try {
    // Some samples completed, and others hold their sandboxes (a container and a network each).
    await waitFor('a sample recorded and others in their sandboxes', async () =>
      (await recorded(logDir)) >= 1 && (await leftovers(docker, name)).length >= 2
        ? true
        : undefined,
    );
    const workers = taskWorkers(launch);
    expect(workers.length).toBeGreaterThan(0);

    launch.type('\x03');
    await waitForOutput(launch, `Cancel eval set ${name}? Its samples stop`);
    // The terminal's Ctrl-C reached the whole foreground process group; the fleet runs on while
    // the question waits for its answer (its workers would be shutting down by now).
    await sleep(3_000);
    expect(await runningOf(workers)).toEqual(workers);
    launch.type('y\r');
    await waitForOutput(launch, `cancelling eval set ${name}`);

    const code = await within('the launch to end', launch.exited, 60_000);
    // What the terminal showed, should the launch not end as a cancellation does.
    expect({ code, output: launch.output() }).toMatchObject({
      code: 1,
      output: expect.stringContaining(`eval set ${name} was cancelled`),
    });
    expect(launch.output()).not.toContain('internal error');
    expect((await client.workflow.getHandle(evalSetWorkflowId(name)).describe()).status.name).toBe(
      'CANCELLED',
    );
    expect(await leftovers(docker, name)).toEqual([]);

    const kept = await recorded(logDir);
    expect(kept).toBeGreaterThanOrEqual(1);
    expect(kept).toBeLessThan(SAMPLES);
    const again = await runCli(['launch', file, '--log-dir', logDir, '--json'], { env });
    expect(again.stderr).not.toContain('internal error');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).tasks[0]).toMatchObject({ completed: SAMPLES, resumed: kept });
    const records = await readSampleRecords(logDir, 'slow');
    expect(records).toHaveLength(SAMPLES);
    expect(new Set(records.map((r) => r.sample_id)).size).toBe(SAMPLES);
    expect(await leftovers(docker, name)).toEqual([]);
  } finally {
    await killTree(launch.pid);
    await cleanUp(name);
  }
});

test('Ctrl-C at a terminal, declined: the launch stops as before and the eval set stays running', async () => {
  const { name, file } = await writeSlowSandboxed('ctrl-c-no');
  const logDir = path.join(path.dirname(file), 'logs');
  const launch = launchAtTerminal([file, '--log-dir', logDir]);
  try {
    await waitFor('samples in their sandboxes', async () =>
      (await leftovers(docker, name)).length >= 2 ? true : undefined,
    );
    launch.type('\x03');
    await waitForOutput(launch, `Cancel eval set ${name}?`);
    launch.type('n\r');

    expect(await within('the launch to stop', launch.exited, 30_000)).toBe(130);
    expect(launch.output()).toContain('stopped; the eval set keeps everything completed so far');
    expect(launch.output()).not.toContain(`cancelling eval set ${name}`);
    expect((await client.workflow.getHandle(evalSetWorkflowId(name)).describe()).status.name).toBe(
      'RUNNING',
    );
  } finally {
    await killTree(launch.pid);
    await cleanUp(name);
  }
});

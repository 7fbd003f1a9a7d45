/**
 * The progress of `steward launch` as a terminal shows it: the built CLI runs inside tmux at 80
 * and at 160 columns, and the test reads the screen back. Every task's line, and the total's,
 * holds done/total and an ETA once the run has a pace, fits the width, and cuts no field in half.
 * Needs tmux.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { evalSetWorkflowId } from '../src/workflows/types';
import { STEWARD_BIN, tempDir, uniqueName, writeEvalSet } from './helpers/cli';
import { PROGRESS_FIELD, progressFields } from './helpers/progress-fields';
import { waitFor } from './helpers/processes';

const execFileAsync = promisify(execFile);
const TASKS = ['arithmetic', 'capitals'];

let client: Client;

beforeAll(async () => {
  const connection = await openConnection({ address: process.env.TEMPORAL_ADDRESS });
  client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE });
});

afterAll(async () => {
  await client.connection.close();
});

/** A tmux server of the test's own (`-L`), so no user's sessions are touched. */
function tmux(socket: string, ...args: string[]): Promise<string> {
  return execFileAsync('tmux', ['-L', socket, ...args]).then((r) => r.stdout);
}

const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** Runs `steward launch` in a detached tmux window `columns` wide; returns the screen once every line has an ETA. */
async function launchInTmux(columns: number): Promise<string[]> {
  const dir = await tempDir('steward-tmux-');
  const name = uniqueName('tmux');
  // A steady pace of 4 samples a second per task for about a minute.
  const file = await writeEvalSet(
    dir,
    name,
    TASKS.map((task) => ({ name: task, samples: 200, latencyMs: 1_000 })),
    { max_samples: 4 },
  );
  const socket = `steward-test-${name}`;
  const env = ['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE']
    .map((v) => `${v}=${quote(process.env[v] ?? '')}`)
    .concat(`STEWARD_HOME=${quote(dir)}`);
  // The window stays after the launch exits, so a failed launch leaves its words on the screen.
  const command = `env ${env.join(' ')} ${quote(process.execPath)} ${quote(STEWARD_BIN)} launch ${quote(file)} --log-dir ${quote(path.join(dir, 'logs'))}; sleep 600`;
  await tmux(socket, 'new-session', '-d', '-x', String(columns), '-y', '20', '-s', 'run', command);
  try {
    let screen: string[] = [];
    return await waitFor(
      `an ETA on every line at ${columns} columns`,
      async () => {
        screen = (await tmux(socket, 'capture-pane', '-p', '-t', 'run')).split('\n');
        const lines = progressLines(screen);
        return lines.length === TASKS.length + 1 && lines.every((l) => /\| ETA \d/.test(l))
          ? screen
          : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 1_000 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}; the screen:\n${screen.join('\n')}`);
    });
  } finally {
    await tmux(socket, 'kill-server').catch(() => undefined);
    await client.workflow
      .getHandle(evalSetWorkflowId(name))
      .terminate('test over')
      .catch(() => undefined);
  }
}

/** The screen's progress lines: a task's or the total's. */
function progressLines(screen: string[]): string[] {
  return screen.filter((l) => [...TASKS, 'total'].some((n) => l.startsWith(`${n} `)));
}

function expectWholeFields(screen: string[], columns: number): string[] {
  const lines = progressLines(screen);
  expect(lines.map((l) => l.split(' ')[0])).toEqual([...TASKS, 'total']);
  for (const line of lines) {
    expect(line.length).toBeLessThan(columns);
    const fields = progressFields(line);
    expect(fields[0]).toMatch(/^\d+\/\d+$/);
    expect(fields[1]).toMatch(/^ETA \d/);
    for (const field of fields) expect(field).toMatch(PROGRESS_FIELD);
  }
  return lines;
}

test('at 80 columns each line holds done/total, ETA, rate, in flight/setpoint and errors, whole', async () => {
  const screen = await launchInTmux(80);
  console.log(`tmux at 80 columns:\n${screen.join('\n')}`);
  const lines = expectWholeFields(screen, 80);
  for (const line of lines) {
    expect(line).toMatch(/\| [\d.]+\/min/);
    expect(line).toMatch(/\| in flight \d+\/\d+/);
    expect(line).toMatch(/\| errors \d+/);
  }
  expect(lines[2]).toMatch(/^total +\d+\/400 /);
});

test('at 160 columns each line spells out every field, with a bar', async () => {
  const screen = await launchInTmux(160);
  console.log(`tmux at 160 columns:\n${screen.join('\n')}`);
  const lines = expectWholeFields(screen, 160);
  for (const line of lines) {
    expect(line).toMatch(/^\S+ +\[[█░]+\] /);
    for (const field of [
      /\| [\d.]+ samples\/min/,
      /\| in flight \d+ +\| setpoint \d+/,
      /\| errors \d+/,
      /\| 429 episodes \d+/,
      /\| elapsed \d/,
    ])
      expect(line).toMatch(field);
  }
});

/** Runs the built `steward` CLI as a user would, and makes throwaway eval sets on disk. */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { stringify } from 'yaml';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
export const STEWARD_BIN = path.join(REPO_ROOT, 'bin', 'steward.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  return runCommand(process.execPath, [STEWARD_BIN, ...args], options);
}

export function runCommand(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? REPO_ROOT,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timeoutMs = options.timeoutMs ?? 540_000;
    const timer = setTimeout(() => {
      // Said where a failing test prints: a killed run is no exit code, only null.
      stderr += `\n[runCommand: still running after ${timeoutMs} ms; killed]\n`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Fails with the command's stderr unless it exited `code`: a wrong exit says why at once. */
export function expectExit(result: CliResult, code: number): void {
  if (result.code !== code) {
    throw new Error(`steward exited ${result.code}, expected ${code}; stderr:\n${result.stderr}`);
  }
}

export async function tempDir(prefix = 'steward-test-'): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), prefix));
}

/** A unique eval set name, so tests never see each other's workflows. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export interface GeneratedTask {
  name: string;
  samples: number;
  latencyMs?: number;
  jitterMs?: number;
  epochs?: number;
}

/** Writes an eval set of mockllm tasks whose answers are all correct; returns the yaml's path. */
export async function writeEvalSet(
  dir: string,
  name: string,
  tasks: GeneratedTask[],
  settings: Record<string, unknown> = {},
): Promise<string> {
  for (const task of tasks) {
    const lines = Array.from({ length: task.samples }, (_, i) =>
      JSON.stringify({
        id: `${task.name}-${i + 1}`,
        input: `What is ${i} + 1?`,
        target: String(i + 1),
      }),
    );
    await fs.writeFile(path.join(dir, `${task.name}.jsonl`), `${lines.join('\n')}\n`);
  }
  const definition = {
    name,
    ...settings,
    tasks: tasks.map((t) => ({
      name: t.name,
      dataset: `${t.name}.jsonl`,
      solver: ['generate'],
      scorer: 'match',
      epochs: t.epochs ?? 1,
      model: 'mockllm/model',
      model_args: {
        outputs: ['{target}'],
        latency_ms: t.latencyMs ?? 0,
        jitter_ms: t.jitterMs ?? 0,
      },
    })),
  };
  const file = path.join(dir, 'evalset.yaml');
  await fs.writeFile(file, stringify(definition));
  return file;
}

/**
 * Running a command in a container through the Engine API (`docker exec` without the CLI):
 * demultiplexed stdout/stderr with a byte cap, optional stdin, and a timeout that really kills.
 */

import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';

import type Docker from 'dockerode';

import type { ExecOptions, ExecResult } from './types';

/** Bytes kept per output stream when the caller sets no cap (Inspect AI's limit). */
export const DEFAULT_MAX_OUTPUT_BYTES = 10 * 1024 * 1024;

/** How long to wait for a killed command's stream to close before abandoning it. */
const KILL_GRACE_MS = 2_000;

/** Each exec carries this variable so a timeout can find its processes (and their children). */
const MARKER_VARIABLE = 'STEWARD_EXEC_ID';

/**
 * Runs `cmd` in `container` and collects its result. A non-zero exit is a result, not an error;
 * errors are Docker's (container gone, daemon down).
 */
export async function execInContainer(
  container: Docker.Container,
  cmd: string[],
  options: ExecOptions = {},
): Promise<ExecResult> {
  const marker = randomUUID();
  const env = Object.entries(options.env ?? {}).map(([key, value]) => `${key}=${value}`);
  const withStdin = options.stdin !== undefined;
  const exec = await container.exec({
    Cmd: cmd,
    AttachStdin: withStdin,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    Env: [...env, `${MARKER_VARIABLE}=${marker}`],
    ...(options.user !== undefined && { User: options.user }),
    ...(options.cwd !== undefined && { WorkingDir: options.cwd }),
  });
  const stream = (await exec.start({ hijack: true, stdin: withStdin })) as Duplex;

  const max = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const stdout = new CappedOutput(max);
  const stderr = new CappedOutput(max);
  const demux = new FrameDemuxer((kind, chunk) => (kind === 2 ? stderr : stdout).push(chunk));
  stream.on('data', (chunk: Buffer) => demux.push(chunk));
  const ended = new Promise<void>((resolve) => {
    stream.once('end', resolve);
    stream.once('close', resolve);
    // A broken stream ends the output; the exit code below still says what happened.
    stream.once('error', () => resolve());
  });
  if (withStdin) stream.end(options.stdin);

  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const expired = new Promise<'expired' | 'aborted'>((resolve) => {
    if (options.timeoutMs !== undefined) {
      timer = setTimeout(() => resolve('expired'), options.timeoutMs);
    }
    onAbort = () => resolve('aborted');
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
  });
  const outcome = await Promise.race([ended.then(() => 'ended' as const), expired]);
  clearTimeout(timer);
  if (onAbort) options.signal?.removeEventListener('abort', onAbort);
  if (outcome !== 'ended') {
    await killMarked(container, marker, options.user).catch(() => undefined);
    await Promise.race([ended, delay(KILL_GRACE_MS)]);
    stream.destroy();
    if (outcome === 'aborted') throw options.signal?.reason as Error;
    timedOut = true;
  }

  const state = await exec.inspect().catch(() => undefined);
  const exitCode =
    state && !state.Running && typeof state.ExitCode === 'number' ? state.ExitCode : null;
  return {
    exitCode,
    stdout: stdout.text(),
    stderr: stderr.text(),
    truncated: stdout.truncated || stderr.truncated,
    timedOut,
  };
}

/**
 * Kills every process in the container whose environment carries `marker`: the timed-out command
 * and the children it started. The Engine API has no way to kill an exec, and its PID is the
 * host's, so this runs inside the container, as the same user (reading another user's
 * `/proc/<pid>/environ` needs a capability containers do not have). Needs `sh` and `cat`.
 */
async function killMarked(
  container: Docker.Container,
  marker: string,
  user: string | undefined,
): Promise<void> {
  const script =
    `for p in /proc/[0-9]*; do ` +
    `case "$(cat "$p/environ" 2>/dev/null)" in *${MARKER_VARIABLE}=${marker}*) kill -9 "\${p#/proc/}" 2>/dev/null;; esac; ` +
    `done; true`;
  const exec = await container.exec({
    Cmd: ['sh', '-c', script],
    AttachStdout: true,
    AttachStderr: true,
    ...(user !== undefined && { User: user }),
  });
  const stream = (await exec.start({ hijack: true, stdin: false })) as Duplex;
  stream.resume();
  await Promise.race([
    new Promise((resolve) => {
      stream.once('end', resolve);
      stream.once('close', resolve);
      stream.once('error', resolve);
    }),
    delay(KILL_GRACE_MS),
  ]);
  stream.destroy();
}

/**
 * Splits Docker's multiplexed exec stream: frames of an 8-byte header (stream kind, 3 zero bytes,
 * big-endian length) and a payload. Chunks from the socket cut frames anywhere.
 */
export class FrameDemuxer {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly emit: (kind: number, payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= 8) {
      const size = this.pending.readUInt32BE(4);
      if (this.pending.length < 8 + size) break;
      this.emit(this.pending[0], this.pending.subarray(8, 8 + size));
      this.pending = this.pending.subarray(8 + size);
    }
  }
}

/** Keeps the first `max` bytes of a stream and notes whether more came. */
class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  truncated = false;

  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    const room = this.max - this.size;
    if (chunk.length > room) this.truncated = true;
    if (room <= 0) return;
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    // Copy, so a small slice does not pin the whole socket chunk in memory.
    this.chunks.push(Buffer.from(kept));
    this.size += kept.length;
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

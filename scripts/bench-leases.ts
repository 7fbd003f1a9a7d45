/**
 * The cost of a model call's slot: one acquire from the host's controller over the lease socket
 * (the supervisor in another process, as in a run) against the same controller in-process.
 * Prints p50/p99 of acquire time, sequential calls, after a warm-up.
 *
 *   npm run bench:leases
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FixedConnections, type CallSlots } from '../src/core/controller';
import { thisWorker } from '../src/activities/deps';
import { AccountHost, type AccountRef } from '../src/models/account-host';
import { LeaseClient } from '../src/workers/lease-client';
import { serveLeases } from '../src/workers/lease-server';

const CALLS = 20_000;
const WARMUP = 2_000;
const ACCOUNT: AccountRef = {
  key: 'bench',
  label: 'bench',
  keyHash: '',
  connections: { type: 'fixed', n: 1_000 },
};

async function measure(slots: CallSlots): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < WARMUP + CALLS; i++) {
    const start = process.hrtime.bigint();
    const release = await slots.acquire();
    const elapsed = Number(process.hrtime.bigint() - start) / 1_000;
    release({ kind: 'success' });
    if (i >= WARMUP) times.push(elapsed);
  }
  return times.sort((a, b) => a - b);
}

function line(name: string, times: number[]): string {
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
  return `${name.padEnd(34)} p50 ${at(0.5).toFixed(1).padStart(6)} µs   p99 ${at(0.99)
    .toFixed(1)
    .padStart(6)} µs   max ${times[times.length - 1].toFixed(0).padStart(6)} µs`;
}

async function serve(socketPath: string): Promise<void> {
  const host = new AccountHost({ now: Date.now, owner: thisWorker() });
  await serveLeases(host, socketPath);
  console.log('listening');
}

async function main(): Promise<void> {
  if (process.argv[2] === 'serve') return serve(process.argv[3]);
  const local = await measure(new FixedConnections(1_000, { now: Date.now }));
  const socketPath = path.join(mkdtempSync(path.join(os.tmpdir(), 'steward-bench-')), 'a.sock');
  const server = spawn(process.execPath, [...process.execArgv, __filename, 'serve', socketPath], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve) => server.stdout.once('data', () => resolve()));
  const client = new LeaseClient(socketPath);
  const leased = await measure(client.slots(ACCOUNT, { evalSetId: 'bench', tasks: ['t'] }));
  client.close();
  server.kill();
  console.log(`${CALLS} sequential acquires, ${WARMUP} warm-up, on ${os.cpus().length} cores`);
  console.log(line('in-process controller (baseline)', local));
  console.log(line('lease over Unix socket', leased));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

/**
 * Call-slot leases over a real Unix socket: worker processes take their model calls' slots from
 * the host's one controller of the account, and a worker that dies or hangs gives them back.
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import * as path from 'node:path';
import { thisWorker } from '../src/activities/deps';
import { AccountHost, type AccountRef } from '../src/models/account-host';
import { LeaseClient } from '../src/workers/lease-client';
import { serveLeases, type LeaseServer } from '../src/workers/lease-server';
import { tempDir } from './helpers/cli';

const ACCOUNT: AccountRef = {
  key: 'openai-api\u0000http://sim\u0000abc\u0000openai-api/sim/m',
  label: 'openai-api/sim/m at http://sim',
  keyHash: 'abc',
  connections: { type: 'adaptive', min: 10, start: 20, max: 100 },
};
const USER = { evalSetId: 'steward-e', tasks: ['t'] };
const DIST_CLIENT = path.join(__dirname, '..', 'dist', 'workers', 'lease-client.js');

async function until(predicate: () => boolean, timeoutMs: number): Promise<number> {
  const start = Date.now();
  while (!predicate()) {
    if (Date.now() - start > timeoutMs) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - start;
}

describe('call-slot leases over a Unix socket', () => {
  let host: AccountHost;
  let server: LeaseServer;
  const clients: LeaseClient[] = [];

  async function start(ttlMs?: number): Promise<void> {
    host = new AccountHost({ now: Date.now, owner: thisWorker() });
    const socket = path.join(await tempDir(), 'a.sock');
    server = await serveLeases(host, socket, ttlMs === undefined ? {} : { ttlMs });
  }

  function client(): LeaseClient {
    const c = new LeaseClient(server.socketPath);
    clients.push(c);
    return c;
  }

  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    await server.close();
  });

  test('two processes share the one limit of 20; a release admits the next caller', async () => {
    await start();
    const a = client().slots(ACCOUNT, USER);
    const b = client().slots(ACCOUNT, USER);
    const held = await Promise.all([
      ...Array.from({ length: 12 }, () => a.acquire()),
      ...Array.from({ length: 8 }, () => b.acquire()),
    ]);
    let granted = false;
    const next = b.acquire().then((r) => ((granted = true), r));
    await until(() => server.leases().waiting === 1, 5_000);
    expect(granted).toBe(false);
    held[0]({ kind: 'success' });
    const release = await next;
    expect(host.snapshot()[0]).toMatchObject({
      limit: 20,
      inFlight: 20,
      users: { 'steward-e': ['t'] },
    });
    release({ kind: 'success' });
    for (const r of held.slice(1)) r({ kind: 'success' });
    await until(() => host.snapshot()[0].inFlight === 0, 5_000);
  });

  test("one process serving a slot's tasks names each call's task, as they come", async () => {
    await start();
    const c = client();
    const first = await c.slots(ACCOUNT, USER).acquire();
    expect(host.snapshot()[0].users).toEqual({ 'steward-e': ['t'] });
    // A task assigned to the same slot later, and another eval set's task on the same account.
    const second = await c.slots(ACCOUNT, { evalSetId: 'steward-e', tasks: ['u'] }).acquire();
    const third = await c.slots(ACCOUNT, { evalSetId: 'steward-f', tasks: ['t'] }).acquire();
    expect(host.snapshot()[0]).toMatchObject({
      inFlight: 3,
      users: { 'steward-e': ['t', 'u'], 'steward-f': ['t'] },
    });
    for (const release of [first, second, third]) release({ kind: 'success' });
    expect(host.drain('steward-e').map((r) => r.tasks)).toEqual([['t', 'u']]);
  });

  test("a worker's rate limit cuts the host's controller, and its retries are counted there", async () => {
    await start();
    const c = client();
    const release = await c.slots(ACCOUNT, USER).acquire();
    c.retried(ACCOUNT.key);
    release({ kind: 'rateLimit', retryAfterMs: 1_000 });
    await until(() => host.snapshot()[0].cuts === 1, 5_000);
    expect(host.snapshot()[0].limit).toBe(15);
    const [report] = host.drain(USER.evalSetId);
    expect(report).toMatchObject({ tasks: ['t'], rateLimitEpisodes: 1, cuts: 1, retries: 1 });
  });

  test('an aborted wait leaves the queue without taking a slot', async () => {
    await start();
    const slots = client().slots(ACCOUNT, USER);
    const held = await Promise.all(Array.from({ length: 20 }, () => slots.acquire()));
    const abort = new AbortController();
    const waiting = slots.acquire(abort.signal);
    await until(() => server.leases().waiting === 1, 5_000);
    abort.abort(new Error('sample cancelled'));
    await expect(waiting).rejects.toThrow('sample cancelled');
    await until(() => server.leases().waiting === 0, 5_000);
    for (const r of held) r({ kind: 'success' });
    await until(() => host.snapshot()[0].inFlight === 0, 5_000);
    expect(server.leases().held).toBe(0);
  });

  test('SIGKILL of a worker holding slots gives them back at once', async () => {
    await start();
    const script = `
      const { LeaseClient } = require(${JSON.stringify(DIST_CLIENT)});
      const c = new LeaseClient(${JSON.stringify(server.socketPath)}, ${JSON.stringify(USER)});
      const slots = c.slots(${JSON.stringify(ACCOUNT)});
      Promise.all(Array.from({ length: 15 }, () => slots.acquire())).then(() => console.log('held'));
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => child.stdout.on('data', () => resolve()));
    expect(host.snapshot()[0].inFlight).toBe(15);
    child.kill('SIGKILL');
    const ms = await until(() => host.snapshot()[0].inFlight === 0, 10_000);
    expect(ms).toBeLessThan(10_000);
    expect(server.leases()).toEqual({ held: 0, waiting: 0, connections: 0 });
    // Given back as neutral outcomes: no cut, no episode.
    expect(host.snapshot()[0]).toMatchObject({ limit: 20, cuts: 0, rateLimitEpisodes: 0 });
  });

  test('a hung worker that stops renewing loses its slots after the lease TTL', async () => {
    await start(300);
    const socket = connect(server.socketPath);
    const send = (m: unknown) => socket.write(`${JSON.stringify(m)}\n`);
    send({ t: 'hello', pid: 1, user: USER });
    send({ t: 'account', n: 0, account: ACCOUNT });
    for (let id = 0; id < 5; id++) send({ t: 'acquire', id, n: 0 });
    await until(() => host.snapshot()[0]?.inFlight === 5, 5_000);
    // It never renews: the slots come back within the TTL and a sweep.
    const ms = await until(() => host.snapshot()[0].inFlight === 0, 5_000);
    expect(ms).toBeLessThan(2_000);
    socket.destroy();
  });

  test('a live client holding a slot longer than the TTL keeps it (it renews)', async () => {
    await start(3_000);
    const release = await client().slots(ACCOUNT, USER).acquire();
    await new Promise((r) => setTimeout(r, 5_000));
    expect(host.snapshot()[0].inFlight).toBe(1);
    release({ kind: 'success' });
    await until(() => host.snapshot()[0].inFlight === 0, 5_000);
  });

  test('bad messages are ignored, not fatal', async () => {
    await start();
    const socket = connect(server.socketPath);
    socket.write('not json\n{"t":"acquire","id":1,"n":9}\n{"t":"account","n":0,"account":{}}\n');
    const reply = await new Promise<string>((resolve) =>
      socket.once('data', (d) => resolve(String(d))),
    );
    expect(JSON.parse(reply)).toEqual({ t: 'refuse', id: 1, error: 'unknown account 9' });
    socket.destroy();
    const release = await client().slots(ACCOUNT, USER).acquire();
    release({ kind: 'success' });
  });
});

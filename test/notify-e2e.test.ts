/**
 * Notifications end to end, through the CLI on the dev server: an eval set launched with three
 * webhooks — a JSON one and a Slack one (named by `${NAME}`, its token only in the launch's
 * environment) on a local receiver that refuses the first attempts with 500, and one on a closed
 * port — tells the receiver of a ramp hold placed with `steward ramp hold`, of a task whose
 * samples hang past three tends (once), and of its end, each delivered after retries; the dead
 * webhook changes nothing in the run, and the token is in no history, status or output. On a
 * dev server of its own whose continue-as-new suggestion is low, so the eval set hands over
 * mid-run with its notifications on.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import {
  evalSetWorkflowId,
  statusQuery,
  type EvalSetResult,
  type EvalSetStatus,
} from '../src/workflows/types';
import { runCli, tempDir, uniqueName, writeEvalSet } from './helpers/cli';
import { encodeHistory, fetchHistory, runsOfEvalSet } from './helpers/histories';
import { replayAllRuns } from './helpers/replay';
import { startOwnDevServer, type OwnDevServer } from './helpers/server';
import { freePort } from './setup/global-setup';

/** Attempts refused with 500 on each path before the receiver accepts. */
const REFUSED_ATTEMPTS = 2;

interface Received {
  path: string;
  body: Record<string, unknown>;
  status: number;
}

/** Events after which the server suggests continue-as-new: the eval set hands over mid-run. */
const SUGGEST_CONTINUE_AS_NEW = 100;

let temporal: OwnDevServer;
let client: Client;
let server: http.Server;
let base: string;
const received: Received[] = [];

beforeAll(async () => {
  temporal = await startOwnDevServer(await tempDir('steward-notify-'), {
    'limit.historyCount.suggestContinueAsNew': SUGGEST_CONTINUE_AS_NEW,
  });
  client = temporal.client;
  const attempts = new Map<string, number>();
  server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => {
      const at = req.url ?? '';
      const n = (attempts.get(at) ?? 0) + 1;
      attempts.set(at, n);
      const status = n <= REFUSED_ATTEMPTS ? 500 : 200;
      received.push({ path: at, body: JSON.parse(text) as Record<string, unknown>, status });
      res.writeHead(status).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.close();
  await temporal?.close();
});

test('hold, stall and finish reach the webhooks after retries; a dead one changes nothing', async () => {
  const token = `tok-${randomUUID()}`;
  const slackPath = `/services/T0/B0/${token}`;
  const deadPort = await freePort();
  const name = uniqueName('notify');
  const dir = await tempDir();
  const logDir = path.join(dir, 'logs');
  const tasks = [
    { name: 'quick', samples: 20, latencyMs: 100 },
    // Its two samples answer after 12 s: no completion for the first several 1 s tends, even
    // with the tends lost to hand-overs (each waits up to 2 s for the dead webhook's delivery).
    { name: 'slow', samples: 2, latencyMs: 12_000 },
  ];
  const file = await writeEvalSet(dir, name, tasks, {
    tend_interval: 1,
    max_samples: 5,
    notify: [
      `${base}/json`,
      { url: '${NOTIFY_E2E_SLACK}', format: 'slack' },
      `http://127.0.0.1:${deadPort}/dead`,
    ],
  });
  const env = { ...temporal.env, NOTIFY_E2E_SLACK: `${base}${slackPath}` };
  const done = runCli(['launch', file, '--json', '--log-dir', logDir], { env, timeoutMs: 60_000 });

  const handle = client.workflow.getHandle(evalSetWorkflowId(name));
  for (;;) {
    const status = await handle.query(statusQuery).catch(() => undefined);
    if (status?.tasks.some((t) => t.state === 'running')) break;
    await sleep(200);
  }
  const hold = await runCli(
    ['ramp', 'hold', '--reason', 'checking the provider', '--eval-set', name],
    { env },
  );
  expect(hold.code).toBe(0);
  const status = await runCli(['status', name, '--json'], { env });
  expect(status.code).toBe(0);
  // Each webhook by its scheme and host, or its variable's name.
  expect((JSON.parse(status.stdout) as EvalSetStatus).settings?.notify).toEqual([
    { url: `${base}/…`, format: 'json' },
    { url: '${NOTIFY_E2E_SLACK}', format: 'slack' },
    { url: `http://127.0.0.1:${deadPort}/…`, format: 'json' },
  ]);

  const result = await done;
  if (result.code !== 0) throw new Error(`launch ended with ${result.code}\n${result.stderr}`);
  const summary = JSON.parse(result.stdout) as EvalSetResult;
  expect(summary.status).toBe('success');
  expect(summary.tasks.map((t) => [t.name, t.completed, t.errored])).toEqual([
    ['quick', 20, 0],
    ['slow', 2, 0],
  ]);

  for (const [at, slack] of [
    ['/json', false],
    [slackPath, true],
  ] as const) {
    const mine = received.filter((r) => r.path === at);
    // The first delivery was refused twice and then accepted: retries happened.
    expect(mine.slice(0, REFUSED_ATTEMPTS + 1).map((r) => r.status)).toEqual([500, 500, 200]);
    const accepted = mine.filter((r) => r.status === 200).map((r) => r.body);
    if (slack) {
      const texts = accepted.map((b) => b.text as string);
      for (const body of accepted) {
        expect(body).toEqual({
          text: expect.any(String),
          blocks: [{ type: 'section', text: { type: 'mrkdwn', text: body.text } }],
        });
      }
      expect(texts.filter((t) => t.startsWith(':pause_button: Ramp hold placed'))).toEqual([
        expect.stringContaining(`all tasks of eval set *${name}*: checking the provider (by `),
      ]);
      expect(texts.filter((t) => t.startsWith(':hourglass: Task *slow*'))).toHaveLength(1);
      expect(texts.filter((t) => t.startsWith(':white_check_mark: Eval set'))).toEqual([
        `:white_check_mark: Eval set *${name}* finished: 22/22 samples completed, 0 errored\n` +
          '• quick: 20/20 completed, 0 errored\n• slow: 2/2 completed, 0 errored',
      ]);
    } else {
      const kinds = accepted.map((b) => b.kind);
      expect(kinds.filter((k) => k === 'hold')).toHaveLength(1);
      expect(accepted.filter((b) => b.kind === 'stalled')).toEqual([
        expect.objectContaining({ task: 'slow', windows: 3, in_flight: 2, completed: 0 }),
      ]);
      expect(kinds.at(-1)).toBe('finished');
      expect(accepted.at(-1)).toMatchObject({
        eval_set: name,
        status: 'success',
        tasks: [
          { name: 'quick', samples: 20, completed: 20, errored: 0 },
          { name: 'slow', samples: 2, completed: 2, errored: 0 },
        ],
      });
    }
  }

  // The Slack hook's token was in the launch's environment only; the JSON hook's literal URL,
  // in the workflow's input, shows the scan would have found it.
  const histories = await Promise.all(
    (await runsOfEvalSet(client, name)).map(async (run) =>
      Buffer.from(encodeHistory(await fetchHistory(client, run))),
    ),
  );
  expect(histories.some((h) => h.includes(`${base}/json`))).toBe(true);
  for (const history of histories) expect(history.includes(token)).toBe(false);
  for (const text of [result.stdout, result.stderr, status.stdout, hold.stdout]) {
    expect(text).not.toContain(token);
  }
  // The eval set continued-as-new during the run (the stall watch's count went with it, so the
  // stall was told once), and every run replays.
  expect(await replayAllRuns(client, [evalSetWorkflowId(name)])).toBeGreaterThan(1);
});

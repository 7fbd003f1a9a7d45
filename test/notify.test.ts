/**
 * Notifications, the pure parts and one delivery: the `notify` setting (never echoing a URL
 * whole), which events the eval set decides (stalls across tend windows, told once per stall;
 * ramp-history kinds), the bodies a webhook gets, and the `notify` activity against a local HTTP
 * receiver. The whole run is test/notify-e2e.test.ts.
 */
import { once } from 'node:events';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createNotifyActivities, jsonBody, slackBody } from '../src/activities/notify';
import { chooseSettings, withDefaults } from '../src/config/settings';
import { describeUrl, parseNotifyText, showNotify } from '../src/config/notify';
import { validateDefinition } from '../src/config/validate';
import { formatIssue } from '../src/errors';
import {
  NOTIFY_HISTORY_KINDS,
  STALL_WINDOWS,
  StallWatch,
  finishedEvent,
  historyEvents,
  type NotifyEvent,
} from '../src/workflows/notify';
import type { RampHistoryEntry } from '../src/workflows/types';
import { freePort } from './setup/global-setup';

const TOKEN = 'T0001/B0002/sEcReTtOkEn123';
const SLACK = `https://hooks.slack.com/services/${TOKEN}`;

describe('the notify setting', () => {
  test('takes one URL, or a list of URLs and {url, format}', () => {
    expect(chooseSettings({ stewardYaml: { notify: 'https://a.example/h' } }).settings).toEqual({
      notify: [{ url: 'https://a.example/h', format: 'json' }],
    });
    const list = ['https://a.example/h', { url: SLACK, format: 'slack' }, { url: '${HOOK}' }];
    expect(withDefaults(chooseSettings({ stewardYaml: { notify: list } }).settings).notify).toEqual(
      [
        { url: 'https://a.example/h', format: 'json' },
        { url: SLACK, format: 'slack' },
        { url: '${HOOK}', format: 'json' },
      ],
    );
    expect(withDefaults({}).notify).toBeUndefined();
  });

  test('as text: comma-separated, "slack:" for a Slack body', () => {
    expect(parseNotifyText(`https://a.example/h, slack:${SLACK}`)).toEqual({
      value: [
        { url: 'https://a.example/h', format: 'json' },
        { url: SLACK, format: 'slack' },
      ],
    });
    const env = { STEWARD_NOTIFY: 'slack:${SLACK_HOOK}' };
    expect(chooseSettings({ env }).settings.notify).toEqual([
      { url: '${SLACK_HOOK}', format: 'slack' },
    ]);
  });

  test('a bad value is refused without showing the URL whole', () => {
    const bad = `htps://hooks.slack.com/services/${TOKEN}`;
    const errors = [
      ...chooseSettings({ env: { STEWARD_NOTIFY: `slack:${bad}` } }).errors,
      ...chooseSettings({ stewardYaml: { notify: [{ url: bad, format: 'teams' }] } }).errors,
      ...chooseSettings({ input: { notify: [] } }).errors,
      ...validateDefinition(
        {
          name: 'n',
          model: 'mockllm/model',
          tasks: [{ name: 't', dataset: [{ input: 'q', target: 'a' }], scorer: 'match' }],
          notify: `${SLACK} extra`,
        },
        { file: 'evalset.yaml' },
      ).errors,
    ].map(formatIssue);
    expect(errors).toEqual([
      expect.stringMatching(/^STEWARD_NOTIFY: expected an http\(s\):\/\/ URL/),
      expect.stringMatching(/notify\.0\.url: expected an http\(s\):\/\/ URL.*\("\(not a URL\)"\)/),
      expect.stringMatching(/notify\.0\.format: expected "json" or "slack" \("teams"\)/),
      expect.stringMatching(/settings\.notify: expected at least one webhook/),
      expect.stringMatching(/notify: expected an http\(s\):\/\/ URL/),
    ]);
    for (const error of errors) expect(error).not.toContain('sEcReT');
  });

  test('is shown by scheme and host only', () => {
    expect(describeUrl(SLACK)).toBe('https://hooks.slack.com/…');
    expect(describeUrl('http://user:pw@127.0.0.1:8080/x?k=v')).toBe('http://127.0.0.1:8080/…');
    expect(describeUrl('${SLACK_HOOK}')).toBe('${SLACK_HOOK}');
    const shown = showNotify({ maxTasks: 1, notify: [{ url: SLACK, format: 'slack' as const }] });
    expect(shown).toEqual({
      maxTasks: 1,
      notify: [{ url: 'https://hooks.slack.com/…', format: 'slack' }],
    });
  });
});

const ctx = (now: number) => ({ evalSet: 'hello', now });
const running = (completed: number, in_flight: number, errored = 0) => ({
  name: 'a',
  state: 'running' as const,
  samples: 100,
  completed,
  errored,
  in_flight,
});

describe('stalls: no completion for STALL_WINDOWS tend windows while samples are in flight', () => {
  /** The tends at which the watch tells a stall, for a task seen at each tend as given. */
  function stallsAt(tends: ReturnType<typeof running>[], windows = STALL_WINDOWS): number[] {
    const watch = new StallWatch(windows);
    return tends.flatMap((task, i) =>
      watch.observe([task], ctx(i * 1000)).map((event) => {
        expect(event).toMatchObject({ kind: 'stalled', task: 'a', eval_set: 'hello' });
        return i;
      }),
    );
  }

  test.each([
    ['progress at every tend: never', [0, 1, 2, 3, 4, 5].map((n) => running(n, 5)), []],
    ['stuck from the first tend: after 3 quiet windows, once', Array(8).fill(running(4, 5)), [3]],
    [
      'recovers, then stalls again: told again',
      [...Array(5).fill(running(4, 5)), running(5, 5), ...Array(4).fill(running(5, 5))],
      [3, 8],
    ],
    ['nothing in flight is waiting, not stalled', Array(8).fill(running(4, 0)), []],
    [
      'an idle window neither counts nor ends a stall',
      [running(4, 5), running(4, 5), running(4, 0), running(4, 5), running(4, 5), running(4, 5)],
      [4],
    ],
    ['an errored sample is progress', [0, 1, 2, 3, 4, 5].map((n) => running(0, 5, n)), []],
  ])('%s', (_name, tends, expected) => {
    expect(stallsAt(tends)).toEqual(expected);
  });

  test('the event says how long and how far', () => {
    const watch = new StallWatch(2);
    watch.observe([running(7, 3, 1)], ctx(Date.UTC(2026, 0, 1)));
    watch.observe([running(7, 3, 1)], ctx(Date.UTC(2026, 0, 1, 0, 1)));
    expect(watch.observe([running(7, 3, 1)], ctx(Date.UTC(2026, 0, 1, 0, 2)))).toEqual([
      {
        kind: 'stalled',
        eval_set: 'hello',
        time: '2026-01-01T00:02:00.000Z',
        task: 'a',
        windows: 2,
        in_flight: 3,
        completed: 7,
        errored: 1,
        samples: 100,
        since: '2026-01-01T00:00:00.000Z',
      },
    ]);
  });

  test('the count survives continue-as-new: a stall told before is not told again', () => {
    const first = new StallWatch();
    const tends = [0, 1, 2, 3].map((i) => first.observe([running(4, 5)], ctx(i)));
    expect(tends.map((events) => events.length)).toEqual([0, 0, 0, 1]);
    const mid = new StallWatch();
    mid.observe([running(4, 5)], ctx(0));
    mid.observe([running(4, 5)], ctx(1));
    // Carried as the workflow input is: JSON.
    const after = (w: StallWatch) =>
      new StallWatch(STALL_WINDOWS, JSON.parse(JSON.stringify(w.save())) as never);
    expect(after(first).observe([running(4, 5)], ctx(4))).toEqual([]);
    const next = after(mid);
    expect(next.observe([running(4, 5)], ctx(2))).toEqual([]);
    expect(next.observe([running(4, 5)], ctx(3))).toHaveLength(1);
  });

  test('a task that ended is forgotten; one not observed at a tend keeps its count', () => {
    const watch = new StallWatch(2);
    const b = { ...running(0, 1), name: 'b' };
    watch.observe([running(1, 1), b], ctx(0));
    watch.observe([running(1, 1)], ctx(1)); // b's observation failed this tend
    watch.observe([running(1, 1), { ...running(1, 1), state: 'done' }, b], ctx(2));
    expect([...watch.tasks.keys()]).toEqual(['b']);
    expect(watch.tasks.get('b')?.quiet).toBe(1);
  });
});

describe('ramp-history events', () => {
  const entry = (kind: string, extra: Partial<RampHistoryEntry> = {}): RampHistoryEntry =>
    ({
      time: '2026-01-01T00:00:00.000Z',
      task: '*',
      kind,
      from: null,
      to: null,
      reason: 'r',
      ...extra,
    }) as RampHistoryEntry;

  test('holds, pauses and resumes are events; other kinds are not', () => {
    expect(NOTIFY_HISTORY_KINDS).toEqual(['hold', 'pause', 'unpause']);
    const entries = ['setpoint', 'hold', 'resume', 'pause', 'refused', 'unpause', 'stuck'].map(
      (kind) => entry(kind, { by: 'alice@host' }),
    );
    expect(historyEvents(entries, ctx(0))).toEqual(
      ['hold', 'pause', 'unpause'].map((kind) => ({
        kind,
        eval_set: 'hello',
        time: '2026-01-01T00:00:00.000Z',
        task: '*',
        reason: 'r',
        by: 'alice@host',
      })),
    );
  });
});

describe('bodies', () => {
  const finished = finishedEvent(
    {
      status: 'error',
      tasks: [
        { name: 'a', samples: 10, completed: 10, errored: 0 },
        { name: 'b<x>', samples: 5, completed: 3, errored: 2 },
      ],
    },
    ctx(0),
  );

  test('JSON: the event, and its text', () => {
    expect(jsonBody(finished)).toEqual({
      ...finished,
      text:
        'Eval set hello finished with errors: 13/15 samples completed, 2 errored\n' +
        '• a: 10/10 completed, 0 errored\n' +
        '• b<x>: 3/5 completed, 2 errored',
    });
  });

  test('Slack: text and one mrkdwn section, names bold, control characters escaped', () => {
    const text =
      ':white_check_mark: Eval set *hello* finished with errors: 13/15 samples completed, 2 errored\n' +
      '• a: 10/10 completed, 0 errored\n' +
      '• b&lt;x&gt;: 3/5 completed, 2 errored';
    expect(slackBody(finished)).toEqual({
      text,
      blocks: [{ type: 'section', text: { type: 'mrkdwn', text } }],
    });
  });

  test.each<[NotifyEvent, string]>([
    [
      { kind: 'hold', eval_set: 'e', time: 't', task: '*', reason: 'too hot', by: 'al@h' },
      ':pause_button: Ramp hold placed on all tasks of eval set *e*: too hot (by al@h)',
    ],
    [
      { kind: 'failed', eval_set: 'e', time: 't', task: 'a', message: 'boom' },
      ':x: Eval set *e* failed (task *a*): boom',
    ],
    [
      {
        kind: 'stalled',
        eval_set: 'e',
        time: 't',
        task: 'a',
        windows: 3,
        in_flight: 4,
        completed: 5,
        errored: 1,
        samples: 10,
        since: 's',
      },
      ':hourglass: Task *a* of eval set *e* stalled: no sample completed in 3 tends (since s) with 4 in flight (6/10 done)',
    ],
    [
      { kind: 'unpause', eval_set: 'e', time: 't', task: '*', reason: '' },
      ':arrow_forward: Eval set *e* resumed',
    ],
  ])('Slack text of %j', (event, text) => {
    expect(slackBody(event).text).toBe(text);
  });
});

describe('the notify activity', () => {
  let server: http.Server;
  let base: string;
  const got: { path: string; body: unknown }[] = [];
  const statusFor: Record<string, number> = { '/ok': 200, '/down': 503, '/gone': 404 };

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let text = '';
      req.on('data', (d: Buffer) => (text += d.toString()));
      req.on('end', () => {
        const path = (req.url ?? '').split('?')[0];
        got.push({ path, body: JSON.parse(text) });
        res.writeHead(statusFor[path] ?? 500).end();
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => void server.close());

  const event = finishedEvent({ status: 'success', tasks: [] }, ctx(0));
  const deliver = (url: string, format: 'json' | 'slack', env: NodeJS.ProcessEnv = {}) =>
    new MockActivityEnvironment().run(createNotifyActivities({ env, timeoutMs: 2_000 }).notify, {
      target: { url, format },
      event,
    });

  test('POSTs the JSON body; a ${NAME} URL is read from the environment', async () => {
    await deliver('${HOOK}', 'slack', { HOOK: `${base}/ok` });
    expect(got.at(-1)).toEqual({ path: '/ok', body: slackBody(event) });
    await deliver(`${base}/ok`, 'json');
    expect(got.at(-1)).toEqual({ path: '/ok', body: jsonBody(event) });
  });

  test.each([
    ['a 5xx is retried', '/down', { nonRetryable: false, message: 'HTTP 503' }],
    ['a 404 is not', '/gone', { nonRetryable: true, message: 'HTTP 404' }],
  ])('%s, and the failure names the host only', async (_name, path, expected) => {
    const error = await deliver(`${base}${path}?token=sEcReT`, 'json').catch((e: Error) => e);
    expect(error).toMatchObject({
      type: 'StewardNotifyFailed',
      nonRetryable: expected.nonRetryable,
      message: `webhook ${base}/…: ${expected.message}`,
    });
  });

  test('a closed port and an unset variable fail without the URL', async () => {
    const port = await freePort();
    await expect(deliver(`http://127.0.0.1:${port}/sEcReT`, 'json')).rejects.toMatchObject({
      nonRetryable: false,
      message: `webhook http://127.0.0.1:${port}/…: ECONNREFUSED`,
    });
    await expect(deliver('${NO_SUCH_HOOK}', 'json')).rejects.toMatchObject({
      nonRetryable: true,
      message: expect.stringContaining('NO_SUCH_HOOK is not set'),
    });
  });
});

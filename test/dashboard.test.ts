/**
 * `steward dashboard` and `steward plot`, end to end: a real eval set of two tasks on one
 * simulated provider account (the real `openai` client over HTTP, rate limits included), on the
 * dev server, tended every second. Headless Chromium loads the dashboard, sees each tend as it
 * comes, and, once the workers are gone (the numbers then hold still), shows every task's
 * numbers as `steward status --json` gives them. Then `steward plot` draws the same charts to
 * SVG and PNG.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { startSimProvider, type SimProvider } from '../src/sim/provider';
import type { TendRecord } from '../src/workflows/tend-record';
import { evalSetWorkflowId, statusQuery, taskWorkflowId } from '../src/workflows/types';
import { REPO_ROOT, STEWARD_BIN, runCli, tempDir, uniqueName } from './helpers/cli';
import { killTree } from './helpers/detached';
import { replayAllRuns } from './helpers/replay';

const CHROMIUM = process.env.STEWARD_CHROMIUM ?? '/usr/bin/chromium';
const BROWSER = path.join(__dirname, 'helpers', 'dashboard-browser.mts');
const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts');
const TASKS = ['arithmetic', 'capitals'];
const SAMPLES = 60;

jest.setTimeout(120_000);

/** What test/helpers/dashboard-browser.mts reports the page shows. */
interface Shown {
  tasks: Record<string, Record<string, string>>;
  accounts: Record<string, Record<string, string>>;
  hosts: Record<string, Record<string, string>>;
  tends: number;
  drawn: number;
  readAt: string;
  workers: string;
  lines: number;
  rects: number;
  historyRows: number;
  text: string;
  errors: string[];
}

let client: Client;
let provider: SimProvider;
const children: ChildProcess[] = [];

beforeAll(async () => {
  client = new Client({
    connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS! }),
    namespace: process.env.TEMPORAL_NAMESPACE,
  });
  // Six calls at once for two tasks that climb to eight each: the provider pushes back.
  provider = await startSimProvider({ latencyMs: 800, jitterMs: 100, concurrency: 6 });
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await provider?.close();
  await client?.connection.close();
});

/** Starts `args` in the background, stdout piped, stderr kept for the failure message. */
function start(command: string, args: string[], env: NodeJS.ProcessEnv, cwd = REPO_ROOT) {
  const child = spawn(command, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const { value, done } = await lines.next();
    if (done) throw new Error(`${path.basename(args[0])} ${args[1]} ended: ${stderr}`);
    return value as string;
  };
  return { child, next, stderr: () => stderr };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 60_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

test('the dashboard follows a live run tend by tend and shows what status --json says; plot draws it', async () => {
  const dir = await tempDir('steward-dashboard-');
  const name = uniqueName('dashboard');
  const lines = Array.from({ length: SAMPLES }, (_, i) =>
    JSON.stringify({ id: i + 1, input: `ANSWER: ${i}`, target: String(i) }),
  );
  await fs.writeFile(path.join(dir, 'data.jsonl'), `${lines.join('\n')}\n`);
  const tasks = TASKS.flatMap((task) => [
    `  - name: ${task}`,
    '    dataset: data.jsonl',
    '    solver: [generate]',
    '    scorer: match',
    '    model: openai-api/sim/shared',
  ]);
  const file = path.join(dir, 'evalset.yaml');
  await fs.writeFile(file, [`name: ${name}`, 'tasks:', ...tasks, ''].join('\n'));
  const logDir = path.join(dir, 'logs');
  const env = { ...process.env, SIM_BASE_URL: provider.url, SIM_API_KEY: 'sk-dashboard-test' };
  const launch = start(
    process.execPath,
    [STEWARD_BIN, 'launch', file, '--json', '--log-dir', logDir].concat([
      '--tend-interval',
      '1',
      '--samples-ramp',
      '2,8',
    ]),
    env,
    dir,
  );
  const id = evalSetWorkflowId(name);
  try {
    await until('the tasks to run', async () => {
      const s = await client.workflow
        .getHandle(id)
        .query(statusQuery)
        .catch(() => undefined);
      return s?.tasks.every((t) => t.state === 'running') ? true : undefined;
    });

    const dashboard = start(process.execPath, [STEWARD_BIN, 'dashboard', name, '--port', '0'], env);
    const url = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(await dashboard.next())?.[1];
    expect(url).toBeDefined();
    const tsx = path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
    const browser = start(tsx, [BROWSER, JSON.stringify({ chromium: CHROMIUM, url })], env);
    const step = async (command: string): Promise<Shown> => {
      browser.child.stdin!.write(`${command}\n`);
      return JSON.parse(await browser.next()) as Shown;
    };

    // Live: a tend, then the next one, each drawn as it comes.
    const first = await step('first');
    expect(Object.keys(first.tasks).sort()).toEqual(TASKS);
    const next = await step('next-tend');
    expect(next.tends).toBeGreaterThan(first.tends);
    // Per task: setpoint, in flight and connection ceiling over time.
    expect(next.lines).toBeGreaterThanOrEqual(TASKS.length * 3);
    expect(next.rects).toBeGreaterThan(0);
    // The ramp's moves with their reasons, and the account the tasks share.
    const moved = await step('moved');
    expect(moved.text).toMatch(/Ramp history[^]*(setpoint|connections)/);
    expect(Object.keys(moved.accounts)).toHaveLength(1);
    // This host's memory, as its supervisor reports it: its worker processes, what they hold.
    const [host] = Object.values(moved.hosts);
    expect(Object.keys(moved.hosts)).toHaveLength(1);
    expect(Number(host.processes)).toBeGreaterThanOrEqual(1);
    expect(Number(host.fleet_resident_bytes)).toBeGreaterThan(100 * 1024 ** 2);
    expect(Number(host.lowest_headroom_share)).toBeGreaterThan(0);
    expect(Number(host.headroom_bytes)).toBeGreaterThan(0);
    expect(moved.errors).toEqual([]);
    await fs.mkdir(ARTIFACTS, { recursive: true });
    await step(`screenshot ${path.join(ARTIFACTS, 'dashboard.png')}`);

    // The workers gone, nothing moves: the page and `steward status --json` read the same run.
    await killTree(launch.child.pid!);
    // Both wait out the status query's timeout: side by side.
    const [still, asked] = await Promise.all([
      step('workers-away'),
      runCli(['status', name, '--json'], { env }),
    ]);
    expect(still.text).toContain('workers not answering: numbers as recorded at');
    const status = JSON.parse(asked.stdout) as {
      workers: string;
      tasks: Record<string, number | string | null>[];
      accounts?: { account: string }[];
    };
    expect(status.workers).toBe('not answering');
    expect(status.tasks.map((t) => t.name).sort()).toEqual(TASKS);
    for (const t of status.tasks) {
      const cells = still.tasks[t.name as string];
      for (const field of [
        'errored',
        'in_flight',
        'setpoint',
        'connection_limit',
        'rate_limit_episodes',
      ]) {
        expect({ task: t.name, field, value: cells[field] }).toEqual({
          task: t.name,
          field,
          value: String(t[field]),
        });
      }
      expect(cells.done).toBe(String(t.completed));
      expect(still.text).toContain(`${t.completed}/${t.samples}`);
    }
    // Recorded status has no accounts: the page shows what status shows.
    expect(Object.keys(still.accounts)).toEqual((status.accounts ?? []).map((a) => a.account));

    // What the page drew came from the log dir: one tend record a line, each task in each.
    const tends = (await fs.readFile(path.join(logDir, 'tend.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as TendRecord);
    expect(tends.length).toBeGreaterThanOrEqual(still.tends);
    expect(
      tends
        .at(-1)!
        .tasks.map((t) => t.task)
        .sort(),
    ).toEqual(TASKS);
    expect(tends.at(-1)!.accounts.map((a) => a.account)).toEqual(Object.keys(moved.accounts));
    expect(tends.some((r) => r.tasks.some((t) => t.setpoint > 2))).toBe(true);
    browser.child.stdin!.end('quit\n');
    dashboard.child.kill('SIGINT');

    // The same charts as files, of the eval set once it has ended.
    await client.workflow.getHandle(id).terminate('the dashboard test is done with it');
    const svgFile = path.join(dir, 'run.svg');
    const pngFile = path.join(dir, 'run.png');
    const plots = await Promise.all(
      [svgFile, pngFile].map((out) => runCli(['plot', name, '-o', out], { env })),
    );
    for (const plotted of plots) {
      expect(plotted).toMatchObject({ code: 0, stderr: '' });
      expect(plotted.stdout).toContain(`${TASKS.length} tasks`);
    }
    const svg = await fs.readFile(svgFile, 'utf8');
    expect(svg).toMatch(/^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    expect(svg.trimEnd()).toMatch(/<\/svg>$/);
    expect(svg.match(/class="mark-line role-mark/g)?.length).toBeGreaterThanOrEqual(TASKS.length);
    expect(svg).toContain('class="mark-rect role-mark');
    for (const task of TASKS) expect(svg).toContain(`${task}: concurrency`);
    const png = await fs.readFile(pngFile);
    expect(png.subarray(0, 8)).toEqual(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]));
    expect(png.readUInt32BE(16)).toBeGreaterThan(500); // IHDR width
    expect(png.readUInt32BE(20)).toBeGreaterThan(500); // IHDR height

    // The eval set's history, tend records and all, replays on today's workflow code.
    expect(await replayAllRuns(client, [id])).toBeGreaterThanOrEqual(1);
  } finally {
    await killTree(launch.child.pid!).catch(() => undefined);
    const ids = [id, ...TASKS.map((t) => taskWorkflowId(id, t))];
    await Promise.all(
      ids.map((w) =>
        client.workflow
          .getHandle(w)
          .terminate('test over')
          .catch(() => undefined),
      ),
    );
  }
});

/**
 * API keys live only in the environment of the worker processes: never in workflow histories
 * (readable in Temporal's UI), the log directory, the worker logs, the Temporal server's
 * database, or a sandbox's environment.
 *
 * One eval set runs through the CLI with a long random key in `SIM_API_KEY`, `OPENAI_API_KEY` and
 * `ANTHROPIC_API_KEY`, against a simulated provider that accepts that key alone: a sandboxed
 * agent task whose agent and scorer dump their sandbox's environment into the records, a plain
 * task on `openai/<model>` that continues-as-new, and a plain task on `anthropic/<model>`; each
 * plain task has one sample the provider refuses (a failure path).
 * Then every history of every run, every file the run wrote and every sandbox seen during the run
 * is scanned for the key, as text, hex and base64. The scanner is checked first on planted keys,
 * and on a canary that passes through the same server.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { temporal } from '@temporalio/proto';
import type Docker from 'dockerode';
import { stringify } from 'yaml';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../src/sandbox/image';
import { startSimProvider, type SimProvider } from '../src/sim/provider';
import { anthropicError } from '../src/sim/messages';
import { defaultScript, openAiError, type SimScript } from '../src/sim/script';
import { throwawayDevConfig } from '../src/temporal/config';
import { ensureDevServer, stopDevServer } from '../src/temporal/devserver';
import { requireDocker } from './fixtures/docker/docker';
import { REPO_ROOT, STEWARD_BIN, tempDir, uniqueName, type CliResult } from './helpers/cli';
import {
  encodeHistory,
  fetchHistory,
  historyJson,
  mapLimited,
  runsOfEvalSet,
  samplesRunBy,
  type WorkflowRun,
} from './helpers/histories';
import { readSampleRecords } from './helpers/results';
import { freePort } from './setup/global-setup';

const SECRET = `sk-steward-test-${randomUUID()}`;
const SANDBOXED = 6;
const PLAIN = 300;
const ANTHROPIC = 20;
/** The one plain sample the provider refuses with a 400, so a failure crosses every layer too. */
const REFUSED = 'REFUSE-THIS-SAMPLE';
/** The same on Anthropic's API, in its words. */
const REFUSED_ANTHROPIC = 'REFUSE-THIS-ANTHROPIC-SAMPLE';
/** Set by the sandbox's definition: the environment a sandbox should have. */
const SANDBOX_VARIABLE = 'STEWARD_TEST_GREETING';

/** A byte string that would betray a secret, and what it is. */
interface Betrayal {
  form: string;
  bytes: Buffer;
}

/**
 * What to look for: the secret itself, its hex, and its base64 at each of the three alignments it
 * can take inside a longer base64 text (payloads appear base64-encoded in JSON histories). Of each
 * base64 text only the characters made of the secret's bytes alone are kept; the others depend on
 * the bytes around it.
 */
function betrayals(secret: string): Betrayal[] {
  const raw = Buffer.from(secret);
  const forms: Betrayal[] = [
    { form: 'text', bytes: raw },
    { form: 'hex', bytes: Buffer.from(raw.toString('hex')) },
  ];
  for (let shift = 0; shift < 3; shift++) {
    const encoded = Buffer.concat([Buffer.alloc(shift), raw]).toString('base64');
    const start = Math.ceil((shift * 4) / 3);
    const end = Math.floor((shift + raw.length) / 3) * 4;
    forms.push({ form: `base64+${shift}`, bytes: Buffer.from(encoded.slice(start, end)) });
  }
  return forms;
}

/** The forms of `forms` found in `haystack`. */
function scan(haystack: Buffer | Uint8Array | string, forms: Betrayal[]): string[] {
  const buffer =
    typeof haystack === 'string'
      ? Buffer.from(haystack)
      : Buffer.from(haystack.buffer, haystack.byteOffset, haystack.byteLength);
  return forms.filter(({ bytes }) => buffer.includes(bytes)).map(({ form }) => form);
}

/** Every file under `dir`, recursively. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

/** Where in `files` any form of the secret appears, as `file: forms`. */
async function scanFiles(files: string[], forms: Betrayal[]): Promise<string[]> {
  const hits: string[] = [];
  for (const file of files) {
    const found = scan(await fs.readFile(file), forms);
    if (found.length > 0) hits.push(`${file}: ${found.join(', ')}`);
  }
  return hits;
}

/** Where in a run's history any form appears: in its protobuf bytes, or in its JSON. */
function scanHistory(history: temporal.api.history.v1.IHistory, forms: Betrayal[]): string[] {
  return [
    ...scan(encodeHistory(history), forms).map((form) => `protobuf: ${form}`),
    ...scan(historyJson(history), forms).map((form) => `json: ${form}`),
  ];
}

const FORMS = betrayals(SECRET);

describe('the scanner', () => {
  test('finds the secret in every form it looks for, and nothing in a near miss', () => {
    const noise = (n: number) => Buffer.from(randomUUID().repeat(4)).subarray(0, n);
    for (let shift = 0; shift < 3; shift++) {
      const blob = Buffer.concat([noise(10 + shift), Buffer.from(SECRET), noise(7)]);
      expect(scan(`{"data":"${blob.toString('base64')}"}`, FORMS)).toEqual([
        `base64+${(10 + shift) % 3}`,
      ]);
      expect(scan(blob.toString('hex'), FORMS)).toEqual(['hex']);
      expect(scan(blob, FORMS)).toEqual(['text']);
    }
    expect(scan(`${SECRET.slice(0, -1)}#`, FORMS)).toEqual([]);
  });

  test('finds a secret in a history payload, both in its protobuf bytes and in its JSON', () => {
    const history: temporal.api.history.v1.IHistory = {
      events: [
        {
          eventType: temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
          workflowExecutionStartedEventAttributes: {
            input: {
              payloads: [
                {
                  metadata: { encoding: Buffer.from('json/plain') },
                  data: Buffer.from(JSON.stringify({ note: 'x', key: SECRET })),
                },
              ],
            },
          },
        },
      ],
    };
    expect(scanHistory(history, FORMS)).toEqual([
      'protobuf: text',
      expect.stringMatching(/^json: base64\+\d$/),
    ]);
  });
});

describe('an eval set run with an API key in the environment', () => {
  let stewardDir: string;
  let client: Client;
  let docker: Docker;
  let sim: SimProvider;
  let name: string;
  let logDir: string;
  let result: CliResult;
  /** `docker inspect` of every container of the run seen while it ran. */
  let sandboxes: string[];
  let runs: WorkflowRun[];

  beforeAll(async () => {
    docker = await requireDocker();
    await ensureBusyboxImage(docker);
    // A server of our own: its database and log are part of what is scanned, and a low
    // continue-as-new suggestion makes the plain task hand over to new runs.
    stewardDir = await tempDir('steward-secrets-home-');
    const { address, namespace } = await ensureDevServer(
      throwawayDevConfig(stewardDir, await freePort(), {
        'limit.historyCount.suggestContinueAsNew': 250,
      }),
      { stewardDir },
    );
    client = new Client({ connection: await openConnection({ address }), namespace });
    sim = await startSimProvider({ apiKey: SECRET, latencyMs: 300, script: refusing });

    const dir = await tempDir();
    name = uniqueName('secrets');
    logDir = path.join(dir, 'logs');
    const file = await writeEvalSet(dir, name);
    const env = {
      ...process.env,
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      STEWARD_HOME: stewardDir,
      SIM_BASE_URL: sim.url,
      SIM_API_KEY: SECRET,
      OPENAI_BASE_URL: sim.url,
      OPENAI_API_KEY: SECRET,
      ANTHROPIC_BASE_URL: sim.anthropicUrl,
      ANTHROPIC_API_KEY: SECRET,
    };
    const watching = { done: false };
    const cli = launch(file, logDir, env);
    void cli.then(() => (watching.done = true));
    sandboxes = await watchSandboxes(docker, name, watching);
    result = await cli;
    runs = await runsOfEvalSet(client, name);
  });

  afterAll(async () => {
    await sim?.close();
    await client?.connection.close();
    if (stewardDir) await stopDevServer(stewardDir);
  });

  test('completes every sample but the refused one, each model call made with the key', () => {
    expect(result.stderr).not.toContain('internal error');
    expect(result.code).toBe(1);
    const summary = JSON.parse(result.stdout);
    expect(summary.tasks).toEqual([
      expect.objectContaining({ name: 'sandboxed', completed: SANDBOXED, errored: 0 }),
      expect.objectContaining({ name: 'plain', completed: PLAIN, errored: 1 }),
      expect.objectContaining({ name: 'anthropic', completed: ANTHROPIC, errored: 1 }),
    ]);
    // The provider accepts this key alone: no 401 means every call carried it.
    expect(sim.stats().by_status).toEqual({
      '200': 2 * SANDBOXED + PLAIN + ANTHROPIC,
      '400': 2,
    });
  });

  test('the records hold the sandboxes’ environments, as the agent and the scorer saw them', async () => {
    const records = await readSampleRecords(logDir, 'sandboxed');
    expect(records).toHaveLength(SANDBOXED);
    for (const record of records) {
      expect(record.output).toMatch(new RegExp(`^${SANDBOX_VARIABLE}=hello$`, 'm'));
      expect(record.score.explanation).toMatch(/^exit code 0: .*^ANSWER=/ms);
    }
  });

  test('no sandbox had the key in its configuration', () => {
    // Containers live for a few seconds each; the watcher saw them.
    expect(sandboxes.length).toBeGreaterThanOrEqual(SANDBOXED);
    for (const inspect of sandboxes) expect(inspect).toContain(`"${SANDBOX_VARIABLE}=hello"`);
    expect(sandboxes.flatMap((inspect) => scan(inspect, FORMS))).toEqual([]);
  });

  test('no workflow history of the run holds the key, continued-as-new runs included', async () => {
    const byType = (type: string) => runs.filter((run) => run.type === type);
    // The eval set may hand over too on a slow machine (more tends, more events): every run counts.
    const evalSetRuns = byType('evalSet').length;
    expect(evalSetRuns).toBeGreaterThanOrEqual(1);
    const plainRuns = byType('evalTask').filter((run) => run.workflowId.endsWith('/plain'));
    expect(
      plainRuns.filter((run) => run.status === 'CONTINUED_AS_NEW').length,
    ).toBeGreaterThanOrEqual(1);
    const anthropicRuns = byType('evalTask').filter((run) => run.workflowId.endsWith('/anthropic'));
    expect(anthropicRuns.length).toBeGreaterThanOrEqual(1);
    expect(byType('evalTask')).toHaveLength(plainRuns.length + anthropicRuns.length + 1);
    // Every sample ran in a sample workflow (sandbox-free ones admitted together share one).
    const sampleRuns = byType('sampleWorkflow');
    expect((await samplesRunBy(client, sampleRuns)).flat()).toHaveLength(
      SANDBOXED + PLAIN + 1 + ANTHROPIC + 1,
    );
    expect(runs).toHaveLength(evalSetRuns + byType('evalTask').length + sampleRuns.length);

    const hits = await mapLimited(runs, 8, async (run) => {
      const history = await fetchHistory(client, run);
      expect(history.events?.length).toBeGreaterThan(0);
      return scanHistory(history, FORMS).map((hit) => `${run.workflowId} (${run.runId}) ${hit}`);
    });
    expect(hits.flat()).toEqual([]);
  });

  test('a canary in a workflow input is found in its history and in the server’s database', async () => {
    // Proof that the scans below would see a key that reached Temporal: a value passed as a
    // workflow input shows in the fetched history and in the server's files.
    const canary = `canary-${randomUUID()}`;
    const handle = await client.workflow.start('stewardSecretsCanary', {
      workflowId: canary,
      taskQueue: canary,
      args: [{ note: canary }],
    });
    try {
      const forms = betrayals(canary);
      const found = scanHistory(
        await fetchHistory(client, { workflowId: canary, runId: handle.firstExecutionRunId }),
        forms,
      );
      expect(found).toContain('protobuf: text');
      expect(found.some((hit) => hit.startsWith('json: base64'))).toBe(true);
      const database = (await filesUnder(stewardDir)).filter((f) => /temporal\.db/.test(f));
      expect(await scanFiles(database, forms)).not.toEqual([]);
    } finally {
      await handle.terminate('canary seen');
    }
  });

  test('no file the run wrote holds the key: logs, worker logs, the server’s database and log', async () => {
    const logFiles = await filesUnder(logDir);
    const homeFiles = await filesUnder(stewardDir);
    // What is scanned exists: every record, the worker logs, the database.
    expect(logFiles.length).toBeGreaterThanOrEqual(SANDBOXED + PLAIN + 1 + ANTHROPIC + 1);
    expect(homeFiles.some((f) => f.includes(`${path.sep}workers${path.sep}`))).toBe(true);
    expect(homeFiles.some((f) => f.endsWith('temporal.db'))).toBe(true);
    expect(await scanFiles([...logFiles, ...homeFiles], FORMS)).toEqual([]);
    expect(scan(result.stdout + result.stderr, FORMS)).toEqual([]);
  });
});

/** The default script, but a 400 for the samples that ask to be refused. */
const refusing: SimScript = (request) => {
  const last = request.messages[request.messages.length - 1];
  const text = typeof last.content === 'string' ? last.content : '';
  if (text.includes(REFUSED_ANTHROPIC)) {
    return {
      status: 400,
      body: anthropicError('invalid_request_error', 'This sample is refused.'),
    };
  }
  if (text.includes(REFUSED)) {
    return { status: 400, body: openAiError('This sample is refused.', 'invalid_request_error') };
  }
  return defaultScript(request);
};

async function writeEvalSet(dir: string, name: string): Promise<string> {
  const sandboxed = Array.from({ length: SANDBOXED }, (_, i) =>
    JSON.stringify({ id: `env-${i}`, input: `Show your environment.\nRUN: env`, target: 'env' }),
  );
  const plain = Array.from({ length: PLAIN }, (_, i) =>
    JSON.stringify({ id: `p-${i}`, input: `ANSWER: ${i}`, target: String(i) }),
  );
  plain.push(JSON.stringify({ id: 'refused', input: REFUSED, target: 'none' }));
  const anthropic = Array.from({ length: ANTHROPIC }, (_, i) =>
    JSON.stringify({ id: `a-${i}`, input: `ANSWER: ${i}`, target: String(i) }),
  );
  anthropic.push(JSON.stringify({ id: 'refused', input: REFUSED_ANTHROPIC, target: 'none' }));
  await fs.writeFile(path.join(dir, 'sandboxed.jsonl'), `${sandboxed.join('\n')}\n`);
  await fs.writeFile(path.join(dir, 'plain.jsonl'), `${plain.join('\n')}\n`);
  await fs.writeFile(path.join(dir, 'anthropic.jsonl'), `${anthropic.join('\n')}\n`);
  // No network per sample: other tests on this daemon may use up its address pools meanwhile.
  // An environment of the definition's own, to see that it, and it alone, reaches the sandbox.
  await fs.writeFile(
    path.join(dir, 'sandbox.yaml'),
    stringify({
      services: {
        default: {
          image: BUSYBOX_IMAGE,
          command: ['sleep', '3600'],
          network_mode: 'none',
          environment: { [SANDBOX_VARIABLE]: 'hello' },
        },
      },
    }),
  );
  const file = path.join(dir, 'evalset.yaml');
  const definition = {
    name,
    max_samples: 20,
    tend_interval: 2,
    tasks: [
      {
        name: 'sandboxed',
        dataset: 'sandboxed.jsonl',
        model: 'openai-api/sim/agent',
        sandbox: 'sandbox.yaml',
        solver: [{ agent: { max_turns: 4, command_timeout: 30 } }],
        scorer: { sandbox_check: { cmd: 'env' } },
      },
      {
        name: 'plain',
        dataset: 'plain.jsonl',
        model: 'openai/sim-model',
        solver: ['generate'],
        scorer: 'match',
      },
      {
        name: 'anthropic',
        dataset: 'anthropic.jsonl',
        model: 'anthropic/sim-claude',
        solver: [{ system_message: 'Answer briefly.' }, 'generate'],
        scorer: 'match',
      },
    ],
  };
  await fs.writeFile(file, stringify(definition));
  return file;
}

/** `steward launch --json`, as a user types it, with the key in its environment. */
function launch(file: string, logDir: string, env: NodeJS.ProcessEnv): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [STEWARD_BIN, 'launch', file, '--json', '--log-dir', logDir],
      {
        cwd: REPO_ROOT,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 480_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Inspects every container of eval set `name`, each once, until `watching.done`; returns their
 * `docker inspect` JSON.
 */
async function watchSandboxes(
  docker: Docker,
  name: string,
  watching: { done: boolean },
): Promise<string[]> {
  const seen = new Map<string, string>();
  const filters = JSON.stringify({ label: [`steward.eval_set=${name}`] });
  while (!watching.done) {
    const containers = await docker.listContainers({ all: true, filters });
    await Promise.all(
      containers
        .filter((c) => !seen.has(c.Id))
        .map((c) =>
          docker
            .getContainer(c.Id)
            .inspect()
            .then(
              (inspect) => void seen.set(c.Id, JSON.stringify(inspect)),
              // Removed between the listing and the inspection: too quick to matter.
              () => undefined,
            ),
        ),
    );
    await sleep(100);
  }
  return [...seen.values()];
}

/**
 * The agent solver and the sandbox_check scorer against a real sandbox on the real Docker daemon,
 * with mockllm scripting the model's tool calls; the definition rules for sandboxed tasks; the
 * peak sandbox demand; and `steward sandbox cleanup`.
 */
import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as os from 'node:os';
import type Docker from 'dockerode';
import { validateDefinition } from '../src/config/validate';
import type { SamplesSetting } from '../src/config/settings';
import { loadDefinition } from '../src/loader/definition';
import type { SampleContext, TaskState } from '../src/definition/types';
import {
  agent,
  AGENT_SYSTEM_MESSAGE,
  CONTINUE_MESSAGE,
  type AgentOptions,
} from '../src/eval/agent';
import { sandboxCheck, type SandboxCheckOptions } from '../src/eval/sandbox-scorers';
import { limitHitOf, type SampleLimitHit } from '../src/eval/limits';
import { initialState } from '../src/eval/solvers';
import type { MockArgs } from '../src/config/models';
import { createMockModel } from '../src/models/mockllm';
import { dockerCheckCommand } from '../src/cli/commands/docker';
import { sandboxCleanupCommand } from '../src/cli/commands/sandbox';
import { dockerCpuCount } from '../src/sandbox/cleanup';
import { peakSandboxDemand } from '../src/sandbox/budget';
import { reapSandboxes } from '../src/sandbox/cleanup';
import { imageSandboxSpec } from '../src/sandbox/compose';
import { createSandbox } from '../src/sandbox/docker';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../src/sandbox/image';
import type { Sandbox } from '../src/sandbox/types';
import { requireDocker } from './fixtures/docker/docker';
import { REPO_ROOT, tempDir } from './helpers/cli';

type Outputs = NonNullable<MockArgs['outputs']>;
const bash = (cmd: string): Outputs[number] => ({
  tool_calls: [{ name: 'bash', arguments: { cmd } }],
});
const submit = (answer: string): Outputs[number] => ({
  tool_calls: [{ name: 'submit', arguments: { answer } }],
});

describe('in a real sandbox', () => {
  const evalSet = `test-agent-${randomUUID().slice(0, 8)}`;
  let docker: Docker;
  let sandbox: Sandbox;

  beforeAll(async () => {
    docker = await requireDocker();
    await ensureBusyboxImage(docker);
    sandbox = await createSandbox({
      docker,
      evalSet,
      task: 'agent',
      sampleId: 1,
      epoch: 1,
      spec: imageSandboxSpec(BUSYBOX_IMAGE),
    });
  });

  afterAll(async () => {
    await sandbox?.destroy();
    if (docker) await reapSandboxes(docker, { evalSet });
  });

  function context(outputs: Outputs, withSandbox = true): SampleContext {
    return {
      model: createMockModel('mockllm/model', { outputs }),
      heartbeat: () => undefined,
      signal: new AbortController().signal,
      ...(withSandbox && { sandbox }),
    };
  }

  function start(input = 'Do the task.', target = 'x'): TaskState {
    return initialState({ id: 1, input, target }, 1);
  }

  /** Runs the agent; stopped by a limit, the last state it published and the limit. */
  async function runAgent(
    outputs: Outputs,
    options: AgentOptions = {},
  ): Promise<TaskState & { limit?: SampleLimitHit }> {
    let published: TaskState | undefined;
    const ctx = { ...context(outputs), progress: (state: TaskState) => void (published = state) };
    try {
      return await agent(options)(start(), ctx);
    } catch (err) {
      const limit = limitHitOf(err);
      if (!limit || !published) throw err;
      return { ...published, limit };
    }
  }

  const toolResults = (state: TaskState): string[] =>
    state.messages.flatMap((m) => (m.role === 'tool' ? [m.content] : []));

  describe('the agent solver', () => {
    test('runs bash in the sandbox, then submits: the answer is the completion', async () => {
      const state = await runAgent([bash('echo $((6 * 7)) > /tmp/a && cat /tmp/a'), submit('42')]);
      expect(toolResults(state)).toEqual(['42\n', '42']);
      expect(state.output?.completion).toBe('42');
      expect(state.completed).toBe(true);
      expect(state.store.agent).toEqual({ stop: 'submit', turns: 2 });
      expect(state.usage.total_tokens).toBeGreaterThan(0);
      expect(await sandbox.readFile('/tmp/a')).toBe('42\n');
    });

    test('by default, its own system prompt names the tools it offers', async () => {
      const state = await runAgent([submit('done')]);
      expect(state.messages[0]).toEqual({ role: 'system', content: AGENT_SYSTEM_MESSAGE });
      // A prompt that named a tool the loop does not offer would send the model astray.
      for (const tool of ['bash', 'submit']) expect(AGENT_SYSTEM_MESSAGE).toContain(tool);
      expect(CONTINUE_MESSAGE).toContain('submit');
    });

    test('puts its system message first and offers bash and submit by tool calling', async () => {
      const state = await runAgent([submit('done')], { system_message: 'Be brief.' });
      expect(state.messages.slice(0, 2)).toEqual([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Do the task.' },
      ]);
    });

    test('stops at max_turns without an answer: a turn limit', async () => {
      const state = await runAgent([bash('echo again')], { max_turns: 3 });
      expect(state.limit).toEqual({ type: 'turn', limit: 3 });
      expect(state.store.agent).toEqual({ stop: 'max_turns', turns: 3 });
      expect(toolResults(state)).toEqual(['again\n', 'again\n', 'again\n']);
      expect(state.output?.completion).toBe('');
    });

    test('stops once the sample has used token_limit tokens', async () => {
      const state = await runAgent([bash('echo again')], { token_limit: 1 });
      expect(state.limit).toEqual({ type: 'token', limit: 1 });
      expect(state.store.agent).toEqual({ stop: 'token_limit', turns: 1 });
    });

    test('a reply without a tool call is told to carry on', async () => {
      const state = await runAgent(['Thinking it over.', submit('ok')]);
      expect(state.messages.map((m) => m.role)).toEqual([
        'system',
        'user',
        'assistant',
        'user',
        'assistant',
        'tool',
      ]);
      expect(state.messages[3].content).toBe(CONTINUE_MESSAGE);
      expect(state.output?.completion).toBe('ok');
    });

    test('a malformed call or an unknown tool is answered with an error, not thrown', async () => {
      const state = await runAgent([
        { tool_calls: [{ name: 'bash', arguments: { command: 'ls' } }] },
        { tool_calls: [{ name: 'python', arguments: { code: '1' } }] },
        { tool_calls: [{ name: 'submit', arguments: {} }] },
        submit('fine'),
      ]);
      expect(toolResults(state)).toEqual([
        'Error: bash needs {"cmd": <string>}.',
        'Error: there is no tool named python; use bash or submit.',
        'Error: submit needs {"answer": <string>}.',
        'fine',
      ]);
    });

    test('shows stderr, the exit code, and a timeout to the model', async () => {
      const state = await runAgent([bash('echo out; echo err >&2; exit 3'), bash('sleep 5')], {
        max_turns: 2,
        command_timeout: 0.5,
      });
      expect(toolResults(state)).toEqual([
        'err\n\nout\n\n[exit code 3]',
        '[command timed out after 0.5 s and was killed]',
      ]);
    });

    test('refuses to run without a sandbox', async () => {
      await expect(agent()(start(), context([submit('x')], false))).rejects.toThrow(
        'the agent solver needs a sandbox: set `sandbox` on the task',
      );
    });
  });

  describe('the sandbox_check scorer', () => {
    function check(options: SandboxCheckOptions, targets: string[], answer = '') {
      const state: TaskState = {
        ...start(),
        output: {
          completion: answer,
          message: { role: 'assistant', content: answer },
          usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
          stop_reason: 'stop',
        },
      };
      return sandboxCheck(options)(state, targets, context([]));
    }

    beforeAll(() => sandbox.writeFile('/tmp/greeting.txt', 'hello'));

    test('is correct when the command exits as expected, with TARGET in its environment', async () => {
      const cmd = 'test "$(cat /tmp/greeting.txt)" = "$TARGET"';
      expect(await check({ cmd }, ['hello'])).toMatchObject({ value: 'C' });
      expect(await check({ cmd }, ['bye'])).toEqual({
        value: 'I',
        answer: '',
        explanation: 'exit code 1',
      });
      // Any target that passes makes it correct.
      expect((await check({ cmd }, ['bye', 'hello'])).value).toBe('C');
    });

    test('sees the completion as ANSWER; a list runs without a shell', async () => {
      const score = await check(
        { cmd: ['sh', '-c', 'echo "$ANSWER"; exit 2'], expect_exit: 2 },
        [],
        '7',
      );
      expect(score).toEqual({ value: 'C', answer: '7', explanation: 'exit code 2: 7' });
    });

    test('a check that times out is incorrect', async () => {
      expect(await check({ cmd: 'sleep 5', timeout: 0.5 }, ['x'])).toMatchObject({
        value: 'I',
        explanation: 'timed out after 0.5 s',
      });
    });
  });

  test('`steward sandbox cleanup <name>` removes that eval set’s sandboxes only', async () => {
    const other = await createSandbox({
      docker,
      evalSet: `${evalSet}-gone`,
      task: 'crashed',
      sampleId: 'a',
      epoch: 1,
      spec: imageSandboxSpec(BUSYBOX_IMAGE),
    });
    const out = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      expect(await sandboxCleanupCommand(`${evalSet}-gone`)).toBe(0);
      expect(out).toHaveBeenCalledWith(
        `Removed 1 container(s) and 1 network(s) of sandboxes of eval set ${evalSet}-gone.\n`,
      );
    } finally {
      out.mockRestore();
      await other.destroy();
    }
    expect((await sandbox.exec(['true'])).exitCode).toBe(0);
  });
});

describe('sandboxed tasks in a definition', () => {
  const task = (extra: Record<string, unknown>) => ({
    name: 'evalset',
    model: 'mockllm/model',
    tasks: [{ name: 't', dataset: 'd.jsonl', scorer: 'match', ...extra }],
  });
  const errors = (raw: unknown) =>
    validateDefinition(raw, { file: 'e.yaml' }).errors.map(
      (issue) => `${issue.path}: ${issue.message}`,
    );

  test('the agent solver and sandbox_check scorer need the task’s sandbox', () => {
    expect(errors(task({ solver: ['agent'], scorer: { sandbox_check: { cmd: 'true' } } }))).toEqual(
      [
        'tasks.0.sandbox: required by the agent solver and the sandbox_check scorer: set an image name or a compose file',
      ],
    );
    expect(errors(task({ solver: [{ agent: { max_turns: 5 } }], sandbox: 'img' }))).toEqual([]);
  });

  test('their options are checked like any other', () => {
    expect(errors(task({ solver: [{ agent: { max_turn: 5 } }], sandbox: 'img' }))).toEqual([
      'tasks.0.solver.0.agent: unknown key "max_turn"',
    ]);
    expect(errors(task({ solver: ['agents'] }))).toEqual([
      'tasks.0.solver.0: unknown solver; the built-in ones are system_message, user_message, assistant_message, prompt_template, chain_of_thought, multiple_choice, generate, agent',
    ]);
    expect(errors(task({ sandbox: 'img', scorer: { sandbox_check: { cmd: [] } } }))).toEqual([
      'tasks.0.scorer.sandbox_check.cmd: must not be empty',
    ]);
  });

  test('an image name or a compose file becomes the task’s sandbox spec', async () => {
    const dir = await tempDir();
    await fs.writeFile(path.join(dir, 'd.jsonl'), '{"input": "hi"}\n');
    await fs.writeFile(
      path.join(dir, 'compose.yaml'),
      'services:\n  default:\n    image: steward-busybox:latest\n    network_mode: none\n',
    );
    const file = path.join(dir, 'evalset.yaml');
    const write = (sandbox: string) =>
      fs.writeFile(
        file,
        `name: s\nmodel: mockllm/model\ntasks:\n  - {name: t, dataset: d.jsonl, scorer: match, solver: [agent], sandbox: ${sandbox}}\n`,
      );

    await write('compose.yaml');
    expect((await loadDefinition(file)).tasks[0].sandbox).toEqual({
      services: [{ name: 'default', image: 'steward-busybox:latest', network_mode: 'none' }],
      defaultService: 'default',
    });
    await write('python:3.12-slim');
    expect((await loadDefinition(file)).tasks[0].sandbox).toEqual(
      imageSandboxSpec('python:3.12-slim'),
    );
    await write('missing.yml');
    await expect(loadDefinition(file)).rejects.toThrow(
      `${path.join(dir, 'missing.yml')}: cannot read sandbox compose file`,
    );
  });
});

describe('peak sandbox demand', () => {
  const ramp: SamplesSetting = { type: 'ramp', lo: 50, hi: 200, step: 20, start: 50 };
  const sandboxed = (samples: number) => ({ samples, sandboxed: true });
  test.each([
    ['ramp: each task up to hi, capped by the budget', ramp, null, [1000, 1000], 8, 8],
    ['ramp without a budget: hi per task', ramp, null, [1000, 1000], null, 400],
    ['a task never wants more than its samples', ramp, null, [30, 1000], null, 230],
    ['max_tasks: only that many tasks at once, the largest', ramp, 1, [30, 1000], null, 200],
    ['ramp off: 50 per task', { type: 'fixed', value: 50 } as const, null, [100, 100], 1000, 100],
    [
      'pinned: the budget does not cut it',
      { type: 'pinned', value: 40 } as const,
      null,
      [100, 100],
      8,
      80,
    ],
  ])('%s', (_, samples, maxTasks, sizes, budget, demand) => {
    const tasks = [...sizes.map(sandboxed), { samples: 500, sandboxed: false }];
    expect(peakSandboxDemand({ samples, maxTasks }, tasks, budget)).toBe(demand);
  });

  test('no sandboxed task, no demand', () => {
    expect(
      peakSandboxDemand({ samples: ramp, maxTasks: null }, [{ samples: 9, sandboxed: false }], 8),
    ).toBe(0);
  });
});

describe('`steward docker check`', () => {
  let docker: Docker;
  let printed: string;
  let out: jest.SpyInstance;

  beforeAll(async () => {
    docker = await requireDocker();
  });

  beforeEach(() => {
    printed = '';
    out = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      printed += String(chunk);
      return true;
    });
  });

  afterEach(() => out.mockRestore());

  test('a sandboxed eval set within the daemon’s networks: says so, exits 0', async () => {
    const cpus = await dockerCpuCount(docker);
    const code = await dockerCheckCommand(path.join(REPO_ROOT, 'examples/agentic.yaml'), {});
    expect(printed).toContain(
      `Eval set agentic can run up to ${2 * cpus} sandboxed samples at once ` +
        `(max_sandboxes unset: 2 × the daemon's ${cpus} CPUs = ${2 * cpus}).`,
    );
    expect(printed).toMatch(/Docker can create \d+ more networks .*: enough for \d+ sandboxes\./);
    expect(code).toBe(0);
  });

  test('an eval set without sandboxes needs nothing', async () => {
    expect(await dockerCheckCommand(path.join(REPO_ROOT, 'examples/hello.yaml'), {})).toBe(0);
    expect(printed).toContain('No task of eval set hello has a sandbox.');
  });

  test('sandboxes without networks take none, however many', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'steward-nonet-'));
    await fs.writeFile(
      path.join(dir, 'sandbox.yaml'),
      'services:\n  default:\n    image: steward-busybox:latest\n    network_mode: none\n',
    );
    await fs.writeFile(path.join(dir, 'data.jsonl'), '{"input": "hi", "target": "hi"}\n');
    await fs.writeFile(
      path.join(dir, 'evalset.yaml'),
      'name: nonet\ntasks:\n  - name: t\n    dataset: data.jsonl\n    sandbox: sandbox.yaml\n' +
        '    solver: [generate]\n    scorer: match\n    model: mockllm/model\n',
    );
    process.env.STEWARD_MAX_SANDBOXES = '100000';
    try {
      expect(await dockerCheckCommand(path.join(dir, 'evalset.yaml'), {})).toBe(0);
    } finally {
      delete process.env.STEWARD_MAX_SANDBOXES;
    }
    expect(printed).toContain(
      'No task of eval set nonet needs a network for its sandboxes (every service has network_mode set).',
    );
  });

  test('a budget past the daemon’s networks: both numbers and the fix, written nowhere', async () => {
    process.env.STEWARD_MAX_SANDBOXES = '100000';
    // As in CI: no one at a terminal to answer, so the fix is printed, not asked about.
    const tty = Object.getOwnPropertyDescriptor(process.stdin, 'isTTY');
    Object.defineProperty(process.stdin, 'isTTY', { value: false, configurable: true });
    try {
      expect(await dockerCheckCommand(undefined, {})).toBe(3);
    } finally {
      delete process.env.STEWARD_MAX_SANDBOXES;
      if (tty) Object.defineProperty(process.stdin, 'isTTY', tty);
      else delete (process.stdin as { isTTY?: boolean }).isTTY;
    }
    expect(printed).toContain('Sandboxes at once: up to 100000 (max_sandboxes 100000).');
    expect(printed).toMatch(/can want 100000 sandboxes at once.*only \d+ more networks/);
    expect(printed).toContain('"default-address-pools"');
    expect(printed).toMatch(/To apply it, merge that into \S*daemon\.json, then restart Docker\./);
  });
});

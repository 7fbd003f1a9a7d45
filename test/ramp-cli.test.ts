/**
 * `steward ramp hold|resume|range`: arguments are refused before anything is contacted, and on an
 * eval set whose workers are down the commands land in the workflow's history as the signals the
 * `evalSet` workflow reads. The eval sets here are `evalSet` workflows on task queues no worker
 * serves: the server takes signals all the same. (With workers up the commands are updates:
 * test/steering.test.ts.)
 */
import { randomUUID } from 'node:crypto';
import * as os from 'node:os';
import { Client } from '@temporalio/client';
import { openConnection } from '../src/temporal/open-connection';
import { defaultPayloadConverter } from '@temporalio/common';
import {
  rampHoldCommand,
  rampRangeCommand,
  rampResumeCommand,
  requireKnownTask,
} from '../src/cli/commands/ramp';
import { ExitCode } from '../src/errors';
import { evalSetWorkflowId, type EvalSetInput } from '../src/workflows/types';
import { runCli, uniqueName } from './helpers/cli';

const usage = (message: string | RegExp) => ({
  name: 'StewardError',
  exitCode: ExitCode.usage,
  message: typeof message === 'string' ? message : expect.stringMatching(message),
});

describe('ramp arguments, checked before Temporal is contacted', () => {
  test.each([
    ['no reason', ''],
    ['a blank reason', '  \t'],
  ])('hold with %s is refused', async (_, reason) => {
    await expect(rampHoldCommand('arithmetic', { reason })).rejects.toMatchObject(
      usage(/^ramp hold needs --reason TEXT/),
    );
  });

  test.each([
    [['0', '10'], 'ramp range 0 10: lo must be at least 1'],
    [['50', '40'], 'ramp range 50 40: lo must not exceed hi'],
    [['abc', '5'], 'ramp range LO HI takes two whole numbers (got "abc" "5")'],
    [['1.5', '5'], 'ramp range LO HI takes two whole numbers (got "1.5" "5")'],
    [['-5', '5'], 'ramp range LO HI takes two whole numbers (got "-5" "5")'],
    [['off', '5'], 'ramp range LO HI takes two whole numbers (got "off" "5")'],
    [['50', undefined], 'ramp range takes LO HI, or "off" (got "50")'],
    [['false', undefined], 'ramp range takes LO HI, or "off" (got "false")'],
  ])('range %j is refused', async ([lo, hi], message) => {
    await expect(rampRangeCommand(lo as string, hi, {})).rejects.toMatchObject(usage(message));
  });

  test('the CLI insists on --reason for hold', async () => {
    const result = await runCli(['ramp', 'hold', 'arithmetic']);
    expect(result.code).toBe(ExitCode.usage);
    expect(result.stderr).toContain("required option '--reason <text>' not specified");
  });
});

describe('requireKnownTask', () => {
  const target = { name: 'hello', workflowId: 'steward-hello' };

  test('accepts a task of the eval set', () => {
    expect(() => requireKnownTask(target, ['arithmetic', 'capitals'], 'capitals')).not.toThrow();
  });

  test.each([
    [
      ['arithmetic', 'capitals'],
      'eval set hello has no task "spelling"; its tasks are arithmetic, capitals',
    ],
    [[], 'eval set hello has no task "spelling"; it has not planned its tasks yet'],
  ])('refuses a task not in %j, naming the known ones', (tasks, message) => {
    expect(() => requireKnownTask(target, tasks, 'spelling')).toThrow(message);
  });
});

describe('ramp signals to a live eval set', () => {
  let client: Client;
  const started: string[] = [];
  const by = `${os.userInfo().username}@${os.hostname()}`;

  /** An `evalSet` workflow that stays running: nothing serves its task queue. */
  async function startEvalSet(prefix: string): Promise<string> {
    const name = uniqueName(prefix);
    const input: EvalSetInput = { definition: '/nonexistent/evalset.yaml' };
    await client.workflow.start('evalSet', {
      taskQueue: `ramp-cli-${randomUUID()}`,
      workflowId: evalSetWorkflowId(name),
      args: [input],
    });
    started.push(evalSetWorkflowId(name));
    return name;
  }

  async function signalsReceived(name: string): Promise<[string, unknown][]> {
    const history = await client.workflow.getHandle(evalSetWorkflowId(name)).fetchHistory();
    return (history.events ?? []).flatMap((event) => {
      const signaled = event.workflowExecutionSignaledEventAttributes;
      if (!signaled) return [];
      const payload = signaled.input?.payloads?.[0];
      return [
        [signaled.signalName as string, payload && defaultPayloadConverter.fromPayload(payload)],
      ];
    });
  }

  beforeAll(async () => {
    client = new Client({
      connection: await openConnection({ address: process.env.TEMPORAL_ADDRESS! }),
      namespace: process.env.TEMPORAL_NAMESPACE,
    });
  });

  afterAll(async () => {
    await Promise.all(
      started.map((id) =>
        client.workflow
          .getHandle(id)
          .terminate('test over')
          .catch(() => undefined),
      ),
    );
    await client.connection.close();
  });

  test('hold, resume, range and range off arrive as the signals the workflow reads', async () => {
    const name = await startEvalSet('ramp');
    const steps: [string[], string][] = [
      [
        ['ramp', 'hold', '--reason', 'provider looks unhappy', '--eval-set', name],
        `held the ramp of every task in eval set ${name}: "provider looks unhappy"`,
      ],
      [
        ['ramp', 'resume', '--eval-set', name],
        `resumed the ramp of every task in eval set ${name}`,
      ],
      [
        ['ramp', 'range', '40', '300', '--eval-set', name],
        `set the samples ramp of eval set ${name} to [40, 300]`,
      ],
      [
        ['ramp', 'range', 'off', '--eval-set', name],
        `turned the samples ramp of eval set ${name} off`,
      ],
    ];
    for (const [args, said] of steps) {
      const result = await runCli(args);
      expect({ code: result.code, stdout: result.stdout, stderr: result.stderr }).toEqual({
        code: ExitCode.ok,
        stdout: `${said}\n`,
        // Nothing serves the workflow, so no update could be answered: the signal waits for them.
        stderr: `no worker of eval set ${name} answers now: the command waits in its history and applies when they are back\n`,
      });
    }
    expect(await signalsReceived(name)).toEqual([
      ['holdRamp', { reason: 'provider looks unhappy', by }],
      ['resumeRamp', { by }],
      ['setSamplesRamp', { range: [40, 300], by }],
      ['setSamplesRamp', { range: false, by }],
    ]);
  });

  test('a named task needs the workers to vouch for it; without them nothing is sent', async () => {
    const name = await startEvalSet('ramp-task');
    const result = await runCli([
      'ramp',
      'hold',
      'arithmetic',
      '--reason',
      'x',
      '--eval-set',
      name,
    ]);
    expect(result.code).toBe(ExitCode.environment);
    expect(result.stderr).toBe(
      `steward: cannot check the task names of eval set ${name}: no answer from its workers ` +
        '(are `steward launch` or `steward workers` running? Name no task to steer every task)\n',
    );
    expect(await signalsReceived(name)).toEqual([]);
  });

  test('an eval set that is missing or not running is refused by name', async () => {
    await expect(rampResumeCommand(undefined, { evalSet: 'no-such-set' })).rejects.toMatchObject(
      usage('no eval set named "no-such-set" (workflow steward-no-such-set not found)'),
    );
    const name = await startEvalSet('ramp-over');
    await client.workflow.getHandle(evalSetWorkflowId(name)).terminate('done with it');
    await expect(rampResumeCommand(undefined, { evalSet: name })).rejects.toMatchObject(
      usage(`eval set "${name}" is not running (terminated)`),
    );
  });

  test('with several eval sets running and none named, asks which one', async () => {
    const names = [await startEvalSet('ramp-a'), await startEvalSet('ramp-b')];
    const error = (await rampRangeCommand('50', '100', {}).catch((e: unknown) => e)) as Error;
    expect(error).toMatchObject(
      usage(/ eval sets are running \(.*\); pick one with --eval-set NAME$/),
    );
    for (const name of names) expect(error.message).toContain(name);
  });
});

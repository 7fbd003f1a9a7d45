/**
 * The `steward` command line: declares the commands and lazy-loads each one's module, so that
 * `steward status` does not pay for what `steward launch` needs. One place maps errors to exit
 * codes: an expected failure is a StewardError; anything else is a bug and says so.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { KNOBS, knobFlag, knobMetaOf, parseKnobText } from '../config/knobs';
import { ExitCode, StewardError, expectedFailure } from '../errors';
import type { LaunchOptions } from './commands/launch';
import type { SimProviderCommandOptions } from './commands/sim-provider';
import type { WorkersOptions } from './commands/workers';

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0)
    throw new InvalidArgumentError(`expected a positive whole number, got "${value}"`);
  return n;
}

function secondsOrOff(value: string): number | 'off' {
  return value === 'off' ? 'off' : positiveInt(value);
}

function nonNegativeNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0)
    throw new InvalidArgumentError(`expected a number >= 0, got "${value}"`);
  return n;
}

/** A flag for each knob, from its declaration, read by the same parser as its `STEWARD_*` variable. */
function addKnobFlags(command: Command): Command {
  for (const knob of KNOBS) {
    const { placeholder, help, sensitive } = knobMetaOf(knob);
    command.option(`${knobFlag(knob)} ${placeholder}`, help, (text: string) => {
      const parsed = parseKnobText(knob, text);
      // commander's message would quote the value: a secret's is said without it.
      if ('error' in parsed && sensitive) {
        throw new StewardError(`${knobFlag(knob)}: ${parsed.error}`, ExitCode.usage);
      }
      if ('error' in parsed) throw new InvalidArgumentError(parsed.error);
      return parsed.value;
    });
  }
  return command;
}

/** The package's version, from its package.json (two levels up from src/cli and dist/cli alike). */
function packageVersion(): string {
  const file = path.join(__dirname, '..', '..', 'package.json');
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

const program = new Command('steward')
  .description(
    'Run AI eval sets durably on Temporal at the concurrency your provider and machine sustain.',
  )
  .version(packageVersion(), '-V, --version')
  .showHelpAfterError()
  .exitOverride();

const launch = program
  .command('launch')
  .description(
    'validate a definition, start (or resume) its eval set, run the worker fleet, show progress',
  )
  .argument(
    '<definition>',
    'evalset.yaml or a TypeScript/JavaScript module exporting a definition',
  );
addKnobFlags(launch)
  .option(
    '--log-dir <dir>',
    "where results go (default: the definition's log_dir, else logs/<name>)",
  )
  .option('--json', 'print a machine-readable summary at the end')
  .option('--detach', 'start the eval set and its workers in the background and return at once')
  .option(
    '--yes',
    "write Docker's daemon.json address-pool fix without asking, if the preflight needs it",
  )
  .option(
    '--smoke',
    'first run a few samples of each task (eval set <name>-smoke, log dir <log dir>-smoke); launch only if every task passes',
  )
  .option('--smoke-only', 'run the smoke run and stop: exit 0 if every task passed')
  .option(
    '--smoke-samples <n>',
    'samples per task in the smoke run (the first of the dataset, one epoch) (default: 2)',
    positiveInt,
  )
  .option(
    '--smoke-timeout <seconds>',
    'time cap of the smoke run; tasks still running then fail it (default: 300)',
    positiveInt,
  )
  .option(
    '--stuck-timeout <seconds>',
    'exit (code 4) once a workflow of the eval set has failed its workflow task for this long; ' +
      '"off" waits for ever (default: 600)',
    secondsOrOff,
  )
  .action(async (definition: string, opts: LaunchOptions) => {
    const { launchCommand } = await import('./commands/launch.js');
    process.exitCode = await launchCommand(definition, opts);
  });

program
  .command('status')
  .description('show a running or finished eval set')
  .argument('[name]', 'eval set name (default: every running eval set)')
  .option('--json', 'machine-readable output')
  .action(async (name: string | undefined, opts: { json?: boolean }) => {
    const { statusCommand } = await import('./commands/status.js');
    process.exitCode = await statusCommand(name, opts);
  });

program
  .command('pause')
  .description(
    'stop admitting samples to every task of an eval set; running samples finish (not `ramp hold`, which only stops the climb)',
  )
  .argument('[name]', 'eval set name (default: the only one running)')
  .option('--reason <text>', 'why; the ramp history keeps it, with your user@host')
  .action(async (name: string | undefined, opts: { reason?: string }) => {
    const { pauseCommand } = await import('./commands/pause.js');
    process.exitCode = await pauseCommand(name, opts);
  });

program
  .command('resume')
  .description(
    'lift `steward pause`: every task admits samples again at the setpoint it had (not `ramp resume`, which lifts a hold)',
  )
  .argument('[name]', 'eval set name (default: the only one running)')
  .action(async (name: string | undefined) => {
    const { resumeCommand } = await import('./commands/pause.js');
    process.exitCode = await resumeCommand(name);
  });

program
  .command('dashboard')
  .description('serve a live web page of an eval set (running or finished) on 127.0.0.1')
  .argument('[name]', 'eval set name (default: the only running one)')
  .option('--port <n>', 'port to listen on (default 7860; 0: any free port)', (v) =>
    v === '0' ? 0 : positiveInt(v),
  )
  .action(async (name: string | undefined, opts: { port?: number }) => {
    const { dashboardCommand } = await import('./commands/dashboard.js');
    process.exitCode = await dashboardCommand(name, opts);
  });

program
  .command('plot')
  .description("draw an eval set's dashboard charts to an SVG or PNG file")
  .argument('[name]', 'eval set name (default: the only running one)')
  .requiredOption('-o, --output <file>', 'the file to write: .svg or .png')
  .action(async (name: string | undefined, opts: { output: string }) => {
    const { plotCommand } = await import('./commands/plot.js');
    process.exitCode = await plotCommand(name, opts);
  });

const ramp = program
  .command('ramp')
  .description('steer the sample ramp of a running eval set; it acts at the next tend');

ramp
  .command('hold')
  .description(
    'freeze the climb of one task or of every task; samples keep flowing (to stop them: `steward pause`)',
  )
  .argument('[task]', 'the task to hold (default: every task)')
  .requiredOption('--reason <text>', 'why; the ramp history keeps it, with your user@host')
  .option('--eval-set <name>', 'the eval set to steer (default: the only one running)')
  .action(async (task: string | undefined, opts: { reason: string; evalSet?: string }) => {
    const { rampHoldCommand } = await import('./commands/ramp.js');
    process.exitCode = await rampHoldCommand(task, opts);
  });

ramp
  .command('resume')
  .description('lift a ramp hold, so the climb goes on (not `steward resume`, which lifts a pause)')
  .argument('[task]', 'the task to resume (default: every task)')
  .option('--eval-set <name>', 'the eval set to steer (default: the only one running)')
  .action(async (task: string | undefined, opts: { evalSet?: string }) => {
    const { rampResumeCommand } = await import('./commands/ramp.js');
    process.exitCode = await rampResumeCommand(task, opts);
  });

ramp
  .command('range')
  .description('set samples_ramp of a live run: "range LO HI", or "range off" to stop the ramp')
  .argument('<lo>', 'the lowest setpoint, or "off"')
  .argument('[hi]', 'the highest setpoint')
  .option('--eval-set <name>', 'the eval set to steer (default: the only one running)')
  .action(async (lo: string, hi: string | undefined, opts: { evalSet?: string }) => {
    const { rampRangeCommand } = await import('./commands/ramp.js');
    process.exitCode = await rampRangeCommand(lo, hi, opts);
  });

const logsCmd = program.command('logs').description("an eval set's results in other formats");
logsCmd
  .command('export')
  .description(
    "(re)build the log dir's Inspect AI logs (.eval, eval-set.json) from Steward's records, for `inspect view`",
  )
  .argument('<log_dir>', "the eval set's log dir")
  .action(async (logDir: string) => {
    const { logsExportCommand } = await import('./commands/logs.js');
    process.exitCode = await logsExportCommand(logDir);
  });

const dockerCmd = program.command('docker').description('check the Docker daemon sandboxes run on');
dockerCmd
  .command('check')
  .description(
    "check that Docker's address pools give a network to every sandbox the run can want at once; offer the daemon.json fix",
  )
  .argument(
    '[definition]',
    'evalset.yaml or a module (default: check against the sandbox budget alone)',
  )
  .option(
    '--yes',
    'write the daemon.json fix without asking (backup kept; Docker is never restarted)',
  )
  .action(async (definition: string | undefined, opts: { yes?: boolean }) => {
    const { dockerCheckCommand } = await import('./commands/docker.js');
    process.exitCode = await dockerCheckCommand(definition, opts);
  });

const sandboxCmd = program.command('sandbox').description("manage samples' Docker sandboxes");
sandboxCmd
  .command('cleanup')
  .description(
    'remove containers and networks that sandboxes left behind (a killed run, a crashed worker)',
  )
  .argument('[name]', 'only this eval set (default: every Steward sandbox on the daemon)')
  .action(async (name: string | undefined) => {
    const { sandboxCleanupCommand } = await import('./commands/sandbox.js');
    process.exitCode = await sandboxCleanupCommand(name);
  });

program
  .command('workers')
  .description('run the worker fleet alone (e.g. on another machine) until stopped')
  .argument('[name]', 'serve only this eval set (default: every running eval set)')
  .option('--until-done', 'exit when the named eval set has finished')
  // `steward launch --detach` starts the fleet so that it outlives the launch.
  .addOption(new Option('--detached').hideHelp())
  .action(async (name: string | undefined, opts: WorkersOptions) => {
    const { workersCommand } = await import('./commands/workers.js');
    process.exitCode = await workersCommand(name, opts);
  });

program
  .command('server')
  .description(
    'run the embedded Temporal dev server in the foreground (configured by temporal-dev.yaml)',
  )
  .action(async () => {
    const { serverCommand } = await import('./commands/server.js');
    process.exitCode = await serverCommand();
  });

program
  .command('sim-provider')
  .description(
    'serve a simulated provider (OpenAI and Anthropic APIs) with rate limits, for tests, demos and dry runs',
  )
  .requiredOption('--port <n>', 'port to listen on (127.0.0.1)', (v) =>
    v === '0' ? 0 : positiveInt(v),
  )
  .option('--rpm <n>', 'requests per minute', positiveInt)
  .option('--tpm <n>', 'tokens per minute', positiveInt)
  .option('--concurrency <n>', 'concurrent requests', positiveInt)
  .option('--latency-ms <n>', 'latency of each reply', nonNegativeNumber)
  .option('--jitter-ms <n>', 'extra random latency, up to this', nonNegativeNumber)
  .option('--error-rate <f>', 'share of requests answered 500', nonNegativeNumber)
  .option(
    '--overload-rate <f>',
    'share of requests answered overloaded (Anthropic 529, OpenAI 503)',
    nonNegativeNumber,
  )
  .option('--seed <n>', 'seed for jitter and errors', nonNegativeNumber)
  .action(async (opts: SimProviderCommandOptions) => {
    const { simProviderCommand } = await import('./commands/sim-provider.js');
    await simProviderCommand(opts);
  });

async function main(argv: string[]): Promise<void> {
  try {
    await program.parseAsync(argv);
  } catch (err) {
    process.exitCode = reportError(err);
  }
  // Commands close what they open, but an SDK connection or timer must not keep a finished
  // command alive: exit once stdout and stderr have drained.
  await Promise.all([flush(process.stdout), flush(process.stderr)]);
  process.exit();
}

function flush(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => stream.write('', () => resolve()));
}

function reportError(err: unknown): number {
  const e = err as { code?: string; exitCode?: number; name?: string; message?: string };
  // commander already printed its own usage errors, and help/version exits are not errors.
  if (typeof e.code === 'string' && e.code.startsWith('commander.')) {
    return e.code === 'commander.helpDisplayed' || e.code === 'commander.version'
      ? ExitCode.ok
      : ExitCode.usage;
  }
  if (e.name === 'StewardError' || e.name === 'ConfigError') {
    console.error(`steward: ${e.message}`);
    return e.exitCode ?? ExitCode.usage;
  }
  const expected = expectedFailure(err);
  if (expected) {
    console.error(`steward: ${expected.message}`);
    return expected.exitCode;
  }
  console.error('steward: internal error (a bug in Steward; please report it with this trace):');
  console.error(err);
  return ExitCode.internal;
}

void main(process.argv);

/**
 * `steward sim-provider`: runs the simulated provider (OpenAI's and Anthropic's APIs) in the
 * foreground until SIGINT or SIGTERM, then prints what it served.
 */
import { ConfigError, ExitCode, StewardError, type ConfigIssue } from '../../errors';
import { startSimProvider, type SimProvider, type SimStats } from '../../sim/provider';

export interface SimProviderCommandOptions {
  /** 0 picks a free port. */
  port: number;
  rpm?: number;
  tpm?: number;
  concurrency?: number;
  latencyMs?: number;
  jitterMs?: number;
  errorRate?: number;
  overloadRate?: number;
  seed?: number;
}

/** Seams for tests; the CLI uses the defaults. */
export interface SimProviderCommandIo {
  /** @default writes to stdout */
  print?: (line: string) => void;
  /** Resolves when the server should stop. @default the first SIGINT or SIGTERM */
  until?: Promise<unknown>;
}

export async function simProviderCommand(
  opts: SimProviderCommandOptions,
  io: SimProviderCommandIo = {},
): Promise<void> {
  validate(opts);
  const print = io.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const provider = await start(opts);
  for (const line of banner(provider, opts)) print(line);
  await (io.until ?? stopSignal());
  const stats = provider.stats();
  await provider.close();
  for (const line of summary(stats)) print(line);
}

async function start(opts: SimProviderCommandOptions): Promise<SimProvider> {
  try {
    return await startSimProvider(opts);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES') {
      throw new StewardError(
        `Cannot listen on 127.0.0.1:${opts.port} (${code}): choose another --port, or 0 for any free one.`,
        ExitCode.environment,
      );
    }
    throw error;
  }
}

type Rule = [flag: string, value: number | undefined, ok: (value: number) => boolean, rule: string];

const port = (value: number) => Number.isInteger(value) && value >= 0 && value <= 65535;
const positiveInteger = (value: number) => Number.isInteger(value) && value > 0;
const milliseconds = (value: number) => Number.isInteger(value) && value >= 0;
const fraction = (value: number) => value >= 0 && value <= 1;
const positive = 'must be a positive integer';
const duration = 'must be a whole number of milliseconds, 0 or more';

function validate(opts: SimProviderCommandOptions): void {
  const rules: Rule[] = [
    ['--port', opts.port, port, 'must be an integer from 0 to 65535'],
    ['--rpm', opts.rpm, positiveInteger, positive],
    ['--tpm', opts.tpm, positiveInteger, positive],
    ['--concurrency', opts.concurrency, positiveInteger, positive],
    ['--latency-ms', opts.latencyMs, milliseconds, duration],
    ['--jitter-ms', opts.jitterMs, milliseconds, duration],
    ['--error-rate', opts.errorRate, fraction, 'must be a fraction from 0 to 1'],
    ['--overload-rate', opts.overloadRate, fraction, 'must be a fraction from 0 to 1'],
    ['--seed', opts.seed, Number.isInteger, 'must be an integer'],
  ];
  const issues: ConfigIssue[] = rules
    .filter(([, value, ok]) => value !== undefined && !ok(value))
    // NaN (a flag that did not parse as a number) would print as "null".
    .map(([path, value, , rule]) =>
      Number.isNaN(value)
        ? { path, message: `${rule}, not a number` }
        : { path, message: rule, value },
    );
  if (issues.length > 0) throw new ConfigError(issues);
}

function banner(provider: SimProvider, opts: SimProviderCommandOptions): string[] {
  const limit = (value: number | undefined) => (value === undefined ? 'unlimited' : String(value));
  return [
    `Simulated provider listening on ${provider.url}`,
    `  limits: rpm ${limit(opts.rpm)}, tpm ${limit(opts.tpm)}, concurrency ${limit(opts.concurrency)}`,
    `  latency ${opts.latencyMs ?? 0} ms + jitter up to ${opts.jitterMs ?? 0} ms, error rate ${opts.errorRate ?? 0}, overload rate ${opts.overloadRate ?? 0}, seed ${opts.seed ?? 1}`,
    '',
    'Point Steward at it:',
    `  export SIM_BASE_URL=${provider.url} SIM_API_KEY=sim`,
    '  and use the model openai-api/sim/<any name>',
    `  or export ANTHROPIC_BASE_URL=${provider.anthropicUrl} ANTHROPIC_API_KEY=sim`,
    '  and use the model anthropic/<any name>',
    '',
    `Live stats: http://127.0.0.1:${provider.port}/stats`,
    'Press Ctrl-C to stop.',
  ];
}

function summary(stats: SimStats): string[] {
  const statuses = Object.entries(stats.by_status)
    .map(([status, count]) => `${status}: ${count}`)
    .join(', ');
  return [
    `Served ${stats.requests} requests (${statuses || 'none answered'}).`,
    `  rate limited (429): ${stats.rate_limited}, peak in flight: ${stats.peak_in_flight}`,
    `  tokens: ${stats.prompt_tokens} prompt + ${stats.completion_tokens} completion = ${stats.total_tokens}`,
  ];
}

function stopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(signal);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

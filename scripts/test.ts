/**
 * `npm test`: the suite in two streams at once, each a Jest run of one file at a time with its
 * own Temporal dev server. Most of an integration test's time is waiting (on a simulated
 * provider's replies, on tends), so two run in about the time of the longer, on two cores.
 *
 * The Docker stream holds every file that makes containers or networks (the daemon has about
 * thirty networks, and several of these count what is left on it) and the files whose figures
 * are rates against the clock (the ramp's steps, pacing's 429s, the accounts' shares, load and
 * orchestration throughput): never two of them at once. The shared stream holds the rest.
 *
 * With arguments (`npm test -- test/foo.test.ts`), it is plain Jest.
 */
import { spawn } from 'node:child_process';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
const JEST = path.join(ROOT, 'node_modules', '.bin', 'jest');

/** The Docker stream, by path: everything else goes to the shared stream. */
export const DOCKER_STREAM = [
  // Containers and networks on the daemon.
  'test/agent.test.ts',
  'test/agentic.test.ts',
  'test/bad-input.test.ts',
  'test/cancel.test.ts',
  'test/daemon-json.test.ts',
  'test/docker-preflight.test.ts',
  'test/docker-sandbox.test.ts',
  'test/faults-kill.test.ts',
  'test/faults-server.test.ts',
  'test/inspect-logs.test.ts',
  'test/launch-ctrl-c.test.ts',
  'test/launch-smoke.test.ts',
  'test/limits.test.ts',
  'test/sample-sandbox.test.ts',
  'test/sandbox-budget.test.ts',
  'test/secrets.test.ts',
  'test/stuck-retries.test.ts',
  // Rates against the clock.
  'test/accounts.test.ts',
  'test/load.test.ts',
  'test/orchestration.test.ts',
  'test/pacing.test.ts',
  'test/ramp.test.ts',
];

interface Stream {
  name: string;
  args: string[];
}

function run({ name, args }: Stream): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(JEST, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    // Line by line, each line named by its stream: the two runs' output interleaves.
    const prefix = (out: NodeJS.WriteStream) => {
      let partial = '';
      return (chunk: Buffer): void => {
        const lines = (partial + chunk.toString()).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) out.write(`[${name}] ${line}\n`);
      };
    };
    child.stdout.on('data', prefix(process.stdout));
    child.stderr.on('data', prefix(process.stderr));
    child.on('close', (code, signal) => {
      console.log(`[${name}] jest ended: ${signal ?? `exit ${code}`}`);
      resolve(code ?? 1);
    });
  });
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.length > 0) return run({ name: 'jest', args });
  const anchored = DOCKER_STREAM.map((file) => `/${file.replace(/\./g, '\\.')}$`);
  const started = Date.now();
  const codes = await Promise.all([
    run({ name: 'docker', args: ['--runTestsByPath', ...DOCKER_STREAM] }),
    run({ name: 'shared', args: ['--testPathIgnorePatterns', '/node_modules/', ...anchored] }),
  ]);
  const worst = Math.max(...codes);
  console.log(
    `npm test: both streams ended in ${Math.round((Date.now() - started) / 1000)} s, ` +
      (worst === 0 ? 'both passed' : `exit codes ${codes.join(' and ')}`),
  );
  return worst;
}

if (require.main === module) {
  void main().then((code) => process.exit(code));
}

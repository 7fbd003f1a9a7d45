/**
 * What a worker process loads before it has a task (issue 14: lean workers). Every worker imports
 * all the providers and the sandbox code, but the Anthropic SDK and dockerode (with ssh2) are
 * loaded only by the first call that needs them: about 440 modules and 20 MiB resident that a
 * worker of OpenAI-compatible tasks without sandboxes never pays for. Read from the built worker
 * (`npm test` builds first), in a process of its own, as the supervisor starts it.
 */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';

const WORKER = path.join(__dirname, '..', 'dist', 'workers', 'task-worker.js');

/** The packages a fresh node process has loaded after requiring `entry`, by name. */
function packagesLoadedBy(entry: string): Set<string> {
  const script = `
    require(${JSON.stringify(entry)});
    const names = Object.keys(require.cache).map(
      (file) => file.match(/node_modules\\/((?:@[^/]+\\/)?[^/]+)/)?.[1],
    );
    process.stdout.write(JSON.stringify([...new Set(names.filter(Boolean))]));
  `;
  return new Set(JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })));
}

describe('a worker process at start', () => {
  let loaded: Set<string>;
  beforeAll(() => {
    loaded = packagesLoadedBy(WORKER);
  });

  test('has the Temporal worker and the OpenAI SDK loaded', () => {
    // The probe sees what the worker loads: without these it would prove nothing.
    expect(loaded).toContain('@temporalio/worker');
    expect(loaded).toContain('openai');
  });

  test('has not loaded the Anthropic SDK or dockerode', () => {
    expect(
      [...loaded].filter((name) => /anthropic|dockerode|docker-modem|ssh2/.test(name)),
    ).toEqual([]);
  });
});

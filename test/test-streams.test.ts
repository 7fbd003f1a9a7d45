/**
 * `npm test` runs two streams at once (scripts/test.ts); a file that makes containers must be in
 * the Docker stream, or it would run beside another that counts the daemon's networks.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { DOCKER_STREAM } from '../scripts/test';

const ROOT = path.resolve(__dirname, '..');

async function testFiles(dir: string): Promise<string[]> {
  const entries = await fs.readdir(path.join(ROOT, dir), { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((e) =>
      e.isDirectory() && e.name !== 'fixtures'
        ? testFiles(path.join(dir, e.name))
        : Promise.resolve(e.name.endsWith('.test.ts') ? [path.join(dir, e.name)] : []),
    ),
  );
  return nested.flat();
}

test('every file of the Docker stream exists', async () => {
  for (const file of DOCKER_STREAM)
    await expect(fs.access(path.join(ROOT, file))).resolves.toBe(undefined);
});

test('every test file that talks to the Docker daemon is in the Docker stream', async () => {
  const docker: string[] = [];
  const self = path.relative(ROOT, __filename);
  for (const file of await testFiles('test')) {
    if (file === self) continue;
    const text = await fs.readFile(path.join(ROOT, file), 'utf8');
    if (/requireDocker|ensureBusyboxImage|from 'dockerode'/.test(text)) docker.push(file);
  }
  expect(docker.length).toBeGreaterThan(5);
  expect(docker.filter((file) => !DOCKER_STREAM.includes(file))).toEqual([]);
});

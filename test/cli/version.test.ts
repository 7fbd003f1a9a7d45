import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { REPO_ROOT, runCli } from '../helpers/cli';

test('steward --version prints the package version and exits 0', async () => {
  const { version } = JSON.parse(
    await fs.readFile(path.join(REPO_ROOT, 'package.json'), 'utf8'),
  ) as { version: string };
  for (const flag of ['--version', '-V']) {
    const result = await runCli([flag]);
    expect({ code: result.code, stdout: result.stdout.trim() }).toEqual({
      code: 0,
      stdout: version,
    });
  }
});

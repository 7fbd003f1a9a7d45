/**
 * A second install of Steward whose workflow code differs from this build's: what a user has after
 * changing workflow code and rebuilding while an eval set runs. The copy shares node_modules and
 * everything but the workflow bundle with this build.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { REPO_ROOT, tempDir } from './cli';

export interface Variant {
  root: string;
  /** Its `bin/steward.js`. */
  bin: string;
  /** Its workflow bundle, for replays. */
  bundlePath: string;
}

/**
 * Copies `src` and edits `file` (relative to `src/workflows`) with `edit`, bundles the copy's
 * workflows, and lays out an install around the bundle. Run `npm run build` first.
 */
export async function workflowVariant(
  file: string,
  edit: (code: string) => string,
): Promise<Variant> {
  const root = await tempDir('steward-variant-');
  await fs.cp(path.join(REPO_ROOT, 'src'), path.join(root, 'src'), { recursive: true });
  await fs.cp(path.join(REPO_ROOT, 'dist'), path.join(root, 'dist'), { recursive: true });
  await fs.cp(path.join(REPO_ROOT, 'bin'), path.join(root, 'bin'), { recursive: true });
  await fs.copyFile(path.join(REPO_ROOT, 'package.json'), path.join(root, 'package.json'));
  await fs.symlink(
    await fs.realpath(path.join(REPO_ROOT, 'node_modules')),
    path.join(root, 'node_modules'),
  );
  const source = path.join(root, 'src', 'workflows', file);
  const before = await fs.readFile(source, 'utf8');
  const after = edit(before);
  if (after === before) throw new Error(`the edit changed nothing in src/workflows/${file}`);
  await fs.writeFile(source, after);
  const { code } = await bundleWorkflowCode({
    workflowsPath: path.join(root, 'src', 'workflows', 'index.ts'),
    // As the build bundles it (src/workers/bundle.ts), from the copy.
    preloadModules: [path.join(root, 'src', 'workflows', 'preload.ts')],
    workflowInterceptorModules: [path.join(root, 'src', 'workflows', 'sequenced-only.ts')],
    logger: quiet,
  });
  const bundlePath = path.join(root, 'dist', 'workflow-bundle.js');
  await fs.writeFile(bundlePath, code);
  return { root, bin: path.join(root, 'bin', 'steward.js'), bundlePath };
}

const quiet = {
  info: () => undefined,
  warn: () => undefined,
  error: console.error,
  debug: () => undefined,
  trace: () => undefined,
  log: () => undefined,
};

/**
 * Inserts `statement` before the line that holds `anchor`, at its indentation, and `imports` at
 * the top of the file.
 */
export function insertBefore(anchor: string, statement: string, imports: string) {
  return (code: string): string => {
    const lines = code.split('\n');
    const at = lines.findIndex((l) => l.includes(anchor));
    if (at < 0) throw new Error(`anchor "${anchor}" not found: update the test's edit`);
    const indent = /^\s*/.exec(lines[at])?.[0] ?? '';
    lines.splice(at, 0, `${indent}${statement}`);
    return `${imports}\n${lines.join('\n')}`;
  };
}

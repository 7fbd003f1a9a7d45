/**
 * Workflow code is bundled once, at build time (`npm run build` runs this file), and every worker
 * process loads the same bundle instead of running webpack at start-up.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';

/** The package root, from `src/workers` (ts-jest) and `dist/workers` alike. */
export const PACKAGE_ROOT = path.resolve(__dirname, '..', '..');

export const WORKFLOW_BUNDLE_PATH = path.join(PACKAGE_ROOT, 'dist', 'workflow-bundle.js');

/** The bundle's path, with a clear error when the package was not built. */
export async function workflowBundlePath(): Promise<string> {
  try {
    await fs.access(WORKFLOW_BUNDLE_PATH);
    return WORKFLOW_BUNDLE_PATH;
  } catch {
    throw new Error(`workflow bundle missing at ${WORKFLOW_BUNDLE_PATH}: run \`npm run build\``);
  }
}

async function buildBundle(): Promise<void> {
  // Loaded lazily: webpack is a build-time cost, never a worker's.
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    // Shared by every workflow the worker runs: see src/workflows/preload.ts.
    preloadModules: [require.resolve('../workflows/preload')],
    logger: {
      info: () => undefined,
      warn: console.warn,
      error: console.error,
      debug: () => undefined,
      trace: () => undefined,
      log: () => undefined,
    },
  });
  await fs.mkdir(path.dirname(WORKFLOW_BUNDLE_PATH), { recursive: true });
  await fs.writeFile(WORKFLOW_BUNDLE_PATH, code);
}

if (require.main === module) {
  buildBundle().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}

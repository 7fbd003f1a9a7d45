/**
 * Workflow code is bundled once, at build time (`npm run build` runs this file), and every worker
 * process loads the same bundle instead of running webpack at start-up.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';

/** The package root, from `src/workers` (ts-jest) and `dist/workers` alike. */
export const PACKAGE_ROOT = path.resolve(__dirname, '..', '..');

export const WORKFLOW_BUNDLE_PATH = path.join(PACKAGE_ROOT, 'dist', 'workflow-bundle.js');

/** Installed for every workflow: each decides only on events a workflow task has sequenced. */
export const WORKFLOW_INTERCEPTOR_MODULES = [require.resolve('../workflows/sequenced-only')];

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
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
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
  await fs.writeFile(WORKFLOW_BUNDLE_PATH, withoutLibrarySources(code));
}

const INLINE_SOURCE_MAP = '//# sourceMappingURL=data:';

/** A source map's fields this file reads (version 3). */
interface SourceMap {
  sources: string[];
  sourcesContent?: (string | null)[];
}

/**
 * The bundle with its inline source map keeping the text of Steward's own sources only. The SDK
 * requires the map and keeps it whole in memory twice for every task queue a worker serves: the
 * parsed JSON in the main thread and a source-map consumer in the workflow thread. The text of
 * the libraries (zod, the SDK's workflow runtime: 1.6 of its 1.9 MB) cost a worker about 24 MiB
 * resident per queue. Only the enhanced stack trace query reads source text, and only with the
 * worker option `showStackTraceSources`, which Steward leaves off; ours stays for whoever turns
 * it on. Every mapping stays, so each stack frame still names its file and line, libraries'
 * included.
 */
export function withoutLibrarySources(code: string): string {
  const at = code.lastIndexOf(INLINE_SOURCE_MAP);
  const data = at < 0 ? -1 : code.indexOf('base64,', at);
  if (data < 0) throw new Error('the workflow bundle has no inline source map');
  const start = data + 'base64,'.length;
  const map = JSON.parse(
    Buffer.from(code.slice(start).trimEnd(), 'base64').toString('utf8'),
  ) as SourceMap;
  map.sourcesContent = map.sources.map((source, i) =>
    source.includes('/node_modules/') ? null : (map.sourcesContent?.[i] ?? null),
  );
  return `${code.slice(0, start)}${Buffer.from(JSON.stringify(map)).toString('base64')}\n`;
}

if (require.main === module) {
  buildBundle().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}

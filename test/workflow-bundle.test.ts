/**
 * What each workflow execution pays to start. With the SDK's reusable V8 context (the default),
 * every module of the bundle is evaluated afresh for each workflow execution unless the bundle
 * preloads it, and a sample is a workflow execution. zod evaluated per workflow made each sample
 * workflow 50 times dearer to start and each cached one far heavier (bench:load 10 × 200: 316 s
 * and 1 GiB workers, against 103 s and 334 MiB with it preloaded).
 *
 * The bundle is loaded here the way the SDK loads it (src/workers/bundle.ts builds it; the
 * worker routes webpack's module cache through `globalThis.__webpack_module_cache__`, filling a
 * shared cache during `preloadModules()` and a per-workflow one after), and the modules each
 * workflow evaluates are counted.
 */
import { promises as fs } from 'node:fs';
import * as vm from 'node:vm';
import { WORKFLOW_BUNDLE_PATH, withoutLibrarySources } from '../src/workers/bundle';

interface Loaded {
  /** Module ids evaluated once per worker. */
  shared: string[];
  /** Module ids evaluated again for each workflow execution. */
  perWorkflow: string[];
}

async function loadLikeTheWorker(): Promise<Loaded> {
  const code = await fs.readFile(WORKFLOW_BUNDLE_PATH, 'utf8');
  const shared = new Map<string | symbol, unknown>();
  let perWorkflow = new Map<string | symbol, unknown>();
  let preloading = true;
  const context = vm.createContext({});
  const cache = new Proxy(
    {},
    {
      get: (_, id) => shared.get(id) ?? perWorkflow.get(id),
      set: (_, id, module) => {
        (preloading ? shared : perWorkflow).set(id, module);
        return true;
      },
    },
  );
  Object.defineProperty(context, '__webpack_module_cache__', { value: cache });
  new vm.Script(code, { filename: WORKFLOW_BUNDLE_PATH }).runInContext(context);
  const api = vm.runInContext('globalThis.__TEMPORAL__', context) as {
    preloadModules?: () => void;
    importWorkflows: () => Record<string, unknown>;
  };
  api.preloadModules?.();
  preloading = false;
  perWorkflow = new Map();
  const workflows = api.importWorkflows();
  expect(Object.keys(workflows)).toEqual(
    expect.arrayContaining(['evalSet', 'evalTask', 'sampleWorkflow']),
  );
  return {
    shared: [...shared.keys()].map(String),
    perWorkflow: [...perWorkflow.keys()].map(String),
  };
}

test('zod is evaluated once per worker, not once per workflow execution', async () => {
  const { shared, perWorkflow } = await loadLikeTheWorker();
  const zod = (ids: string[]) => ids.filter((id) => id.includes('node_modules/zod/'));
  expect(zod(shared).length).toBeGreaterThan(50);
  expect(zod(perWorkflow)).toEqual([]);
});

test('a workflow execution evaluates Steward’s workflow modules and little else', async () => {
  const { perWorkflow } = await loadLikeTheWorker();
  const ours = perWorkflow.filter((id) => !id.includes('node_modules/'));
  // The SDK's own workflow modules hold per-workflow state, so it evaluates them per workflow.
  // Any other library evaluated per workflow belongs in src/workflows/preload.ts.
  const libraries = perWorkflow.filter(
    (id) => id.includes('node_modules/') && !id.includes('node_modules/@temporalio/'),
  );
  expect(ours.length).toBeGreaterThan(5);
  expect(libraries).toEqual([]);
});

describe('the bundle’s inline source map', () => {
  const inline = (map: object) =>
    `code();\n//# sourceMappingURL=data:application/json;charset=utf-8;base64,${Buffer.from(
      JSON.stringify(map),
    ).toString('base64')}\n`;
  const mapOf = (code: string) =>
    JSON.parse(
      Buffer.from(code.slice(code.lastIndexOf('base64,') + 7).trimEnd(), 'base64').toString('utf8'),
    ) as { sources: string[]; sourcesContent: (string | null)[]; mappings: string };

  test('keeps the text of Steward’s sources and drops the libraries’, every mapping kept', () => {
    const map = {
      version: 3,
      sources: ['/repo/src/workflows/sample.ts', '/repo/node_modules/zod/v4/core/core.js'],
      sourcesContent: ['export function sampleWorkflow() {}', 'export const z = 1;'],
      names: [],
      mappings: 'AAAA;AACA',
    };
    const trimmed = withoutLibrarySources(inline(map));
    expect(trimmed.startsWith('code();\n//# sourceMappingURL=data:')).toBe(true);
    expect(mapOf(trimmed)).toEqual({ ...map, sourcesContent: [map.sourcesContent[0], null] });
  });

  test('a bundle without one is refused: the SDK could not load it', () => {
    expect(() => withoutLibrarySources('code();\n')).toThrow(/no inline source map/);
  });

  test('the built bundle carries no library source text', async () => {
    const map = mapOf(await fs.readFile(WORKFLOW_BUNDLE_PATH, 'utf8'));
    const texts = map.sources.map((source, i) => [source, map.sourcesContent[i]] as const);
    const libraries = texts.filter(([source]) => source.includes('/node_modules/'));
    expect(libraries.length).toBeGreaterThan(50);
    expect(libraries.filter(([, text]) => text !== null)).toEqual([]);
    const sample = texts.find(([source]) => source.endsWith('src/workflows/sample.ts'));
    expect(sample?.[1]).toContain('export async function sampleWorkflow');
    expect(map.mappings.length).toBeGreaterThan(100_000);
  });
});

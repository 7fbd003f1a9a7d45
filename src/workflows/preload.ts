/**
 * Evaluated once per worker, not once per workflow: the bundle lists this module in
 * `preloadModules` (src/workers/bundle.ts), so it and what it imports land in the reusable V8
 * context's shared module cache, deep-frozen. Everything else in the bundle is evaluated afresh
 * for each workflow execution, and zod is about 90 modules: evaluated per workflow it made every
 * sample workflow 50 times dearer to start (11 ms against 0.2 ms) and every cached one heavier.
 *
 * A shared module must not change after this: the SDK freezes it. zod keeps a little module state
 * that it sets up lazily, so this sets it up now: the locale and `jitless` (otherwise the first
 * object parsed probes `new Function` and caches the answer), then one schema built and parsed,
 * for whatever else zod makes on first use (in 4.6, its default memoizer). test/replay-saved
 * fails at once if a zod upgrade adds lazy state this misses: every workflow task would fail on
 * the frozen object. The schemas themselves are built per workflow (src/workflows/schemas.ts).
 */
import { z } from 'zod';

z.config({ ...z.locales.en(), jitless: true });
z.strictObject({ warm: z.array(z.number()) }).safeParse({ warm: [1] });

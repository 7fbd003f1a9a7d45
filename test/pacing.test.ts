/**
 * Pacing from the provider's headers, through the real `openai` SDK over HTTP to the simulated
 * provider: the answers' `x-ratelimit-*` headers reach the account's owner, which spaces the
 * calls once the requests limit runs low, instead of sending them into 429s.
 */
import { createModel } from '../src/models';
import { thisWorker } from '../src/activities/deps';
import { AccountHost } from '../src/models/account-host';
import { ProviderAccounts } from '../src/models/accounts';
import { startSimProvider } from '../src/sim/provider';

const MODEL = 'openai-api/sim/m';

/** Runs `calls` one-call requests, `parallel` at a time, through one host's account. */
async function drive(url: string, calls: number, parallel: number, paced: boolean) {
  const env = { SIM_BASE_URL: url, SIM_API_KEY: 'sim' };
  const host = new AccountHost({ now: Date.now, owner: thisWorker() });
  const accounts = new ProviderAccounts({
    source: host,
    connections: { type: 'fixed', n: 100 },
    env,
  });
  const raw = createModel(MODEL, {}, env, paced ? accounts.hooks(MODEL) : {});
  const model = accounts.govern(MODEL, raw, { evalSetId: 'e', tasks: ['t'] });
  let next = 0;
  const pacingSeen: boolean[] = [];
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < calls) {
        const i = next++;
        await model.generate([{ role: 'user', content: `ANSWER: ${i}` }]);
        pacingSeen.push(host.snapshot()[0].pacing.pacing);
      }
    }),
  );
  return { host, pacingSeen };
}

describe('pacing from x-ratelimit-* headers', () => {
  test('a 120-requests-a-minute account: paced, no 429s where unpaced calls meet many', async () => {
    const calls = 136;
    const paced = await startSimProvider({ rpm: 120, latencyMs: 50 });
    const unpaced = await startSimProvider({ rpm: 120, latencyMs: 50 });
    try {
      const started = Date.now();
      const run = await drive(paced.url, calls, 16, true);
      const pacedMs = Date.now() - started;
      const [p, u] = await Promise.all([
        Promise.resolve(paced.stats()),
        drive(unpaced.url, calls, 16, false).then(() => unpaced.stats()),
      ]);
      console.log(
        `${calls} calls at 120 rpm: paced ${p.rate_limited} 429s in ${pacedMs} ms; unpaced ${u.rate_limited} 429s`,
      );
      expect(p.by_status['200']).toBe(calls);
      expect(u.by_status['200']).toBe(calls);
      // The first answers come back before the bucket runs low: from then on, every call is
      // spaced at the refill rate (2 a second) and none is refused.
      expect(p.rate_limited).toBeLessThanOrEqual(1);
      expect(u.rate_limited).toBeGreaterThan(10);
      expect(run.pacingSeen.some((x) => x)).toBe(true);
      const state = run.host.snapshot()[0].pacing;
      expect(state.limits.requests?.limit).toBe(120);
    } finally {
      await paced.close();
      await unpaced.close();
    }
  });
});

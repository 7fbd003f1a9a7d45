/**
 * The simulated provider the ramp bench and demo run against, and the rate it sustains.
 *
 * Its one binding limit is concurrency: 120 requests at once, each taking 1.25-1.75 s. A sample
 * is a chain of {@link STEPS_PER_SAMPLE} `generate` calls made one after another, so it holds
 * one request at a time and the provider's capacity is about 120 concurrent samples: inside the
 * ramp's default range [50, 200], so the ramp has room to climb and a wall to find. With four
 * calls per sample the samples finish at about 20/s, well below the 40-50/s Steward's
 * orchestration sustains on a 2-core machine, so the provider, not Temporal, is the bottleneck.
 */
import type { SimProviderOptions } from '../../src/sim/provider';

/** `generate` steps in each sample's solver chain. */
export const STEPS_PER_SAMPLE = 4;

export const PROVIDER: Required<
  Pick<SimProviderOptions, 'concurrency' | 'latencyMs' | 'jitterMs' | 'seed'>
> = {
  concurrency: 120,
  latencyMs: 1_250,
  jitterMs: 500,
  seed: 7,
};

/** The service name of the model: the CLI reads `SIM_BASE_URL` and `SIM_API_KEY`. */
export const MODEL = 'openai-api/sim/bench';
export const API_KEY = 'sim-bench';

/** Seconds an admitted request takes on average: the jitter is uniform in [0, jitterMs]. */
export function meanLatencySeconds(provider: typeof PROVIDER): number {
  return (provider.latencyMs + provider.jitterMs / 2) / 1000;
}

/**
 * Requests per second the provider sustains with no request refused: every slot busy all the
 * time, each request holding its slot for the mean latency (Little's law: rate = in flight /
 * time in system). 120 / 1.5 s = 80 requests/s.
 */
export function sustainableRate(provider: typeof PROVIDER): number {
  return provider.concurrency / meanLatencySeconds(provider);
}

/** The environment that points `openai-api/sim/*` models at the provider. */
export function simEnvironment(url: string): NodeJS.ProcessEnv {
  return { SIM_BASE_URL: url, SIM_API_KEY: API_KEY };
}

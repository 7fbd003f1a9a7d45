/**
 * Finding and removing sandboxes by label: what a crashed worker left behind (at fleet start-up)
 * or what the user asks to clear (`steward sandbox cleanup [name]`). Also the daemon's CPU count,
 * which sets the default sandbox budget.
 */

import type Docker from 'dockerode';

import { dockerUnreachable } from '../docker/preflight';
import { retryRemoval } from './docker';
import { SandboxLabel } from './types';

/** Which sandboxes to reap; unset fields match anything Steward created. */
export interface ReapFilter {
  evalSet?: string;
  task?: string;
  sampleId?: string | number;
  epoch?: number;
}

/** What {@link reapSandboxes} removed, and what it could not. */
export interface ReapResult {
  containers: number;
  networks: number;
  errors: string[];
}

/**
 * Removes every container, then every network, carrying Steward's labels and matching `filter`.
 * Containers go first because a network with endpoints cannot be removed.
 */
export async function reapSandboxes(docker: Docker, filter: ReapFilter = {}): Promise<ReapResult> {
  const label = [`${SandboxLabel.managed}=true`];
  if (filter.evalSet !== undefined) label.push(`${SandboxLabel.evalSet}=${filter.evalSet}`);
  if (filter.task !== undefined) label.push(`${SandboxLabel.task}=${filter.task}`);
  if (filter.sampleId !== undefined) label.push(`${SandboxLabel.sample}=${filter.sampleId}`);
  if (filter.epoch !== undefined) label.push(`${SandboxLabel.epoch}=${filter.epoch}`);
  const filters = JSON.stringify({ label });

  const result: ReapResult = { containers: 0, networks: 0, errors: [] };
  try {
    const containers = await docker.listContainers({ all: true, filters });
    await Promise.all(
      containers.map((info) =>
        retryRemoval(() => docker.getContainer(info.Id).remove({ force: true, v: true })).then(
          () => void result.containers++,
          (error: Error) =>
            void result.errors.push(`container ${info.Names[0] ?? info.Id}: ${error.message}`),
        ),
      ),
    );
    const networks = await docker.listNetworks({ filters });
    await Promise.all(
      networks.map((info) =>
        retryRemoval(() => docker.getNetwork(info.Id).remove()).then(
          () => void result.networks++,
          (error: Error) => void result.errors.push(`network ${info.Name}: ${error.message}`),
        ),
      ),
    );
  } catch (error) {
    throw dockerUnreachable(docker, error) ?? error;
  }
  return result;
}

/** CPUs the Docker daemon reports (its VM's, under Docker Desktop); the default budget is twice this. */
export async function dockerCpuCount(docker: Docker): Promise<number> {
  try {
    const info = (await docker.info()) as { NCPU?: number };
    return info.NCPU && info.NCPU > 0 ? info.NCPU : 1;
  } catch (error) {
    throw dockerUnreachable(docker, error) ?? error;
  }
}

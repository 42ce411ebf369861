import type { Region } from './settings.js';
import { readFileIfExists, writeFileAtomic } from '../../cli/atomic-file.js';
import { failure } from '../../cli/errors.js';
import { stateFile } from './stack.js';

/**
 * What `deploy` started in one stack and region, kept in `deploy.json` so that a re-run, `status`
 * and `down` know the processes (pid, address, command line, config hash) without guessing.
 */

export interface ServiceState {
  readonly name: string;
  readonly kind: 'node' | 'orders';
  readonly addr: string;
  /** A node's metrics listener and gRPC listener (absent in state files of older versions). */
  readonly metricsAddr?: string;
  readonly grpcAddr?: string;
  readonly pid: number;
  readonly configHash: string;
  readonly dataDir: string;
  readonly logFile: string;
  readonly healthUrl: string;
  readonly argv: readonly string[];
  readonly startedAt: string;
}

export interface DeployState {
  readonly stack: string;
  readonly region: Region;
  readonly updatedAt: string;
  readonly services: readonly ServiceState[];
}

export function readState(stack: string, region: Region): DeployState | undefined {
  const path = stateFile(stack, region);
  const text = readFileIfExists(path);
  if (text === undefined) return undefined;
  try {
    const state = JSON.parse(text) as DeployState;
    if (!Array.isArray(state.services)) throw new Error('no services list');
    return state;
  } catch (err) {
    throw failure(`deploy state ${path} is unreadable (${(err as Error).message}); stop the processes by hand and remove it`);
  }
}

export function writeState(stack: string, region: Region, services: readonly ServiceState[]): void {
  const state: DeployState = { stack, region, updatedAt: new Date().toISOString(), services };
  writeFileAtomic(stateFile(stack, region), JSON.stringify(state, null, 2) + '\n');
}

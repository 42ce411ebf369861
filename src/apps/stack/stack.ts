import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { xdgStateHome } from '../../config/paths.js';
import { SETTINGS } from '../../config/settings.js';
import { type Region, type StackDefinition, stackLayout } from './settings.js';
import { compiledPath } from '../../util/repo-root.js';

/**
 * What a deployed stack consists of: one process per blob node plus the orders service, each with
 * its own address, data dir, log file and command line. Pure: computing it touches nothing, so
 * `deploy --dry-run` can show it.
 *
 *   $XDG_STATE_HOME/blobstore/<stack>/<region>/
 *     deploy.json            state: pids, ports, config hashes (status, down, re-deploy)
 *     <stack>-<region>-<i>/  data dir of node i
 *     orders/                data dir of the orders service
 *     logs/<service>.log     stdout and stderr of each service (JSON log lines)
 *
 * Every node runs its metrics listener (metrics, /health, the web UI) and gRPC on loopback ports of
 * the stack's block (settings.ts has the layout).
 */

export interface ServiceSpec {
  readonly name: string;
  readonly kind: 'node' | 'orders';
  readonly addr: string;
  readonly port: number;
  /** A node's metrics listener (metrics, /health, the web UI at /) and gRPC listener, host:port. */
  readonly metricsAddr?: string;
  readonly grpcAddr?: string;
  /** Every port the service listens on (checked free before it starts). */
  readonly ports: readonly number[];
  readonly dataDir: string;
  readonly logFile: string;
  /** Arguments after `node`: the CLI entry point and its flags. */
  readonly argv: readonly string[];
  /**
   * Hash of what makes the service what it is: its flags, its config file section and the
   * BLOBSTORE_* environment it inherits. A change means restart. Seed lists are left out: they only
   * matter when a node first joins, so adding a node does not restart the others.
   */
  readonly configHash: string;
  readonly healthUrl: string;
}

export const LOOPBACK = '127.0.0.1';

/** dist/src/main.js: the command a stack's processes run. */
export const CLI_ENTRY = compiledPath('main.js');

export function stateRoot(): string {
  return join(xdgStateHome(), 'blobstore');
}

export function regionDir(stack: string, region: Region): string {
  return join(stateRoot(), stack, region);
}

export function stateFile(stack: string, region: Region): string {
  return join(regionDir(stack, region), 'deploy.json');
}

export function nodeId(stack: string, region: Region, index: number): string {
  return `${stack}-${region}-${index}`;
}

const hash = (parts: readonly unknown[]): string => createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 16);

/** What a service reads besides its flags: the config file and the environment. */
export interface ServiceInputs {
  readonly file: Readonly<Record<string, unknown>>;
  readonly env: NodeJS.ProcessEnv;
}

/** The environment a service starts with: ours, minus the orders API credential it has no use for. */
export function serviceEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { ORDERS_API_KEY: _key, ORDERS_API_BASE_URL: _url, ...rest } = env;
  return rest;
}

function settingsEnv(env: NodeJS.ProcessEnv): [string, string | undefined][] {
  return Object.entries(env).filter(([k]) => k.startsWith('BLOBSTORE_')).sort(([a], [b]) => (a < b ? -1 : 1));
}

/** True when the node declares a default-policy setting (stack `policy` is passed only then). */
export const nodeTakesPolicy = (): boolean => Object.hasOwn(SETTINGS, 'defaultPolicy');

export function desiredServices(stack: StackDefinition, region: Region, inputs: ServiceInputs): ServiceSpec[] {
  const dir = regionDir(stack.name, region);
  const envSettings = settingsEnv(inputs.env);
  const layout = stackLayout(stack, region);
  const addrs = layout.nodes.map((ports) => `${LOOPBACK}:${ports.api}`);
  const services: ServiceSpec[] = layout.nodes.map((ports, i) => {
    const id = nodeId(stack.name, region, i);
    const dataDir = join(dir, id);
    const metricsAddr = `${LOOPBACK}:${ports.metrics}`;
    const grpcAddr = `${LOOPBACK}:${ports.grpc}`;
    const own = [
      CLI_ENTRY, 'serve', '--data-dir', dataDir, '--listen', addrs[i]!, '--node-id', id, '--region', region,
      '--metrics-addr', metricsAddr, '--grpc-addr', grpcAddr,
      ...(stack.policy && nodeTakesPolicy() ? ['--default-policy', stack.policy] : []),
    ];
    // Each node names the others (docs/cluster.md, Bootstrap: the lowest node id forms the cluster).
    const seeds = addrs.filter((_, j) => j !== i).join(',');
    return {
      name: `node-${i}`, kind: 'node', addr: addrs[i]!, port: ports.api, metricsAddr, grpcAddr, ports: [ports.api, ports.metrics, ports.grpc],
      dataDir, logFile: join(dir, 'logs', `node-${i}.log`),
      argv: seeds ? [...own, '--seed-nodes', seeds] : own,
      configHash: hash([own, inputs.file.node ?? null, envSettings]),
      healthUrl: `http://${addrs[i]}/healthz`,
    };
  });
  if (layout.ordersPort !== undefined) {
    const addr = `${LOOPBACK}:${layout.ordersPort}`;
    const dataDir = join(dir, 'orders');
    const argv = [
      CLI_ENTRY, 'orders', 'serve', '--orders-addr', addr, '--orders-data-dir', dataDir,
      ...(stack.ordersApiKeysFile ? ['--orders-api-keys-file', stack.ordersApiKeysFile] : []),
    ];
    services.push({
      name: 'orders', kind: 'orders', addr, port: layout.ordersPort, ports: [layout.ordersPort], dataDir, logFile: join(dir, 'logs', 'orders.log'),
      argv, configHash: hash([argv, inputs.file.orders ?? null, envSettings]), healthUrl: `http://${addr}/healthz`,
    });
  }
  return services;
}

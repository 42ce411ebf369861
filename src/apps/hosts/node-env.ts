import { join } from 'node:path';
import { coerce } from '../../config/load.js';
import { SETTINGS, type SettingKey, envName } from '../../config/settings.js';
import { type ClusterDescription, type HostNode, hostPort, seedNodes } from './cluster.js';

/**
 * A node's settings as the BLOBSTORE_* environment a host starts it with (the names
 * src/config/settings.ts's envName() gives), shared by the systemd and container targets. Secrets
 * and TLS keys go by file path only: the variables name files the host (or the container's
 * mounts) provides, never their contents.
 */

export interface NodeEnvOptions {
  /** The data dir the process sees: the node's own, or the container's volume. */
  readonly dataDir?: string;
}

/** The config file a host-installed node reads: absent by default, so env and defaults decide. */
export const configFileOf = (cluster: ClusterDescription): string => join(cluster.configDir, 'config.json');

export function nodeEnv(cluster: ClusterDescription, node: HostNode, options: NodeEnvOptions = {}): [string, string][] {
  const env = new Map<string, string>();
  const set = (key: SettingKey, value: string | undefined): void => {
    if (value !== undefined) env.set(envName(key), value);
  };
  set('nodeId', node.id);
  set('region', node.region);
  set('dataDir', options.dataDir ?? node.dataDir);
  set('listen', hostPort(node.bind, node.ports.api));
  set('advertiseAddr', hostPort(node.host, node.ports.api));
  set('grpcAddr', hostPort(node.bind, node.ports.grpc));
  set('metricsAddr', hostPort(node.bind, node.ports.metrics));
  set('seedNodes', seedNodes(cluster).join(','));
  set('clusterSecretFile', cluster.clusterSecretFile);
  set('authTokensFile', cluster.authTokensFile);
  set('tlsCert', node.tls?.certFile);
  set('tlsKey', node.tls?.keyFile);
  set('tlsCa', node.tls?.caFile);
  set('logFormat', 'json');
  for (const [key, value] of node.settings) set(key, value);
  // Not a setting: where the node looks for its config file (src/config/paths.ts).
  env.set('BLOBSTORE_CONFIG', configFileOf(cluster));
  return [...env];
}

/** The lowest port a node listens on, when it is one only a privileged process may bind (below 1024). */
export function privilegedPort(ports: HostNode['ports']): number | undefined {
  const lowest = Math.min(ports.api, ports.grpc, ports.metrics);
  return lowest < 1024 ? lowest : undefined;
}

/** Every host path a node reads besides its data dir: secrets and TLS files. */
export function nodeFiles(cluster: ClusterDescription, node: HostNode): string[] {
  const files = [cluster.clusterSecretFile, cluster.authTokensFile, node.tls?.certFile, node.tls?.keyFile, node.tls?.caFile];
  return [...new Set(files.filter((f): f is string => f !== undefined))];
}

/** After shutdownTimeoutMs for in-flight requests, this long for the node's last index commit. */
const STOP_MARGIN_SECONDS = 20;

/** How long a supervisor waits after SIGTERM before it kills the node (systemd, Kubernetes). */
export function stopTimeoutSeconds(settings: ReadonlyMap<SettingKey, string>): number {
  const raw = settings.get('shutdownTimeoutMs');
  const ms = raw === undefined ? SETTINGS.shutdownTimeoutMs.default() : (coerce('shutdownTimeoutMs', SETTINGS.shutdownTimeoutMs, raw, 'settings') as number);
  return Math.ceil(ms / 1000) + STOP_MARGIN_SECONDS;
}

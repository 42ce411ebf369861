import type { ClusterDescription, HostNode } from './cluster.js';
import { DATA_DIR, IMAGE_UID } from './image.js';
import { nodeEnv, nodeFiles, privilegedPort, stopTimeoutSeconds } from './node-env.js';
import { type RenderedFile, file, renderedBy } from './rendered.js';

/**
 * The container target: each node runs the image built from deploy/Containerfile on its own host,
 * with the host's network (so it listens and is reached exactly where the description says, as a
 * systemd unit would), its data dir bind-mounted at the image's volume and its secret and TLS
 * files mounted read-only at the same paths. Per node: `<id>.env` (podman's --env-file: KEY=VALUE,
 * taken literally) and `run-<id>.sh`, which creates the data dir for the image's user and starts
 * the container.
 */

export function renderContainer(cluster: ClusterDescription, nodes: readonly HostNode[]): RenderedFile[] {
  return nodes.flatMap((node) => [
    file(`${node.id}.env`, renderContainerEnv(cluster, node)),
    file(`run-${node.id}.sh`, renderRunScript(cluster, node), 0o755),
  ]);
}

export function renderContainerEnv(cluster: ClusterDescription, node: HostNode): string {
  const lines = nodeEnv(cluster, node, { dataDir: DATA_DIR }).map(([key, value]) => {
    if (value.includes('\n')) throw new Error(`an env file value may not hold a line break: ${key}`);
    return `${key}=${value}`;
  });
  return [renderedBy(cluster.name, node.region, 'container'), `# Settings of node ${node.id} inside its container (podman run --env-file).`, ...lines].join('\n');
}

export const containerName = (node: HostNode): string => `blobstore-${node.id}`;

/** `podman` arguments that start the node's container; `envFile` is where its env file is. */
export function podmanRunArgs(cluster: ClusterDescription, node: HostNode, envFile: string): string[] {
  return [
    'run', '--detach', '--name', containerName(node), '--network', 'host', '--restart', 'on-failure',
    '--stop-timeout', String(stopTimeoutSeconds(node.settings)),
    // The image's user is not root: podman gives an added capability to it as an ambient one.
    ...(privilegedPort(node.ports) !== undefined ? ['--cap-add', 'NET_BIND_SERVICE'] : []),
    '--env-file', envFile,
    '--volume', `${node.dataDir}:${DATA_DIR}:Z`,
    ...nodeFiles(cluster, node).flatMap((path) => ['--volume', `${path}:${path}:ro`]),
    cluster.image, 'serve',
  ];
}

const ENV_FILE = '\u0000env-file';

function renderRunScript(cluster: ClusterDescription, node: HostNode): string {
  const args = podmanRunArgs(cluster, node, ENV_FILE).map((word) => (word === ENV_FILE ? `"$here/${node.id}.env"` : shellWord(word)));
  return [
    '#!/bin/sh',
    renderedBy(cluster.name, node.region, 'container'),
    `# Starts node ${node.id} (${node.host}) of cluster ${cluster.name} from ${cluster.image}; run it on that host, as root.`,
    'set -eu',
    'here=$(cd "$(dirname "$0")" && pwd)',
    `# The image runs as uid ${IMAGE_UID}: the data dir must be its own.`,
    `install -d -m 0750 -o ${IMAGE_UID} -g ${IMAGE_UID} ${shellWord(node.dataDir)}`,
    `exec podman ${args.join(' ')}`,
  ].join('\n');
}

function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:,@%+=-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

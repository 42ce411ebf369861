/**
 * The cluster secret: what every node-to-node call carries (InternalService over gRPC, the
 * /internal/v1 data path, peers' cluster calls), in place of a user's token. User tokens never
 * open those calls.
 *
 * Node-to-node calls are never open when the node is reachable by others or guards its API with
 * tokens. A node is reachable by others when its API or gRPC listener is bound beyond loopback;
 * then, or with an AuthTokensFile, it needs a secret:
 *
 *   ClusterSecret / ClusterSecretFile set  -> that secret
 *   no seeds (the node founds a cluster)   -> <data-dir>/cluster-secret, made once (mode 600);
 *                                             peers join with a copy (--cluster-secret-file)
 *   seeds                                  -> the node refuses to start and says why
 *
 * A node on loopback without tokens runs with node-to-node calls open, as its API is.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, writeSync, fsyncSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../config/load.js';
import type { NodeConfig } from '../config/settings.js';
import { isLoopbackHost, parseHostPort } from '../config/units.js';
import type { Logger } from '../log/logger.js';

export const GENERATED_SECRET_FILE = 'cluster-secret';

/** Printable ASCII, no space at either end: it travels as an HTTP header value and gRPC metadata. */
const SECRET = /^[\x21-\x7e][\x20-\x7e]{14,1022}[\x21-\x7e]$/;

/** Why node-to-node calls need a secret on this node, or undefined when they may stay open. */
export function secretNeededBecause(config: Pick<NodeConfig, 'authTokensFile' | 'listen' | 'grpcAddr'>): string | undefined {
  if (config.authTokensFile !== '') return 'it has an AuthTokensFile';
  for (const [name, addr] of [['Listen', config.listen], ['GrpcAddr', config.grpcAddr]] as const) {
    const host = addr === '' ? undefined : parseHostPort(addr)?.host;
    if (host !== undefined && !isLoopbackHost(host)) return `its ${name} ${addr} is reachable beyond loopback`;
  }
  return undefined;
}

function readSecretFile(path: string, setting: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${setting} ${path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const secret = text.split('\n')[0]!.trim();
  if (!SECRET.test(secret)) throw new ConfigError(`${setting} ${path}: its first line must be 16 to 1024 printable ASCII characters`);
  return secret;
}

/** The secret made for a node without seeds: read back if there, else written (exclusively, mode 600) and synced. */
function generated(dataDir: string): { secret: string; path: string; made: boolean } {
  const path = join(dataDir, GENERATED_SECRET_FILE);
  try {
    return { secret: readSecretFile(path, 'cluster secret'), path, made: false };
  } catch (err) {
    if (!(err instanceof ConfigError) || !/ENOENT/.test(err.message)) throw err;
  }
  const secret = randomBytes(32).toString('base64url');
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeSync(fd, `${secret}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return { secret, path, made: true };
}

/**
 * The secret node-to-node calls carry on this node ('' = open, see the top), decided once at
 * start. The data dir must exist (the engine made it).
 */
export function resolveClusterSecret(config: NodeConfig, log: Logger): string {
  if (config.clusterSecret !== '' && config.clusterSecretFile !== '') throw new ConfigError('set ClusterSecret or ClusterSecretFile, not both');
  if (config.clusterSecret !== '') {
    if (!SECRET.test(config.clusterSecret)) throw new ConfigError('ClusterSecret must be 16 to 1024 printable ASCII characters');
    return config.clusterSecret;
  }
  if (config.clusterSecretFile !== '') return readSecretFile(config.clusterSecretFile, 'ClusterSecretFile');
  const because = secretNeededBecause(config);
  if (because === undefined || config.grpcAddr === '') return '';
  if (config.seedNodes.length > 0) {
    throw new ConfigError(
      `node-to-node calls need a cluster secret: ${because}. Give every node the same ClusterSecret or ClusterSecretFile ` +
        `(a node started without SeedNodes makes one in its data dir: ${GENERATED_SECRET_FILE})`,
    );
  }
  const { secret, path, made } = generated(config.dataDir);
  log.info({ file: path }, `node-to-node calls need the cluster secret (${because}); ${made ? 'made one in' : 'using'} ${path}: start peers with --cluster-secret-file pointing at a copy of it`);
  return secret;
}

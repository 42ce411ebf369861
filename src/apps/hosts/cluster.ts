import { readFileSync } from 'node:fs';
import { ConfigError, coerce } from '../../config/load.js';
import { SETTINGS, type SettingKey, type SettingSpec } from '../../config/settings.js';
import { isLoopbackHost } from '../../config/units.js';
import { packageVersion } from '../../version.js';
import { REGIONS, type Region } from '../stack/settings.js';
import { ABSOLUTE_PATH, ClusterFileError, Fields, type Json } from './fields.js';

/**
 * The cluster description: one JSON file that says what a real installation is made of, and that
 * every target (systemd, container, Kubernetes) renders from. deploy/cluster.example.json is a
 * complete one; docs/install.md explains each field.
 *
 *   name, image, command, user, group, configDir, bind, ports, settings
 *   secrets { clusterSecretFile, authTokensFile }      by file reference, never contents
 *   tls     { certFile, keyFile, caFile }              shared, or per node
 *   nodes   [{ id, host, region, dataDir, ports?, bind?, tls?, settings? }]
 *   kubernetes { namespace, replicas, storageSize, storageClassName, clusterDomain, resources, extraSeedNodes }
 */

export interface Ports {
  readonly api: number;
  readonly grpc: number;
  readonly metrics: number;
}

export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile?: string;
}

export interface HostNode {
  readonly id: string;
  /** The address (IP or DNS name) peers and clients reach this node at. */
  readonly host: string;
  readonly region: Region;
  readonly dataDir: string;
  /** The address the listeners bind (0.0.0.0: every interface). */
  readonly bind: string;
  readonly ports: Ports;
  readonly tls?: TlsFiles;
  /** Further node settings (SETTINGS keys), as the text their env variable carries. */
  readonly settings: ReadonlyMap<SettingKey, string>;
}

export interface KubernetesOptions {
  readonly namespace: string;
  /** Pods of the StatefulSet; default: the description's nodes in the region rendered. */
  readonly replicas?: number;
  readonly storageSize: string;
  readonly storageClassName?: string;
  readonly clusterDomain: string;
  readonly resources: Record<string, Json>;
  /** Seeds beyond the StatefulSet's own pods (nodes of other regions), host:port. */
  readonly extraSeedNodes: readonly string[];
}

export interface ClusterDescription {
  readonly name: string;
  readonly image: string;
  /** ExecStart of a systemd unit before `serve`: an absolute program path and its arguments. */
  readonly command: readonly string[];
  readonly user: string;
  readonly group: string;
  /** Where the env files and the node's (absent) config file live on a host. */
  readonly configDir: string;
  readonly clusterSecretFile?: string;
  readonly authTokensFile?: string;
  /** The description's shared ports, TLS files and settings (a StatefulSet's pods all have these). */
  readonly ports: Ports;
  readonly tls?: TlsFiles;
  readonly settings: ReadonlyMap<SettingKey, string>;
  readonly nodes: readonly HostNode[];
  readonly kubernetes: KubernetesOptions;
}

export const DEFAULT_PORTS: Ports = { api: 8080, grpc: 50051, metrics: 9090 };
export const DEFAULT_COMMAND = ['/usr/local/bin/blobstore'] as const;

/** Node settings the description sets from its own fields; `settings` may not name them. */
const MANAGED: Partial<Record<SettingKey, string>> = {
  dataDir: 'nodes[].dataDir', listen: 'bind and ports', nodeId: 'nodes[].id', region: 'nodes[].region',
  seedNodes: 'the nodes list', advertiseAddr: 'nodes[].host', grpcAddr: 'ports.grpc', metricsAddr: 'ports.metrics',
  clusterSecretFile: 'secrets.clusterSecretFile', authTokensFile: 'secrets.authTokensFile',
  clusterSecret: 'secrets.clusterSecretFile (a secret goes by file, never in the description)',
  tlsCert: 'tls.certFile', tlsKey: 'tls.keyFile', tlsCa: 'tls.caFile',
};

/** A Kubernetes object name and a DNS label: the cluster name prefixes every object. */
const CLUSTER_NAME = /^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$/;
/** A node id is a file name and part of a systemd unit name. */
const NODE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
const HOST = /^(?:[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/;
const BIND = /^(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+\])$/;
const USER = /^[a-z_][a-z0-9_-]{0,31}$/;
const QUANTITY = /^\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/;
const HOST_PORT = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):\d{1,5}$/;

/** Reads and validates a description file; every problem is a ClusterFileError naming the field. */
export function readClusterFile(file: string, version?: string): ClusterDescription {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ClusterFileError(`cannot read cluster file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ClusterFileError(`cluster file ${file} is not valid JSON: ${(err as Error).message}`);
  }
  try {
    return parseCluster(value, version);
  } catch (err) {
    if (err instanceof ClusterFileError) throw new ClusterFileError(`cluster file ${file}: ${err.message}`);
    throw err;
  }
}

const TOP = ['$comment', 'name', 'image', 'command', 'user', 'group', 'configDir', 'bind', 'ports', 'secrets', 'tls', 'settings', 'nodes', 'kubernetes'];
const NODE = ['$comment', 'id', 'host', 'region', 'dataDir', 'bind', 'ports', 'tls', 'settings'];

export function parseCluster(value: unknown, version = packageVersion()): ClusterDescription {
  const top = Fields.of(value, '', TOP);
  const name = top.string('name', undefined, CLUSTER_NAME, 'a DNS label of at most 40 characters (lowercase letters, digits, "-")');
  const secrets = top.section('secrets', ['clusterSecretFile', 'authTokensFile']);
  const shared = {
    bind: top.string('bind', '0.0.0.0', BIND, 'an IP address (0.0.0.0: every interface)'),
    ports: readPorts(top.section('ports', PORT_KEYS), DEFAULT_PORTS),
    tls: readTls(top.section('tls', TLS_KEYS)),
    settings: readSettings(top.section('settings', SETTING_KEYS, NOT_A_SETTING), new Map()),
  };
  const nodes = top.array('nodes').map((raw, i) => readNode(Fields.of(raw, `nodes[${i}]`, NODE), shared));
  checkDistinct(nodes);
  const clusterSecretFile = secrets?.optionalPath('clusterSecretFile');
  if (clusterSecretFile === undefined && nodes.some((n) => !isLoopbackHost(n.host) || !isLoopbackHost(n.bind))) {
    throw new ClusterFileError('secrets.clusterSecretFile is required: nodes that listen beyond loopback refuse to start without a cluster secret (docs/cluster.md)');
  }
  const command = top.strings('command', DEFAULT_COMMAND, /^[^\s"'\\$`%]+$/, 'an array of words without spaces or quotes, the first an absolute path');
  if (command.length === 0 || !ABSOLUTE_PATH.test(command[0]!)) top.fail('command', 'an array whose first word is an absolute path');
  const configDir = top.path('configDir', '/etc/blobstore');
  checkDataDirs(nodes, configDir);
  return {
    name,
    image: top.string('image', `localhost/blobstore:${version}`, /^[^\s"']+$/, 'an image reference'),
    command,
    user: top.string('user', 'blobstore', USER, 'a user name'),
    group: top.string('group', 'blobstore', USER, 'a group name'),
    configDir,
    clusterSecretFile,
    authTokensFile: secrets?.optionalPath('authTokensFile'),
    ports: shared.ports,
    ...(shared.tls?.certFile && shared.tls.keyFile ? { tls: wholeTls(shared.tls, '') } : {}),
    settings: shared.settings,
    nodes,
    kubernetes: readKubernetes(top.section('kubernetes', KUBERNETES_KEYS), name),
  };
}

const PORT_KEYS = ['api', 'grpc', 'metrics'];
const SETTING_KEYS = Object.keys(SETTINGS);
const NOT_A_SETTING = 'settings take the keys of src/config/settings.ts (the flags of blobstore serve --help, in camelCase)';
const TLS_KEYS = ['certFile', 'keyFile', 'caFile'] as const;
const KUBERNETES_KEYS = ['namespace', 'replicas', 'storageSize', 'storageClassName', 'clusterDomain', 'resources', 'extraSeedNodes'];

interface Shared {
  readonly bind: string;
  readonly ports: Ports;
  readonly tls: Partial<TlsFiles> | undefined;
  readonly settings: ReadonlyMap<SettingKey, string>;
}

function readNode(fields: Fields, shared: Shared): HostNode {
  const region = fields.string('region', undefined, undefined, `one of ${REGIONS.join(', ')}`);
  if (!(REGIONS as readonly string[]).includes(region)) fields.fail('region', `one of ${REGIONS.join(', ')}`);
  return {
    id: fields.string('id', undefined, NODE_ID, 'a node id: letters, digits, "_", "." or "-", at most 63'),
    host: fields.string('host', undefined, HOST, 'a host name or IP address (IPv6 in brackets)'),
    region: region as Region,
    dataDir: fields.path('dataDir'),
    bind: fields.string('bind', shared.bind, BIND, 'an IP address (0.0.0.0: every interface)'),
    ports: readPorts(fields.section('ports', PORT_KEYS), shared.ports),
    tls: wholeTls(readTls(fields.section('tls', TLS_KEYS), shared.tls), fields.where),
    settings: readSettings(fields.section('settings', SETTING_KEYS, NOT_A_SETTING), shared.settings),
  };
}

function readPorts(fields: Fields | undefined, fallback: Ports): Ports {
  if (!fields) return fallback;
  const ports = { api: fields.int('api', fallback.api, 1, 65_535), grpc: fields.int('grpc', fallback.grpc, 1, 65_535), metrics: fields.int('metrics', fallback.metrics, 1, 65_535) };
  if (new Set(Object.values(ports)).size !== 3) throw new ClusterFileError(`${fields.where}: api, grpc and metrics need three different ports`);
  return ports;
}

/**
 * A tls section's files, each one it does not name taken from `inherited` (a node's from the
 * shared section: one CA for the cluster beside each node's own certificate and key).
 */
function readTls(fields: Fields | undefined, inherited?: Partial<TlsFiles>): Partial<TlsFiles> | undefined {
  if (!fields) return inherited;
  const files: Partial<Record<keyof TlsFiles, string>> = {};
  for (const key of TLS_KEYS) {
    const path = fields.optionalPath(key) ?? inherited?.[key];
    if (path !== undefined) files[key] = path;
  }
  return files;
}

/** A node's TLS files, whole: a certificate and its key (here or shared), or none at all. */
function wholeTls(files: Partial<TlsFiles> | undefined, where: string): TlsFiles | undefined {
  if (files === undefined) return undefined;
  const { certFile, keyFile, caFile } = files;
  for (const [key, value] of [['certFile', certFile], ['keyFile', keyFile]] as const) {
    if (value === undefined) throw new ClusterFileError(`${where === '' ? '' : `${where}.`}tls.${key} must be an absolute path, in the node's tls or the shared one (it is missing)`);
  }
  return { certFile: certFile!, keyFile: keyFile!, ...(caFile ? { caFile } : {}) };
}

/** Node settings by their SETTINGS key, checked with the node's own validation. */
function readSettings(fields: Fields | undefined, inherited: ReadonlyMap<SettingKey, string>): ReadonlyMap<SettingKey, string> {
  const settings = new Map(inherited);
  if (!fields) return settings;
  for (const key of Object.keys(SETTINGS) as SettingKey[]) {
    if (!fields.has(key)) continue;
    const managed = MANAGED[key];
    if (managed) throw new ClusterFileError(`${fields.name(key)} is set by the description's ${managed}: remove it from settings`);
    const raw = fields.raw(key);
    try {
      coerce(key, SETTINGS[key] as SettingSpec, raw, fields.name(key));
    } catch (err) {
      if (err instanceof ConfigError) throw new ClusterFileError(err.message);
      throw err;
    }
    settings.set(key, Array.isArray(raw) ? raw.join(',') : String(raw));
  }
  return settings;
}

function readKubernetes(fields: Fields | undefined, name: string): KubernetesOptions {
  const k = fields ?? Fields.of({}, 'kubernetes', KUBERNETES_KEYS);
  const replicas = k.has('replicas') ? k.int('replicas', 3, 1, 1000) : undefined;
  const storageClassName = k.has('storageClassName') ? k.string('storageClassName', undefined, CLUSTER_NAME, 'a storage class name') : undefined;
  return {
    namespace: k.string('namespace', name, CLUSTER_NAME, 'a namespace name (a DNS label)'),
    ...(replicas !== undefined ? { replicas } : {}),
    storageSize: k.string('storageSize', '100Gi', QUANTITY, 'a Kubernetes quantity such as 100Gi'),
    ...(storageClassName ? { storageClassName } : {}),
    clusterDomain: k.string('clusterDomain', 'cluster.local', HOST, 'a DNS domain'),
    resources: k.json('resources') ?? { requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '2Gi' } },
    extraSeedNodes: k.strings('extraSeedNodes', [], HOST_PORT, 'an array of host:port addresses'),
  };
}

/** Ids are unique, and no two nodes of one host share a port or a data dir. */
function checkDistinct(nodes: readonly HostNode[]): void {
  const seen = new Map<string, string>();
  const claim = (key: string, what: string, i: number): void => {
    const other = seen.get(key);
    if (other !== undefined) throw new ClusterFileError(`nodes[${i}] has the same ${what} as ${other}`);
    seen.set(key, `nodes[${i}]`);
  };
  nodes.forEach((n, i) => {
    claim(`id ${n.id}`, `id (${n.id})`, i);
    for (const [kind, port] of Object.entries(n.ports)) claim(`port ${n.host} ${port}`, `host and port (${n.host}:${port}, ${kind})`, i);
    claim(`dir ${n.host} ${n.dataDir}`, `host and data dir (${n.dataDir})`, i);
  });
}

/** Directories of the system a data dir must not be, nor lie in: the installation makes a data dir its node's (owner, mode). */
const SYSTEM_DIRS = ['/bin', '/boot', '/dev', '/etc', '/lib', '/lib32', '/lib64', '/proc', '/run', '/sbin', '/sys', '/usr'];

const within = (dir: string, parent: string): boolean => dir === parent || dir.startsWith(parent === '/' ? '/' : `${parent}/`);

/**
 * A data dir is a directory of the node's own: at least two levels deep (not / or /var), not a
 * system directory or in one, not the config dir (its secrets) nor around it, and on one host never
 * inside another node's. The installation gives it to the node's user with mode 0750.
 */
function checkDataDirs(nodes: readonly HostNode[], configDir: string): void {
  const dirs = nodes.map((n) => n.dataDir.replace(/\/+$/, '') || '/');
  const config = configDir.replace(/\/+$/, '') || '/';
  dirs.forEach((dir, i) => {
    const bad = (why: string): never => {
      throw new ClusterFileError(`nodes[${i}].dataDir ${nodes[i]!.dataDir}: ${why}`);
    };
    if (dir.split('/').filter(Boolean).length < 2) bad('a data dir is a directory of its own, at least two levels deep (such as /var/lib/blobstore/n1)');
    const system = SYSTEM_DIRS.find((s) => within(dir, s));
    if (system !== undefined) bad(`it lies in ${system}, a directory of the system`);
    if (within(config, dir)) bad(`it is or holds configDir ${configDir} (the secrets would be the node's)`);
    dirs.forEach((other, j) => {
      if (j !== i && nodes[j]!.host === nodes[i]!.host && within(dir, other) && dir !== other) bad(`it lies in nodes[${j}].dataDir ${nodes[j]!.dataDir} on the same host`);
    });
  });
}

/** The nodes of one region, or a ClusterFileError that lists the regions there are. */
export function nodesIn(cluster: ClusterDescription, region: Region): HostNode[] {
  const nodes = cluster.nodes.filter((n) => n.region === region);
  if (nodes.length === 0) {
    const regions = [...new Set(cluster.nodes.map((n) => n.region))];
    throw new ClusterFileError(`cluster ${cluster.name} has no node in ${region}; its regions: ${regions.join(', ')}`);
  }
  return nodes;
}

/** host:port, IPv6 hosts already in brackets. */
export const hostPort = (host: string, port: number): string => `${host}:${port}`;

/** The HTTP API address of every node: each node's SeedNodes (itself included, as docs/cluster.md allows). */
export const seedNodes = (cluster: ClusterDescription): string[] => cluster.nodes.map((n) => hostPort(n.host, n.ports.api));

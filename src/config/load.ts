import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configFilePath } from './paths.js';
import { type NodeConfig, type SettingKey, type SettingSpec, SETTINGS, envName, largestRecordBytes } from './settings.js';
import { parseBytes, parseDurationMs, parseHostPort } from './units.js';

/** A bad setting: the CLI prints the message and exits with status 2. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  /** What the CLI exits with when nothing caught it on the way (src/main.ts). */
  readonly exitCode = 2;
}

/** Where a raw value came from, named in error messages. */
type Source = string;

export function coerce(key: string, spec: SettingSpec, raw: unknown, source: Source): unknown {
  const fail = (want: string): never => {
    throw new ConfigError(`invalid value ${JSON.stringify(raw)} for setting ${key} (from ${source}): expected ${want}`);
  };
  const bounded = (n: number, unit: string): number => {
    if (spec.min !== undefined && n < spec.min) fail(`at least ${spec.min}${unit}`);
    if (spec.max !== undefined && n > spec.max) fail(`at most ${spec.max}${unit}`);
    return n;
  };
  switch (spec.type) {
    case 'string':
      if (typeof raw !== 'string') fail('a string');
      return raw;
    case 'int': {
      const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw) : NaN;
      if (!Number.isSafeInteger(n)) fail('an integer');
      return bounded(n, '');
    }
    case 'bytes': {
      const n = typeof raw === 'number' ? raw : typeof raw === 'string' ? parseBytes(raw) : undefined;
      if (n === undefined || !Number.isSafeInteger(n)) fail('a size such as 1048576, 64KiB or 5GiB');
      if (spec.powerOfTwo && (n! <= 0 || 2 ** Math.round(Math.log2(n!)) !== n)) fail('a power of two such as 4KiB, 16KiB or 64KiB');
      return bounded(n!, ' bytes');
    }
    case 'durationMs': {
      const n = typeof raw === 'number' ? raw : typeof raw === 'string' ? parseDurationMs(raw) : undefined;
      if (n === undefined) fail('a duration such as 500ms, 5s or 2m');
      return bounded(n!, ' ms');
    }
    case 'bool':
      if (typeof raw === 'boolean') return raw;
      if (raw === 'true' || raw === '1') return true;
      if (raw === 'false' || raw === '0') return false;
      return fail('true or false');
    case 'list':
      if (Array.isArray(raw) && raw.every((v) => typeof v === 'string')) return raw;
      if (typeof raw === 'string') return raw.split(',').map((s) => s.trim()).filter(Boolean);
      return fail('a comma-separated list');
    case 'enum':
      if (typeof raw !== 'string' || !spec.choices!.includes(raw)) fail(`one of ${spec.choices!.join(', ')}`);
      return raw;
    case 'addr':
      if (typeof raw !== 'string') fail('host:port');
      if (spec.allowEmpty && raw === '') return raw;
      if (spec.allowSame && raw === 'same') return raw;
      if (!parseHostPort(raw as string)) fail(`host:port${spec.allowSame ? ', "same"' : ''}${spec.allowEmpty ? ' or ""' : ''}`);
      return raw;
  }
}

function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new ConfigError(`cannot read config file ${path}: ${(err as Error).message}`);
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not a JSON object');
    return parsed as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(`config file ${path} is not valid JSON: ${(err as Error).message}`);
  }
}

export interface LoadOptions<K extends string = SettingKey> {
  /** Values from command-line flags, by setting key; undefined means not given. */
  readonly flags?: Partial<Record<K, unknown>>;
  readonly env?: NodeJS.ProcessEnv;
  /** Config file path; defaults to the XDG/BLOBSTORE_CONFIG path. */
  readonly file?: string;
}

/**
 * Resolves one table of settings (defaults < file section < env < flags) and validates each value,
 * or throws ConfigError naming the setting and where the bad value came from.
 */
export function loadSettings<K extends string>(
  table: Record<K, SettingSpec>,
  section: string,
  options: LoadOptions<K> = {},
  /** The table is every setting of the section: a key of the file's section it lacks is refused (a typo, else read by nothing). */
  wholeSection = false,
): Record<K, unknown> {
  const env = options.env ?? process.env;
  const filePath = options.file ?? configFilePath();
  const file = readConfigFile(filePath);
  const fileSection = (file[section] ?? {}) as Record<string, unknown>;
  if (typeof fileSection !== 'object' || Array.isArray(fileSection)) {
    throw new ConfigError(`config file ${filePath}: "${section}" must be an object`);
  }
  if (wholeSection) refuseUnknownKeys(table, section, fileSection, filePath);
  const result: Record<string, unknown> = {};
  const defaulted = new Set<string>();
  for (const [key, spec] of Object.entries(table) as [K, SettingSpec][]) {
    let value: unknown = spec.default();
    defaulted.add(key);
    const specName = spec.specName;
    const fromFile = fromFileOnce(filePath, section, key, specName, fileSection, file);
    if (fromFile !== undefined) {
      value = coerce(key, spec, fromFile, `config file ${filePath}`);
      defaulted.delete(key);
    }
    const envKey = envName(key);
    const fromEnv = env[envKey] ?? (specName ? env[specName] : undefined);
    if (fromEnv !== undefined) {
      value = coerce(key, spec, fromEnv, `env ${env[envKey] !== undefined ? envKey : specName}`);
      defaulted.delete(key);
    }
    const fromFlag = options.flags?.[key];
    if (fromFlag !== undefined) {
      value = coerce(key, spec, fromFlag, 'command line');
      defaulted.delete(key);
    }
    result[key] = value;
  }
  DEFAULTED.set(result, defaulted);
  return result as Record<K, unknown>;
}

function refuseUnknownKeys(table: Record<string, SettingSpec>, section: string, fileSection: Record<string, unknown>, filePath: string): void {
  const names = new Map<string, string>();
  for (const [key, spec] of Object.entries(table)) {
    names.set(key, key);
    if (spec.specName) names.set(spec.specName, key);
  }
  for (const key of Object.keys(fileSection)) {
    if (names.has(key)) continue;
    const near = [...names.keys()].find((name) => name.toLowerCase() === key.toLowerCase());
    throw new ConfigError(`config file ${filePath}: unknown setting ${section}.${key}${near ? ` (did you mean ${section}.${near}?)` : ''}; \`blobstore config list --all\` lists them`);
  }
}

/**
 * A setting's value in the config file under whichever of its spellings holds it (`node.nodeId`,
 * `node.NodeID`, top-level `NodeID`); two spellings that disagree are refused, since either one
 * chosen would silently ignore the other.
 */
function fromFileOnce(filePath: string, section: string, key: string, specName: string | undefined, fileSection: Record<string, unknown>, file: Record<string, unknown>): unknown {
  const found: [string, unknown][] = [];
  if (fileSection[key] !== undefined) found.push([`${section}.${key}`, fileSection[key]]);
  if (specName && fileSection[specName] !== undefined) found.push([`${section}.${specName}`, fileSection[specName]]);
  if (specName && file[specName] !== undefined) found.push([specName, file[specName]]);
  for (const [where, value] of found.slice(1)) {
    if (JSON.stringify(value) !== JSON.stringify(found[0]![1])) {
      throw new ConfigError(`config file ${filePath}: ${found[0]![0]} and ${where} are the same setting with different values (${JSON.stringify(found[0]![1])}, ${JSON.stringify(value)}); keep one`);
    }
  }
  return found[0]?.[1];
}

/** The keys of a loaded table that nobody set (their default stands). */
const DEFAULTED = new WeakMap<object, Set<string>>();

/** A copy of a loaded table with `changes`, that still knows which keys nobody set. */
export function withChanges<T extends object>(config: T, changes: Partial<T>): T {
  const copy = { ...config, ...changes };
  const defaulted = DEFAULTED.get(config);
  if (defaulted) DEFAULTED.set(copy, defaulted);
  return copy;
}

/** Whether nobody set `key` of a table loadSettings() made (a config made otherwise: false). */
export function isDefaulted(config: object, key: string): boolean {
  return DEFAULTED.get(config)?.has(key) ?? false;
}

/**
 * GrpcAddr when nobody set it: the API listener's host on the default gRPC port. Peers reach a
 * node's gRPC listener at the host they reach its API at, so a node told only `--listen
 * 198.18.0.1:8080` (or 0.0.0.0) must not keep its gRPC listener on loopback, where peers on other
 * hosts cannot call it.
 */
function defaultGrpcAddr(listen: string): string {
  const host = parseHostPort(listen)?.host ?? '127.0.0.1';
  const port = SETTINGS.grpcAddr.default().split(':').pop()!;
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The node ID when nobody set one: the one the data dir recorded (a node keeps its identity);
 * for a new data dir the hostname, with `-<port>` when --listen is not the default port, so that
 * nodes sharing a host differ (port 0: a random suffix, recorded in the data dir at first start).
 */
function defaultNodeId(config: NodeConfig): string {
  try {
    const recorded = (JSON.parse(readFileSync(join(config.dataDir, 'FORMAT'), 'utf8')) as { nodeId?: unknown }).nodeId;
    if (typeof recorded === 'string' && recorded !== '') return recorded;
  } catch {
    // a new data dir
  }
  const port = parseHostPort(config.listen)?.port;
  if (port === undefined || String(port) === SETTINGS.listen.default().split(':')[1]) return config.nodeId;
  return `${config.nodeId}-${port === 0 ? randomBytes(3).toString('hex') : port}`;
}

/** The node's configuration: the SETTINGS table under the file's `node` section. */
export function loadConfig(options: LoadOptions = {}): NodeConfig {
  const config = loadSettings(SETTINGS, 'node', options, true) as NodeConfig;
  if (isDefaulted(config, 'nodeId')) config.nodeId = defaultNodeId(config);
  if (isDefaulted(config, 'grpcAddr')) config.grpcAddr = defaultGrpcAddr(config.listen);
  if (config.nodeId === '') throw new ConfigError('setting nodeId (NodeID) must not be empty');
  if (config.dataDir === '') throw new ConfigError('setting dataDir must not be empty');
  if (config.listMaxLimit < config.listDefaultLimit) {
    throw new ConfigError('setting listMaxLimit must be at least listDefaultLimit');
  }
  // A segment must hold the largest inline record (blob, labels, header) with room to spare.
  const largestRecord = largestRecordBytes(config);
  if (config.segmentSizeBytes < 2 * largestRecord) {
    throw new ConfigError(
      `setting segmentSizeBytes (${config.segmentSizeBytes}) must be at least twice the largest inline record (${largestRecord}); raise it or lower smallBlobMaxBytes`,
    );
  }
  return config;
}

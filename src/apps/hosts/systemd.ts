import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { ClusterDescription, HostNode } from './cluster.js';
import { nodeEnv, privilegedPort, stopTimeoutSeconds } from './node-env.js';
import { type RenderedFile, file, renderedBy } from './rendered.js';

/**
 * The systemd target: per node a hardened unit `blobstore-<id>.service` and its EnvironmentFile
 * `<id>.env` (installed in the description's configDir, /etc/blobstore by default). The unit runs
 * the installed `blobstore serve` with nothing on its command line: every setting is in the env
 * file, so `unitCommand` below can tell exactly how the unit starts the node.
 *
 * Type=simple, with `blobstore healthcheck --up` as ExecStartPost: `systemctl start` returns once
 * the node's API answers (503 while it waits for its peers counts: a node joins its cluster only
 * once the others run, and a unit that failed for that would restart in a loop). sd_notify would
 * need a native dependency.
 */

/** How long ExecStartPost waits for the API to answer (a start with recovery of a large log). */
const START_WAIT_SECONDS = 60;

export const unitName = (node: HostNode): string => `blobstore-${node.id}.service`;
export const envFileName = (node: HostNode): string => `${node.id}.env`;

export function renderSystemd(cluster: ClusterDescription, nodes: readonly HostNode[]): RenderedFile[] {
  return nodes.flatMap((node) => [
    file(unitName(node), renderUnit(cluster, node)),
    file(envFileName(node), renderEnvFile(cluster, node)),
  ]);
}

export function renderUnit(cluster: ClusterDescription, node: HostNode): string {
  const command = cluster.command.map(quoteWord).join(' ');
  const stopSeconds = stopTimeoutSeconds(node.settings);
  const lowPort = privilegedPort(node.ports) !== undefined;
  const stateDir = node.dataDir.startsWith('/var/lib/') ? node.dataDir.slice('/var/lib/'.length) : undefined;
  return [
    renderedBy(cluster.name, node.region, 'systemd'),
    '[Unit]',
    `Description=blobstore node ${node.id} (cluster ${cluster.name}, ${node.region})`,
    'Wants=network-online.target',
    'After=network-online.target',
    '',
    '[Service]',
    'Type=simple',
    `User=${cluster.user}`,
    `Group=${cluster.group}`,
    `EnvironmentFile=${join(cluster.configDir, envFileName(node))}`,
    `ExecStart=${command} serve`,
    `ExecStartPost=${command} healthcheck --up --wait ${START_WAIT_SECONDS}`,
    'Restart=on-failure',
    'RestartSec=5s',
    `TimeoutStartSec=${START_WAIT_SECONDS + 30}s`,
    `TimeoutStopSec=${stopSeconds}s`,
    'LimitNOFILE=1048576',
    'UMask=0027',
    '',
    '# Sandbox: the whole file system is read-only but the data dir.',
    ...(stateDir ? [`StateDirectory=${stateDir}`, 'StateDirectoryMode=0750'] : []),
    `ReadWritePaths=${node.dataDir}`,
    'ProtectSystem=strict',
    'ProtectHome=yes',
    'PrivateTmp=yes',
    'PrivateDevices=yes',
    'NoNewPrivileges=yes',
    'ProtectKernelTunables=yes',
    'ProtectKernelModules=yes',
    'ProtectKernelLogs=yes',
    'ProtectControlGroups=yes',
    'ProtectClock=yes',
    'ProtectHostname=yes',
    'RestrictSUIDSGID=yes',
    'RestrictRealtime=yes',
    'RestrictNamespaces=yes',
    'LockPersonality=yes',
    'RemoveIPC=yes',
    'PrivateMounts=yes',
    'ProtectProc=invisible',
    'SystemCallArchitectures=native',
    // A call outside the set fails with EPERM instead of killing the node: libuv and V8 probe
    // optional calls (io_uring, memory protection keys) and fall back when they are refused.
    'SystemCallFilter=@system-service',
    'SystemCallErrorNumber=EPERM',
    'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK',
    ...(lowPort ? ['CapabilityBoundingSet=CAP_NET_BIND_SERVICE', 'AmbientCapabilities=CAP_NET_BIND_SERVICE'] : ['CapabilityBoundingSet=']),
    "# MemoryDenyWriteExecute stays off: V8's JIT compiler needs memory it can write and run.",
    '',
    '[Install]',
    'WantedBy=multi-user.target',
  ].join('\n');
}

export function renderEnvFile(cluster: ClusterDescription, node: HostNode): string {
  const lines = nodeEnv(cluster, node).map(([key, value]) => `${key}=${quoteEnvValue(value)}`);
  return [
    renderedBy(cluster.name, node.region, 'systemd'),
    `# Settings of node ${node.id} (every one is listed by \`blobstore serve --help\`). Secrets go by file.`,
    ...lines,
  ].join('\n');
}

const PLAIN = /^[A-Za-z0-9_./:,@%+=[\]-]*$/;

/** An env file value: as is when plain, else in double quotes (systemd strips them). */
function quoteEnvValue(value: string): string {
  if (value.includes('\n')) throw new Error(`an env file value may not hold a line break: ${JSON.stringify(value)}`);
  return PLAIN.test(value) ? value : `"${value.replace(/[\\"$`]/g, (c) => `\\${c}`)}"`;
}

/** A word of a command line in a unit: quoted when it holds a space or a quote. */
function quoteWord(word: string): string {
  return PLAIN.test(word) ? word : `"${word.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** A node started the way its unit starts it: the program, its arguments and its environment. */
export interface UnitCommand {
  readonly argv: string[];
  readonly env: Record<string, string>;
}

/**
 * How a rendered unit starts its node: ExecStart split into words (systemd's quoting), with the
 * unit's Environment= and its EnvironmentFile= (read through `readEnvFile`) as the environment.
 * A multi-host test starts each node with exactly this.
 */
export function unitCommand(unitText: string, readEnvFile: (path: string) => string): UnitCommand {
  const service = unitSection(unitText, 'Service');
  const env: Record<string, string> = {};
  for (const [key, value] of service) {
    if (key === 'Environment') for (const word of splitWords(value)) assignment(word, env);
    if (key === 'EnvironmentFile') {
      const optional = value.startsWith('-');
      let text: string;
      try {
        text = readEnvFile(optional ? value.slice(1) : value);
      } catch (err) {
        if (optional) continue;
        throw err;
      }
      Object.assign(env, parseEnvFile(text));
    }
  }
  const execStart = service.filter(([key]) => key === 'ExecStart').map(([, value]) => value);
  if (execStart.length !== 1) throw new Error(`the unit needs exactly one ExecStart=, it has ${execStart.length}`);
  const words = splitWords(execStart[0]!.replace(/^[-@:+!]+/, ''));
  const argv = words.flatMap((word) => expand(word, env));
  return { argv, env };
}

/** `unitCommand` for a unit rendered into `dir`: its EnvironmentFile is read from beside it. */
export function renderedUnitCommand(dir: string, nodeId: string): UnitCommand {
  const unit = readFileSync(join(dir, `blobstore-${nodeId}.service`), 'utf8');
  return unitCommand(unit, (path) => readFileSync(join(dir, basename(path)), 'utf8'));
}

/** KEY=VALUE lines of an EnvironmentFile: comments and blank lines skipped, quotes removed. */
export function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) continue;
    const eq = trimmed.indexOf('=');
    if (eq <= 0) throw new Error(`not a KEY=VALUE line: ${JSON.stringify(line)}`);
    const value = trimmed.slice(eq + 1).trim();
    env[trimmed.slice(0, eq).trim()] = value.length >= 2 && /^(["']).*\1$/.test(value) ? unquote(value) : value;
  }
  return env;
}

function unquote(value: string): string {
  const body = value.slice(1, -1);
  return value.startsWith("'") ? body : body.replace(/\\(.)/g, '$1');
}

/** The key=value lines of one [Section], continuation lines joined. */
function unitSection(text: string, name: string): [string, string][] {
  const entries: [string, string][] = [];
  let inSection = false;
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  for (const line of lines) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(trimmed);
    if (header) {
      inSection = header[1] === name;
      continue;
    }
    const eq = trimmed.indexOf('=');
    if (inSection && eq > 0) entries.push([trimmed.slice(0, eq).trim(), trimmed.slice(eq + 1).trim()]);
  }
  return entries;
}

/** Words of a command line: separated by white space, "..." and '...' quoting, backslash escapes. */
function splitWords(text: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && quote !== "'" && i + 1 < text.length) {
      word = (word ?? '') + text[++i];
    } else if (quote) {
      if (c === quote) quote = undefined;
      else word = (word ?? '') + c;
    } else if (c === '"' || c === "'") {
      quote = c;
      word ??= '';
    } else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (quote) throw new Error(`unterminated quote in ${JSON.stringify(text)}`);
  if (word !== undefined) words.push(word);
  return words;
}

function assignment(word: string, env: Record<string, string>): void {
  const eq = word.indexOf('=');
  if (eq > 0) env[word.slice(0, eq)] = word.slice(eq + 1);
}

/** systemd's variable expansion in ExecStart: ${NAME} inside a word, $NAME alone splits into words. */
function expand(word: string, env: Record<string, string>): string[] {
  const whole = /^\$([A-Za-z_][A-Za-z0-9_]*)$/.exec(word);
  if (whole) return (env[whole[1]!] ?? '').split(/\s+/).filter(Boolean);
  return [word.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => env[name] ?? '')];
}

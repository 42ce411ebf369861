import type { Command } from 'commander';
import { Option } from 'commander';
import { SETTINGS, type SettingSpec, envName, flagName } from '../config/settings.js';

/**
 * A settings table (src/config) as command-line options: one `--kebab-case <value>` flag per
 * setting, whose help line ends with the default and the environment variable; the spec's names
 * (`--NodeID`, ...) parse too but are listed once, in a table after the options, rather than as a
 * second flag per setting. Options get no commander default: an absent flag must not hide the
 * config file or the environment (precedence: defaults < file < env < flags).
 */

const KiB = 1024;

/** 67108864 -> "64MiB", 1500 -> "1500 B"; exact units only, so the value reads back the same. */
function formatBytes(n: number): string {
  for (const [unit, size] of [['GiB', KiB ** 3], ['MiB', KiB ** 2], ['KiB', KiB]] as const) {
    if (n >= size && n % size === 0) return `${n / size}${unit}`;
  }
  return String(n);
}

/** 30000 -> "30s", 2500 -> "2500ms". */
function formatDuration(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms >= 1000 && ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

export function formatDefault(spec: SettingSpec): string {
  const value = spec.default();
  if (spec.type === 'bytes') return formatBytes(value as number);
  if (spec.type === 'durationMs') return formatDuration(value as number);
  if (Array.isArray(value)) return value.length === 0 ? 'none' : value.join(',');
  return value === '' ? '""' : String(value);
}

/**
 * The help line of a setting: what it is (an enum's help names its values, so they are not listed
 * twice), its default and its environment variable.
 */
export function settingHelp(key: string, spec: SettingSpec): string {
  return `${spec.help} (default ${formatDefault(spec)}; env ${envName(key)})`;
}

export function addSettingOptions(cmd: Command, table: Readonly<Record<string, SettingSpec>>): void {
  const aliases: [string, string][] = [];
  let tuning = 0;
  for (const [key, spec] of Object.entries(table)) {
    const option = new Option(`--${flagName(key)} <value>`, settingHelp(key, spec));
    if (spec.tuning) {
      option.hideHelp();
      tuning++;
    }
    cmd.addOption(option);
    if (spec.specName) {
      cmd.addOption(new Option(`--${spec.specName} <value>`).hideHelp());
      aliases.push([spec.specName, key]);
    }
  }
  if (tuning > 0) cmd.addHelpText('after', `\n${tuning} tuning settings (batch sizes, windows, queue depths, write modes) take flags too but are not listed here:\ndocs/tuning.md names each, its default and what it trades.`);
  if (aliases.length === 0) return;
  const width = Math.max(...aliases.map(([name]) => name.length));
  const lines = aliases.map(([name, key]) => `  ${name.padEnd(width)}  = --${flagName(key)}`);
  cmd.addHelpText('after', `
The spec's setting names work as flags (--${aliases[0]![0]} x), environment variables
(${aliases[0]![0]}=x) and config file keys, beside the names above:
${lines.join('\n')}`);
}

/** The flag values given, by setting key (the spec name's value when only that was given). */
export function settingFlags<K extends string>(opts: Record<string, unknown>, table: Readonly<Record<K, SettingSpec>>): Partial<Record<K, unknown>> {
  const flags: Partial<Record<K, unknown>> = {};
  for (const [key, spec] of Object.entries(table) as [K, SettingSpec][]) {
    const value = opts[key] ?? (spec.specName ? opts[spec.specName] : undefined);
    if (value !== undefined) flags[key] = value;
  }
  return flags;
}

/** docs/tuning.md: the tuning settings of the node, one row each (bench/tuning-doc.ts writes it). */
export function tuningDoc(): string {
  const rows = Object.entries(SETTINGS as Readonly<Record<string, SettingSpec>>)
    .filter(([, spec]) => spec.tuning)
    .map(([key, spec]) => `| \`--${flagName(key)}\` (\`${envName(key)}\`) | ${formatDefault(spec)} | ${spec.help.replace(/\|/g, '\\|')} |`);
  return `# Tuning settings

Knobs that trade memory, latency, throughput or durability mode against each other. Their
defaults are the measured choice for an NVMe disk and a few cores (docs/decisions.md); \`serve
--help\` leaves them out. Each takes a flag, a \`BLOBSTORE_*\` variable or a config file key like
any setting. This file is written from \`src/config/settings.ts\` by \`node dist/bench/tuning-doc.js\`.

| Setting | Default | What it does and trades |
|---|---|---|
${rows.join('\n')}
`;
}

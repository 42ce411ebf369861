import type { Command } from 'commander';
import { configFilePath } from '../config/paths.js';
import { flagName } from '../config/settings.js';
import { type ConfigObject, flatten, formatValue, getPath, keySegments, readConfigFile } from './config-file.js';
import { knownKey, sectionKeys, spellings } from './config-schema.js';
import { failure } from './errors.js';
import { print, printError } from './output.js';
import { formatDefault } from './setting-options.js';

/**
 * `config get <key>`, `config list [--all]`, `config path`: what the config file holds. They read
 * the file only (environment variables and flags apply when a service starts).
 */
export function registerConfigRead(config: Command): void {
  config
    .command('get')
    .description('print the value of one key: from the config file, else the default of a known setting')
    .argument('<key>', 'dot-notation key, e.g. node.listMaxLimit')
    .addHelpText('after', '\nExit status: 0 with the value; 1 when the key is neither in the file nor a known setting.')
    .action((key: string) => {
      const path = configFilePath();
      const segments = keySegments(key);
      const file = readConfigFile(path);
      const value = getPath(file, segments) ?? storedUnderAnotherName(file, segments);
      if (value !== undefined) return print(formatValue(value));
      const known = knownKey(segments);
      if (!known) throw failure(`${key} is not set in ${path}`);
      print(formatDefault(known.spec));
      printError(`${key} is not set in ${path}; that is its default`);
    });

  config
    .command('list')
    .description('print every key the config file sets, one "key = value" a line')
    .option('--all', 'also every node and orders setting the file does not set, with its default')
    .action((opts: { all?: boolean }) => {
      const file = readConfigFile(configFilePath());
      const lines = flatten(file).map(([key, value]) => `${key} = ${formatValue(value)}`);
      if (opts.all) {
        for (const section of ['node', 'orders'] as const) {
          for (const name of sectionKeys(section)) {
            const known = knownKey([section, name])!;
            if (storedUnderAnotherName(file, [section, name]) === undefined && getPath(file, [section, name]) === undefined) lines.push(`${section}.${name} = ${formatDefault(known.spec)}  (default; flag --${flagName(name)})`);
          }
        }
      }
      if (lines.length > 0) print(lines.join('\n'));
    });

  config
    .command('path')
    .description('print the path of the config file ($BLOBSTORE_CONFIG, else $XDG_CONFIG_HOME/blobstore/config.json)')
    .action(() => print(configFilePath()));
}

/**
 * A node or orders setting set under its other name: `node.NodeID` for node.nodeId and the other
 * way round, or the spec name at the top of the file, as the services read them (config/load.ts).
 */
function storedUnderAnotherName(file: ConfigObject, segments: readonly string[]): unknown {
  const known = knownKey(segments);
  if (!known) return undefined;
  for (const path of spellings(known, segments)) {
    const value = getPath(file, path);
    if (value !== undefined) return value;
  }
  return undefined;
}

import type { Command } from 'commander';
import { ConfigError, coerce } from '../config/load.js';
import { configFilePath } from '../config/paths.js';
import { keySegments, setPath, updateConfigFile } from './config-file.js';
import { knownKey, knownKeysText } from './config-schema.js';
import { usageError } from './errors.js';
import { print } from './output.js';

/**
 * `blobstore config set <key> --value <v>`: one key of the config file the node, the orders service
 * and deploy read ($BLOBSTORE_CONFIG, else $XDG_CONFIG_HOME/blobstore/config.json). Only known
 * keys (config-schema.ts) are stored, typed and validated like the settings themselves; objects on
 * the way are created. The file is replaced atomically under a lock (config-file.ts).
 */
export function registerConfigSet(config: Command): void {
  config
    .command('set')
    .description('store one key of the config file, typed and validated (node.*, orders.*, stacks.<name>.*)')
    .argument('<key>', 'dot-notation key, e.g. node.listMaxLimit or stacks.dev.nodes')
    .requiredOption('--value <value>', 'value to store (numbers and booleans keep their type)')
    .addHelpText('after', `
Examples:
  blobstore config set node.listMaxLimit --value 500
  blobstore config set stacks.prod.nodes --value 5
  blobstore config set orders.OrdersAddr --value 127.0.0.1:9000

An unknown key is refused (exit 2) with the list of known keys.`)
    .action(async (key: string, opts: { value: string }) => {
      const path = configFilePath();
      const { segments, value } = parseAssignment(key, opts.value);
      await updateConfigFile(path, (file) => {
        setPath(file, segments, value);
        return true;
      });
      print(`${key} = ${JSON.stringify(value)} (${path})`);
    });
}

/** Validates key and value before any file is touched (usage errors, exit 2). */
export function parseAssignment(key: string, raw: string): { segments: string[]; value: unknown } {
  const segments = keySegments(key);
  const known = knownKey(segments);
  if (!known) throw usageError(`unknown key "${key}"; ${knownKeysText()}`);
  try {
    return { segments, value: coerce(key, known.spec, raw, 'command line') };
  } catch (err) {
    if (err instanceof ConfigError) throw usageError(err.message);
    throw err;
  }
}

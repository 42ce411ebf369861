import type { Command } from 'commander';
import { ConfigError, coerce } from '../config/load.js';
import { configFilePath } from '../config/paths.js';
import { keySegments, setPath, unsetPath, updateConfigFile } from './config-file.js';
import { knownKey, knownKeysText, ownedByBlobstore, spellings } from './config-schema.js';
import { usageError } from './errors.js';
import { print } from './output.js';

/**
 * `blobstore config set <key> --value <v>`: one key of the config file the node, the orders service
 * and deploy read ($BLOBSTORE_CONFIG, else $XDG_CONFIG_HOME/blobstore/config.json). Keys of their
 * sections (config-schema.ts) are typed and validated like the settings themselves; other keys are
 * the user's and are stored as given. Objects on the way are created. The file is replaced
 * atomically under a lock (config-file.ts).
 */
export function registerConfigSet(config: Command): void {
  config
    .command('set')
    .description('store one key of the config file (node.*, orders.*, stacks.<name>.* typed and validated; any other key as given)')
    .argument('<key>', 'dot-notation key, e.g. node.listMaxLimit or stacks.dev.nodes')
    .requiredOption('--value <value>', 'value to store (numbers and booleans keep their type)')
    .addHelpText('after', `
Examples:
  blobstore config set node.listMaxLimit --value 500
  blobstore config set stacks.prod.nodes --value 5
  blobstore config set orders.OrdersAddr --value 127.0.0.1:9000

  blobstore config set cache.size --value 42

Keys under node., orders. and stacks.<name>. are blobstore's: an unknown one is refused (exit 2)
with the list of known keys, and values are typed and validated. A setting has one entry: setting
node.NodeID removes node.nodeId (and the other way round). Any other dot-notation key is
stored as the string given.`)
    .action(async (key: string, opts: { value: string }) => {
      const path = configFilePath();
      const { segments, value, note } = parseAssignment(key, opts.value);
      if (note) process.stderr.write(`blobstore: ${note}\n`);
      const known = knownKey(segments);
      await updateConfigFile(path, (file) => {
        // One setting, one entry: its other spellings go, so the value set is the one read.
        if (known) for (const other of spellings(known, segments)) if (other.join('.') !== segments.join('.')) unsetPath(file, other);
        setPath(file, segments, value);
        return true;
      });
      print(`${key} = ${JSON.stringify(value)} (${path})`);
    });
}

/**
 * Validates key and value before any file is touched (usage errors, exit 2). A key of the node's,
 * the orders service's or deploy's sections must be one they read (a typo there would sit in the
 * file, read by nothing); any other dot-notation key is the user's own and is stored as the string
 * given (`note` says so).
 */
export function parseAssignment(key: string, raw: string): { segments: string[]; value: unknown; note?: string } {
  const segments = keySegments(key);
  if (!ownedByBlobstore(segments)) {
    return { segments, value: raw, note: `${key} is not a blobstore setting: stored as the string given` };
  }
  const known = knownKey(segments);
  if (!known) throw usageError(`unknown key "${key}"; ${knownKeysText()}`);
  try {
    return { segments, value: coerce(key, known.spec, raw, 'command line') };
  } catch (err) {
    if (err instanceof ConfigError) throw usageError(err.message);
    throw err;
  }
}

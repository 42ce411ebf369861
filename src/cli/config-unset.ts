import type { Command } from 'commander';
import { configFilePath } from '../config/paths.js';
import { keySegments, unsetPath, updateConfigFile } from './config-file.js';
import { knownKey, spellings } from './config-schema.js';
import { print } from './output.js';

/**
 * `config unset <key>`: removes a key from the config file (and the objects it leaves empty), so
 * the setting falls back to its default. Any key the file holds can be removed, known or not; a
 * setting is removed under each of its spellings (node.NodeID, node.nodeId, NodeID).
 * Removing a key that is not there changes nothing and succeeds.
 */
export function registerConfigUnset(config: Command): void {
  config
    .command('unset')
    .description('remove one key from the config file (the setting falls back to its default)')
    .argument('<key>', 'dot-notation key, e.g. node.listMaxLimit')
    .action(async (key: string) => {
      const path = configFilePath();
      const segments = keySegments(key);
      const known = knownKey(segments);
      // A setting goes under every spelling the services read it by (node.NodeID and node.nodeId).
      const paths = known ? spellings(known, segments) : [segments];
      const removed = await updateConfigFile(path, (file) => paths.map((p) => unsetPath(file, p)).some(Boolean));
      print(removed ? `${key} removed (${path})` : `${key} was not set (${path}); nothing changed`);
    });
}

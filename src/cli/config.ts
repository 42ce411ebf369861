import type { Command } from 'commander';
import { registerConfigRead } from './config-read.js';
import { registerConfigSet } from './config-set.js';
import { registerConfigUnset } from './config-unset.js';

/** `blobstore config set|get|list|unset|path`: the config file the node, orders and deploy read. */
export function registerConfig(program: Command): void {
  const config = program.command('config').description('read and write the blobstore config file');
  registerConfigSet(config);
  registerConfigRead(config);
  registerConfigUnset(config);
}

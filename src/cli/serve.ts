import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import { SETTINGS } from '../config/settings.js';
import { createLogger, routeProcessWarnings } from '../log/logger.js';
import { exitOnStartFailure, loadSettingsOrUsageError } from './service-start.js';
import { addSettingOptions, settingFlags } from './setting-options.js';

const LARGE_BODY_NOTE = `
Raw bodies of 1,000,000,000 bytes or more must be sent with chunked transfer encoding
(or through the stream API): the HTTP front end resets a connection whose Content-Length
has ten digits.`;

const PRECEDENCE_NOTE = `
Each setting comes from, last wins: its default, the config file's "node" section
(blobstore config set node.<setting> --value ...), its environment variable, the flag.
Sizes take units (64KiB, 5GiB), durations too (500ms, 5s, 2m).`;

/** `blobstore serve`: runs one node until SIGTERM/SIGINT. */
export function registerServe(program: Command): void {
  const cmd = program
    .command('serve')
    .description('run a blobstore node (HTTP API, gRPC, metrics and web UI; durable local engine)')
    .option('--config <file>', 'config file (default: $BLOBSTORE_CONFIG or $XDG_CONFIG_HOME/blobstore/config.json)');
  addSettingOptions(cmd, SETTINGS);
  cmd.addHelpText('after', PRECEDENCE_NOTE).addHelpText('after', LARGE_BODY_NOTE);
  cmd.action(async (opts: Record<string, unknown>) => {
    const flags = settingFlags(opts, SETTINGS);
    const config = loadSettingsOrUsageError(() => loadConfig({ flags, file: opts.config as string | undefined }));
    const log = createLogger({ level: config.logLevel, format: config.logFormat, name: 'blobstore', node: config.nodeId });
    routeProcessWarnings(log);
    const { runNode } = await import('../node.js');
    await runNode(config, log).catch((err: unknown) => exitOnStartFailure(log, err));
  });
}

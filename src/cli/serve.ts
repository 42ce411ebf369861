import type { Command } from 'commander';
import { ConfigError, loadConfig } from '../config/load.js';
import { SETTINGS, type SettingKey, flagName } from '../config/settings.js';
import { createLogger, type Logger } from '../log/logger.js';
import { usageError } from './errors.js';

const LARGE_BODY_NOTE = `
Raw bodies of 1,000,000,000 bytes or more must be sent with chunked transfer encoding
(or through the stream API): the HTTP front end resets a connection whose Content-Length
has ten digits.`;

/** `blobstore serve`: runs one node until SIGTERM/SIGINT. */
export function registerServe(program: Command): void {
  const cmd = program
    .command('serve')
    .description('run a blobstore node (HTTP API, durable local engine)')
    .option('--config <file>', 'config file (default: $BLOBSTORE_CONFIG or $XDG_CONFIG_HOME/blobstore/config.json)')
    .addHelpText('after', LARGE_BODY_NOTE);
  for (const [key, spec] of Object.entries(SETTINGS)) {
    cmd.option(`--${flagName(key)} <value>`, spec.help);
    if ('specName' in spec) cmd.option(`--${spec.specName} <value>`, `same as --${flagName(key)}`);
  }
  cmd.action(async (opts: Record<string, unknown>) => {
    const flags: Partial<Record<SettingKey, unknown>> = {};
    for (const [key, spec] of Object.entries(SETTINGS) as [SettingKey, (typeof SETTINGS)[SettingKey]][]) {
      const value = opts[key] ?? ('specName' in spec ? opts[spec.specName] : undefined);
      if (value !== undefined) flags[key] = value;
    }
    let config;
    try {
      config = loadConfig({ flags, file: opts.config as string | undefined });
    } catch (err) {
      // Before the logger exists (its settings are among these): a usage error like any command's.
      if (err instanceof ConfigError) throw usageError(err.message);
      throw err;
    }
    const log = createLogger({ level: config.logLevel, format: config.logFormat, name: 'blobstore', node: config.nodeId });
    const { runNode } = await import('../node.js');
    await runNode(config, log).catch((err: unknown) => exitOnStartFailure(log, err));
  });
}

/**
 * A start that failed once the logger exists is logged (fatal) in the log's format, so a deployed
 * node's log file stays one format. A data dir of another format or node, one in use, or a bad
 * token file is a configuration problem: exit 2; anything else exit 1.
 */
export function exitOnStartFailure(log: Logger, err: unknown): never {
  log.fatal({ err }, `cannot start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(err instanceof ConfigError ? 2 : 1);
}

import { ConfigError } from '../config/load.js';
import type { Logger } from '../log/logger.js';
import { usageError } from './errors.js';

/**
 * How `serve` and `orders serve` start: their settings load first, before any logger exists (its
 * level and format are among them), so a bad value is a usage error like any command's
 * (`blobstore: ...` on stderr, exit 2). Once the logger exists, a start that fails is logged at
 * fatal in the log's format, so a deployed service's log file stays one format.
 */

export function loadSettingsOrUsageError<T>(load: () => T): T {
  try {
    return load();
  } catch (err) {
    if (err instanceof ConfigError) throw usageError(err.message);
    throw err;
  }
}

/**
 * Logs why the start failed and exits: 2 for a configuration problem (a data dir of another
 * format or node, one in use, a bad token or keys file), 1 for anything else.
 */
export function exitOnStartFailure(log: Logger, err: unknown): never {
  log.fatal({ err }, `cannot start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(err instanceof ConfigError ? 2 : 1);
}

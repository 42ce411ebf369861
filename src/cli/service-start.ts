import { ConfigError } from '../config/load.js';
import type { Logger } from '../log/logger.js';
import { HostError } from '../util/host-error.js';
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
 * format or node, one in use, a bad token or keys file), 1 for anything else. A problem of the
 * host's (a configuration, an address taken, a data dir that cannot be written: its errno and
 * path are in the message) is one line; a stack is logged only for what may be a bug.
 */
export function exitOnStartFailure(log: Logger, err: unknown): never {
  const message = err instanceof Error ? err.message : String(err);
  if (operatorsProblem(err)) log.fatal({ code: (err as NodeJS.ErrnoException).code }, `cannot start: ${message}`);
  else log.fatal({ err }, `cannot start: ${message}`);
  process.exit(err instanceof ConfigError ? 2 : 1);
}

function operatorsProblem(err: unknown): boolean {
  if (err instanceof ConfigError || err instanceof HostError) return true;
  // A system call's failure (EROFS, ENOTDIR, EACCES, ENOSPC ...): Node's message names the call and the path.
  const e = err as NodeJS.ErrnoException | undefined;
  return e instanceof Error && typeof e.code === 'string' && typeof e.syscall === 'string';
}

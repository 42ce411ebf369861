import { homedir } from 'node:os';
import { join } from 'node:path';

/** XDG base directories, resolved from the environment each call (tests set them per process). */
function xdg(variable: string, fallback: string[]): string {
  const value = process.env[variable];
  return value && value.startsWith('/') ? value : join(homedir(), ...fallback);
}

export const xdgDataHome = (): string => xdg('XDG_DATA_HOME', ['.local', 'share']);
export const xdgConfigHome = (): string => xdg('XDG_CONFIG_HOME', ['.config']);
export const xdgStateHome = (): string => xdg('XDG_STATE_HOME', ['.local', 'state']);

/** The one config file the node reads and `blobstore config set` writes. */
export function configFilePath(): string {
  return process.env.BLOBSTORE_CONFIG || join(xdgConfigHome(), 'blobstore', 'config.json');
}

/** The embedded default data dir of `blobstore serve` and `make run`. */
export function defaultDataDir(): string {
  return join(xdgDataHome(), 'blobstore', 'data');
}

import { readFileSync } from 'node:fs';

/**
 * The package version, from package.json at the repository root: two levels above src/cli (run
 * from source) or three above dist/src/cli (built).
 */
export function packageVersion(): string {
  for (const relative of ['../../../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'blobstore' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // not there: try the next place
    }
  }
  return 'unknown';
}

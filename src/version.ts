import { readFileSync } from 'node:fs';

/**
 * The package version, from package.json at the repository root: one level above src (run from
 * source) or two above dist/src (built).
 */
export function packageVersion(): string {
  for (const relative of ['../../package.json', '../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'blobstore' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // not there: try the next place
    }
  }
  return 'unknown';
}

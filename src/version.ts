import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './util/repo-root.js';

/** The package version, from package.json at the repository root. */
export function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(join(repoRoot(), 'package.json'), 'utf8')) as { name?: string; version?: string };
    if (pkg.name === 'blobstore' && typeof pkg.version === 'string') return pkg.version;
  } catch {
    // no readable package.json: the version is unknown
  }
  return 'unknown';
}

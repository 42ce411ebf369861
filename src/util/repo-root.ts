/**
 * Where the package's files are: the repository root is the nearest directory above this module
 * that holds package.json, the same whether the code runs from src/ (vitest) or dist/src/ (built).
 * Worker threads and the native addon are loaded by path, and a worker must be JavaScript: it is
 * always taken from dist/.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

export function repoRoot(): string {
  if (root !== undefined) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return (root = dir);
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

/** A compiled module of src/ (`compiledPath('pool', 'worker.js')`), also when the caller runs from src/. */
export function compiledPath(...parts: string[]): string {
  return join(repoRoot(), 'dist', 'src', ...parts);
}

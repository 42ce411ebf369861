/**
 * Where the native addon is (native/build/Release/blobstore_ec.node, built by `make -C native`),
 * and its loader for the modules that have a JavaScript stand-in. src/ec/native.ts loads it for
 * erasure coding, where it is required.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { repoRoot } from './repo-root.js';

export const ADDON_RELATIVE_PATH = 'native/build/Release/blobstore_ec.node';

/**
 * The addon's exports when it is built and has the function `probe` (else null: not built, or a
 * build from before that function), for the modules that have a JavaScript stand-in (CRC-32C,
 * BLAKE3, base64). Node caches the module, so each caller loads it once at no cost to the others.
 */
export function optionalAddon<T extends object>(probe: keyof T & string): T | null {
  try {
    const exports = createRequire(import.meta.url)(join(repoRoot(), ADDON_RELATIVE_PATH)) as Partial<T>;
    return typeof exports[probe] === 'function' ? (exports as T) : null;
  } catch {
    return null;
  }
}

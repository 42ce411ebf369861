/**
 * Base64 (standard alphabet, padded: Buffer's 'base64' text) written straight into a caller's
 * buffer by the addon's encoder (native/src/b64.c: AVX-512 VBMI, AVX2 or portable C, chosen by
 * CPUID), so the NDJSON get stream builds each line in its pooled buffer with no 1.4 MB string per
 * MiB. Without the addon (not built) Buffer's encoder stands in, through a string, as path 'js'.
 * BLOBSTORE_B64_PATH pins a path (portable|avx2|avx512vbmi|js|auto), for tests and benches.
 */

import { optionalAddon } from '../util/addon.js';
import { internal, invalidArgument } from '../errors/errors.js';

export interface Base64PathInfo {
  readonly name: string;
  /** The build includes the path (EC_DISABLE in native/Makefile compiles SIMD paths out). */
  readonly compiled: boolean;
  /** Compiled, and this CPU and OS can run it. */
  readonly supported: boolean;
}

/** The addon's base64 functions (native/src/binding_b64.c). */
interface Base64Addon {
  /** Characters written at dst[dstOffset..], or a negative status (ARG_ERRORS). */
  base64Encode(src: Uint8Array, dst: Uint8Array, dstOffset: number): number;
  base64Path(): string;
  /** 0, or 1 (unknown name) or 2 (compiled out or not supported by this CPU). */
  setBase64Path(name: string): number;
  base64Paths(): Base64PathInfo[];
}

const ARG_ERRORS: Readonly<Record<number, string>> = {
  [-1]: 'the source is not a typed array',
  [-2]: 'the destination is not a typed array, or the offset is outside it',
  [-3]: 'the encoding does not fit in the destination after the offset',
  [-4]: 'the destination range overlaps the source',
};

const JS = 'js';

/** Characters the encoding of `bytes` bytes takes. */
export const base64Length = (bytes: number): number => Math.ceil(bytes / 3) * 4;

let addon: Base64Addon | null | undefined;
let useJs = false;

function load(): Base64Addon | null {
  const loaded = optionalAddon<Base64Addon>('base64Encode');
  // A pinned path that cannot run is an error (at every use), not a silent fallback.
  const forced = process.env.BLOBSTORE_B64_PATH;
  if (forced !== undefined && forced !== '') applyPath(loaded, forced);
  addon = loaded;
  return loaded;
}

function applyPath(a: Base64Addon | null, name: string): void {
  if (name === JS) {
    useJs = true;
    return;
  }
  if (a === null) {
    if (name === 'auto') return;
    throw invalidArgument(`base64 path ${name}: the native addon is not built (run \`make -C native\`)`);
  }
  const status = a.setBase64Path(name);
  if (status === 1) throw invalidArgument(`unknown base64 path ${name} (portable|avx2|avx512vbmi|js|auto)`);
  if (status !== 0) throw invalidArgument(`base64 path ${name} is compiled out or not supported by this CPU`);
  useJs = false;
}

function encodeJs(src: Uint8Array, dst: Buffer, at: number): number {
  const need = base64Length(src.length);
  if (!Number.isInteger(at) || at < 0 || at + need > dst.length) throw internal(`base64 encode: ${ARG_ERRORS[-3]}`);
  const text = Buffer.from(src.buffer, src.byteOffset, src.byteLength).toString('base64');
  return dst.write(text, at, 'latin1');
}

/** Writes the base64 text of `src` into `dst` at `at`; returns the characters written. */
export function encodeBase64Into(src: Uint8Array, dst: Buffer, at: number): number {
  const a = addon === undefined ? load() : addon;
  if (a === null || useJs) return encodeJs(src, dst, at);
  const n = a.base64Encode(src, dst, at);
  if (n < 0) throw internal(`base64 encode: ${ARG_ERRORS[n] ?? `status ${n}`}`);
  return n;
}

/** The path in use. */
export function base64Path(): string {
  const a = addon === undefined ? load() : addon;
  return a === null || useJs ? JS : a.base64Path();
}

/** Every path: the addon's (portable first, widest last), then 'js'. */
export function base64Paths(): Base64PathInfo[] {
  const a = addon === undefined ? load() : addon;
  return [...(a?.base64Paths() ?? []), { name: JS, compiled: true, supported: true }];
}

/** Pins a path by name; 'auto' is the widest the CPU supports (or 'js' without the addon). */
export function setBase64Path(name: string): void {
  applyPath(addon === undefined ? load() : addon, name);
}

/**
 * Copies bytes from an ArrayBuffer (or a typed array) into a buffer. uWS hands a request body
 * over as an ArrayBuffer valid for one callback; copying it with `dst.set(new Uint8Array(ab))`
 * makes a view object per request, the addon's copyBytes (native/src/binding_copy.c) none. Without
 * the addon (not built) the view is made.
 */
import { optionalAddon } from './addon.js';

interface CopyAddon {
  copyBytes(src: ArrayBuffer | Uint8Array, dst: Uint8Array, dstOffset: number): number;
}

let addon: CopyAddon | null | undefined;

/** Copies all of `src` to `dst` at `at` (it must fit). */
export function copyBytes(src: ArrayBuffer | Uint8Array, dst: Uint8Array, at: number): void {
  const native = addon === undefined ? (addon = optionalAddon<CopyAddon>('copyBytes')) : addon;
  if (native !== null) {
    if (native.copyBytes(src, dst, at) < 0) throw new RangeError(`copyBytes: ${src.byteLength} bytes do not fit at ${at} of ${dst.length}`);
    return;
  }
  dst.set(src instanceof ArrayBuffer ? new Uint8Array(src) : src, at);
}

/** A view of `src` as bytes (the stand-ins' way: an object per call). */
export const bytesOf = (src: ArrayBuffer | Uint8Array): Uint8Array => (src instanceof ArrayBuffer ? new Uint8Array(src) : src);

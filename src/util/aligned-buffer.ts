/**
 * Buffers that start on a page boundary, for bytes read from files. The kernel's copy from the
 * page cache into a buffer that starts 16 bytes into a page (where glibc puts every allocation it
 * maps, so every large Buffer and SharedArrayBuffer) runs at a fifth of its speed on AMD Zen 3:
 * a 1 MiB pread of a cached file ran at 2.5 GB/s into such a buffer and 13 GB/s
 * into the same memory 16 bytes on (docs/adr/0020-page-aligned-buffers.md). One page more is
 * allocated and the view starts at its first page boundary; without the addon (not built) the
 * view starts 64 bytes in, away from that offset.
 */
import { optionalAddon } from './addon.js';

interface AlignAddon {
  pageOffset(view: Uint8Array): number;
}

const PAGE = 4096;
const FALLBACK_OFFSET = 64;

let addon: AlignAddon | null | undefined;

const loaded = (): AlignAddon | null => (addon === undefined ? (addon = optionalAddon<AlignAddon>('pageOffset')) : addon);

function startOf(whole: Uint8Array): number {
  const native = loaded();
  if (native === null) return FALLBACK_OFFSET;
  const offset = native.pageOffset(whole);
  return offset <= 0 ? 0 : PAGE - offset;
}


/** `bytes` of shared memory (for worker threads) starting on a page boundary. */
export function pageAlignedShared(bytes: number): Buffer {
  const sab = new SharedArrayBuffer(bytes + PAGE);
  return Buffer.from(sab, startOf(new Uint8Array(sab)), bytes);
}

/** `bytes` of memory, not zeroed, starting on a page boundary. */
export function pageAligned(bytes: number): Buffer {
  const whole = Buffer.allocUnsafeSlow(bytes + PAGE);
  const start = startOf(whole);
  return whole.subarray(start, start + bytes);
}

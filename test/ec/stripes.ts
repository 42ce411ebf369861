/** Test stripes: seeded data laid out in the ways callers hold shards. */
import { ecKernelPaths, type EcKernelPathName, type Shard } from '../../src/ec/index.js';
import { randomBytes } from './reference.js';

export type Layout = 'slices' | 'common' | 'separate' | 'mixed';
export const LAYOUTS: readonly Layout[] = ['slices', 'common', 'separate', 'mixed'];

/** The kernel paths this CPU supports (every one of them is tested). */
export const supportedPaths = (): EcKernelPathName[] => ecKernelPaths().filter((p) => p.supported).map((p) => p.name as EcKernelPathName);

/** One seeded case: a stripe of k data and m parity shards of `len` bytes in `layout`. */
export interface StripeCase {
  readonly name: string;
  readonly seed: number;
  readonly k: number;
  readonly m: number;
  readonly len: number;
  readonly layout: Layout;
}

export interface Stripe {
  readonly k: number;
  readonly m: number;
  readonly len: number;
  /** The shards as handed to the codec. */
  readonly shards: Shard[];
  /** Uint8Array views of the same memory, for comparisons. */
  readonly views: Uint8Array[];
}

function viewOf(s: Shard): Uint8Array {
  return s instanceof ArrayBuffer ? new Uint8Array(s) : new Uint8Array(s.buffer, s.byteOffset, s.byteLength);
}

/**
 * 'slices': consecutive slices of one buffer, each at a random offset (not 64-byte aligned);
 * 'common': slices 13 bytes past a stride that is a multiple of 64 (the codec aligns the bulk);
 * 'separate': one Buffer each; 'mixed': ArrayBuffers, Uint8Arrays, Buffers and Uint16Arrays.
 */
export function makeStripe(next: () => number, k: number, m: number, len: number, layout: Layout): Stripe {
  const n = k + m;
  let shards: Shard[];
  if (layout === 'slices') {
    const base = new ArrayBuffer(n * (len + 64) + 64);
    let at = 0;
    shards = Array.from({ length: n }, () => {
      at += Math.floor(next() * 64);
      const s = Buffer.from(base, at, len);
      at += len;
      return s;
    });
  } else if (layout === 'common') {
    const stride = Math.ceil((len + 13) / 64) * 64;
    const base = new ArrayBuffer(n * stride);
    shards = Array.from({ length: n }, (_, i) => new Uint8Array(base, i * stride + 13, len));
  } else if (layout === 'separate') {
    shards = Array.from({ length: n }, () => Buffer.alloc(len));
  } else {
    shards = Array.from({ length: n }, (_, i) => {
      const kind = i % 4;
      if (kind === 0) return new ArrayBuffer(len);
      if (kind === 1) return new Uint8Array(new ArrayBuffer(len + 3), 3, len);
      if (kind === 3 && len % 2 === 0) return new Uint16Array(len / 2);
      return Buffer.alloc(len);
    });
  }
  const views = shards.map(viewOf);
  for (let j = 0; j < k; j++) views[j].set(randomBytes(next, len));
  return { k, m, len, shards, views };
}

/** present[] with `missing` random shards marked absent. */
export function randomPresent(next: () => number, n: number, missing: number): boolean[] {
  const present = Array.from({ length: n }, () => true);
  for (let gone = 0; gone < missing; ) {
    const i = Math.floor(next() * n);
    if (present[i]) {
      present[i] = false;
      gone++;
    }
  }
  return present;
}

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/**
 * BLAKE3 content hashing. One-shot digests come from our addon (native/src/blake3.c, written into
 * a pooled Buffer: no string or external Buffer per digest), incremental hashing from
 * @napi-rs/blake-hash (~7-10 GB/s at 1 MiB here); hash-wasm is the fallback when neither native
 * binary loads.
 */
import { createRequire } from 'node:module';
import { optionalAddon } from '../util/addon.js';
import { bytesOf } from '../util/copy-bytes.js';

export const DIGEST_BYTES = 32;
/** A blob ID is the first 16 bytes of the content's BLAKE3-256 digest. */
export const ID_BYTES = 16;

export interface IncrementalHasher {
  update(data: Uint8Array): void;
  /** The 32-byte digest; the hasher must not be used afterwards. */
  digest(): Buffer;
}

interface Backend {
  readonly name: string;
  hash(data: Uint8Array): Buffer;
  /** The digest of `data` (bytes, or an ArrayBuffer as uWS hands a body over) written at dst[at, at + 32). */
  hashInto(data: Uint8Array | ArrayBuffer, dst: Uint8Array, at: number): void;
  create(): IncrementalHasher;
}

/** Our addon's one-shot BLAKE3 (native/src/binding_blake3.c). */
interface HashAddon {
  blake3Hash(src: Uint8Array | ArrayBuffer, dst: Uint8Array, dstOffset: number): number;
}

function nativeBackend(): Backend | undefined {
  try {
    const require = createRequire(import.meta.url);
    const mod = require('@napi-rs/blake-hash') as typeof import('@napi-rs/blake-hash');
    const { blake3UrlSafeBase64, Blake3Hasher } = mod;
    const ours = optionalAddon<HashAddon>('blake3Hash');
    return {
      name: ours ? 'native (addon one-shot)' : 'native',
      // Ours writes the digest into a pooled Buffer: 0.19 us for 64 bytes, 0.89 us for 1 KiB and
      // 1.85 us for 4 KiB here, against 0.49, 1.66 and 1.88 for napi-rs's digest as base64url
      // decoded into one (its blake3() returns a new external Buffer, a finalizer and a global
      // handle each: 2.3 us for 4 KiB; `BENCH_ONLY=hash bash bench/run.sh`, docs/adr/0012-hot-path.md).
      hash: ours
        ? (data) => {
            const digest = Buffer.allocUnsafe(DIGEST_BYTES);
            if (ours.blake3Hash(data, digest, 0) !== 0) throw new TypeError('blake3: expected a typed array');
            return digest;
          }
        : (data) => Buffer.from(blake3UrlSafeBase64(data as Buffer), 'base64url'),
      hashInto: ours
        ? (data, dst, at) => {
            if (ours.blake3Hash(data, dst, at) !== 0) throw new TypeError('blake3: expected bytes and 32 bytes of room for the digest');
          }
        : (data, dst, at) => void dst.set(Buffer.from(blake3UrlSafeBase64(Buffer.from(bytesOf(data))), 'base64url'), at),
      create: () => {
        const h = new Blake3Hasher();
        return { update: (d) => void h.update(d as Buffer), digest: () => h.digestBuffer() };
      },
    };
  } catch {
    return undefined;
  }
}

async function wasmBackend(): Promise<Backend> {
  const { createBLAKE3 } = await import('hash-wasm');
  // hash-wasm hashers are reusable after init(); one for one-shot hashing.
  const oneShot = await createBLAKE3(256);
  const pool: Awaited<ReturnType<typeof createBLAKE3>>[] = [];
  for (let i = 0; i < 8; i++) pool.push(await createBLAKE3(256));
  return {
    name: 'wasm',
    hash: (data) => {
      oneShot.init();
      oneShot.update(data);
      return Buffer.from(oneShot.digest('binary'));
    },
    hashInto: (data, dst, at) => {
      oneShot.init();
      oneShot.update(bytesOf(data));
      dst.set(oneShot.digest('binary'), at);
    },
    create: () => {
      // createBLAKE3 is async; keep a warm pool so create() stays synchronous.
      const h = pool.pop() ?? null;
      if (!h) throw new Error('hash-wasm pool empty');
      h.init();
      void createBLAKE3(256).then((n) => pool.push(n));
      return {
        update: (d) => void h.update(d),
        digest: () => Buffer.from(h.digest('binary')),
      };
    },
  };
}

let backend: Backend | undefined = nativeBackend();

/** Loads the fallback when the native module is missing; call once at start. */
export async function initHashing(): Promise<string> {
  if (!backend || process.env.BLOBSTORE_HASH === 'wasm') backend = await wasmBackend();
  return backend.name;
}

export function hashName(): string {
  return backend?.name ?? 'uninitialised';
}

/** One-shot BLAKE3-256 of `data`. */
export function blake3(data: Uint8Array): Buffer {
  return backend!.hash(data);
}

/**
 * One-shot BLAKE3-256 of `data` written at dst[at, at + 32): no Buffer per digest (the small
 * store's path; with the addon, `data` may be uWS's ArrayBuffer itself).
 */
export function blake3Into(data: Uint8Array | ArrayBuffer, dst: Uint8Array, at: number): void {
  backend!.hashInto(data, dst, at);
}

export function createHasher(): IncrementalHasher {
  return backend!.create();
}

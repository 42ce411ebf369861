/**
 * The read cache of verified small blobs (src/engine/verified-cache.ts): bounded by its settings,
 * keyed so that a blob stored again after a delete is not answered from an old entry, and a GET
 * answered from it says exactly what the long path says.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BlobMeta } from '../src/blob/meta.js';
import { VerifiedCache } from '../src/engine/verified-cache.js';
import { u64Digits, writeU64 } from '../src/http/blob-head.js';
import { Location } from '../src/index/entry.js';
import { flipByte, patternBytes, putRaw } from './helpers/blobs.js';
import { type NodeProcess, startNode } from './helpers/node-process.js';
import { waitFor } from './helpers/wait.js';

function metaOf(n: number, size: number, createdAtNs = 1_700_000_000_000_000_000n): BlobMeta {
  const checksum = patternBytes(32, 77 + n);
  return { id: checksum.subarray(0, 16), location: Location.SEGMENT, policy: 1, segment: 1, offset: 0, size, createdAtNs, checksum, labels: Buffer.alloc(0) };
}

describe('VerifiedCache', () => {
  /** A record read twice (the doorkeeper keeps it on its second read). */
  const admitTwice = (cache: VerifiedCache, meta: BlobMeta, data: Buffer): void => {
    expect(cache.admit(meta, data)).toBeUndefined();
    expect(cache.admit(meta, data)?.data.equals(data)).toBe(true);
  };

  it('keeps at most readCacheBytes, evicts with CLOCK, and keeps what is read again', () => {
    const cache = new VerifiedCache(64 * 1024, 64 * 1024);
    const hot = metaOf(0, 4096);
    admitTwice(cache, hot, patternBytes(4096, 0));
    for (let n = 1; n <= 64; n++) {
      expect(cache.getMeta(hot)?.data.equals(patternBytes(4096, 0))).toBe(true);
      admitTwice(cache, metaOf(n, 4096), patternBytes(4096, n));
      expect(cache.stats().bytes).toBeLessThanOrEqual(64 * 1024);
    }
    expect(cache.stats().entries).toBe(16);
    expect(cache.getMeta(metaOf(64, 4096))?.data.equals(patternBytes(4096, 64))).toBe(true);
    expect(cache.getMeta(metaOf(1, 4096))).toBeUndefined();
  });

  it('holds a hot set of ids that share their first bytes (a listing page, a prefix) as well as any other', () => {
    const cache = new VerifiedCache(64 * 1024 * 1024, 64 * 1024);
    const metas = Array.from({ length: 4096 }, (_, n) => {
      const meta = metaOf(n, 4096);
      meta.checksum.writeUInt32LE(0x00000102, 0); // every id starts 02 01 00 00
      return meta;
    });
    const data = patternBytes(4096, 5);
    for (const meta of metas) cache.admit(meta, data);
    expect(cache.stats().entries).toBe(0); // read once: only marked
    for (const meta of metas) cache.admit(meta, data);
    expect(cache.stats().entries).toBe(4096);
    expect(metas.every((meta) => cache.getMeta(meta) !== undefined)).toBe(true);
  });

  it('a scan of records read once keeps none of them and leaves the hot ones (the doorkeeper)', () => {
    const cache = new VerifiedCache(64 * 1024, 64 * 1024);
    const hot = metaOf(0, 4096);
    admitTwice(cache, hot, patternBytes(4096, 0));
    let kept = 0;
    for (let n = 1; n <= 1000; n++) if (cache.admit(metaOf(n, 4096), patternBytes(4096, n))) kept++;
    // Marks collide at most one time in eight (the doorkeeper is cleared before it is fuller).
    expect(kept).toBeLessThan(1000 / 8);
    expect(cache.getMeta(hot)).toBeDefined();
  });

  it('misses a blob whose index entry changed (stored again: a new created-at time) and records over the size limit', () => {
    const cache = new VerifiedCache(1024 * 1024, 8 * 1024);
    const meta = metaOf(1, 100);
    admitTwice(cache, meta, patternBytes(100, 1));
    expect(cache.getMeta(meta)?.data.length).toBe(100);
    expect(cache.getMeta({ ...meta, createdAtNs: meta.createdAtNs + 1n })).toBeUndefined();
    expect(cache.getMeta({ ...meta, policy: 2 })).toBeUndefined();
    cache.admit(metaOf(2, 9000), patternBytes(9000, 2));
    expect(cache.admit(metaOf(2, 9000), patternBytes(9000, 2))).toBeUndefined();
    expect(new VerifiedCache(0, 8 * 1024).admit(meta, patternBytes(100, 1))).toBeUndefined();
  });

  it('finds a record by its id alone until the id is invalidated (its delete staged), and frees its bytes', () => {
    const cache = new VerifiedCache(1024 * 1024, 8 * 1024);
    const [a, b] = [metaOf(1, 4096), metaOf(2, 4096)];
    admitTwice(cache, a, patternBytes(4096, 1));
    admitTwice(cache, b, patternBytes(4096, 2));
    expect(cache.getById(a.id)?.data.equals(patternBytes(4096, 1))).toBe(true);
    const before = cache.stats();
    cache.invalidate(a.id);
    expect(cache.getById(a.id)).toBeUndefined();
    expect(cache.getMeta(a)).toBeUndefined();
    expect(cache.getById(b.id)?.data.equals(patternBytes(4096, 2))).toBe(true);
    expect(cache.stats()).toMatchObject({ entries: before.entries - 1, bytes: before.bytes - 4096 });
    cache.invalidate(a.id); // twice: nothing left to drop
    expect(cache.stats().entries).toBe(before.entries - 1);
  });
});

describe('answer heads written in place', () => {
  it('writes a u64 in decimal as BigInt does, with its length', () => {
    const values = [0n, 1n, 9999n, 10000n, 2n ** 32n - 1n, 2n ** 32n, 1_795_576_548_143_000_000n, 2n ** 63n - 1n, 2n ** 64n - 1n];
    for (let i = 0; i < 200; i++) values.push(BigInt.asUintN(64, BigInt(Math.floor(Math.random() * 2 ** 53)) * 4099n + BigInt(i)));
    const out = Buffer.alloc(24);
    for (const v of values) {
      const lo = Number(v & 0xffffffffn);
      const hi = Number(v >> 32n);
      const end = writeU64(out, 2, lo, hi);
      expect(out.toString('latin1', 2, end)).toBe(v.toString());
      expect(u64Digits(lo, hi)).toBe(v.toString().length);
    }
  });
});

describe('GET answered from the read cache', () => {
  let node: NodeProcess;
  beforeAll(async () => {
    node = await startNode();
  });
  afterAll(async () => {
    await node.stop();
  });

  const headersOf = (res: Response): Record<string, string> => {
    const out: Record<string, string> = {};
    res.headers.forEach((value, key) => {
      if (key !== 'date') out[key] = value;
    });
    return out;
  };

  it('says what the long path says, byte for byte; conditions and ranges still apply', async () => {
    const bytes = patternBytes(4096, 31);
    const put = await putRaw(node.url, bytes, { 'X-Blobstore-Policy': '2' });
    expect(put.status).toBe(201);
    const { id } = (await put.json()) as { id: string };
    const first = await fetch(`${node.url}/v1/blobs/${id}`); // read and verified (marked)
    await (await fetch(`${node.url}/v1/blobs/${id}`)).arrayBuffer(); // read again: cached
    const second = await fetch(`${node.url}/v1/blobs/${id}`); // from the cache
    const head = await fetch(`${node.url}/v1/blobs/${id}`, { method: 'HEAD' }); // the long path's headers
    expect(Buffer.from(await first.arrayBuffer()).equals(bytes)).toBe(true);
    expect(Buffer.from(await second.arrayBuffer()).equals(bytes)).toBe(true);
    expect(headersOf(first)).toEqual(headersOf(head));
    expect(headersOf(second)).toEqual(headersOf(head));
    expect(second.headers.get('x-blobstore-policy')).toBe('2');
    const etag = second.headers.get('etag')!;
    expect((await fetch(`${node.url}/v1/blobs/${id}`, { headers: { 'If-None-Match': etag } })).status).toBe(304);
    const part = await fetch(`${node.url}/v1/blobs/${id}`, { headers: { Range: 'bytes=10-19' } });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(10, 20))).toBe(true);
  });

  it('a deleted blob is gone at once, and stored again it carries its new created-at time', async () => {
    const bytes = patternBytes(4096, 32);
    const { id } = (await (await putRaw(node.url, bytes)).json()) as { id: string };
    await (await fetch(`${node.url}/v1/blobs/${id}`)).arrayBuffer();
    const cached = await fetch(`${node.url}/v1/blobs/${id}`);
    await cached.arrayBuffer();
    expect((await fetch(`${node.url}/v1/blobs/${id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await fetch(`${node.url}/v1/blobs/${id}`)).status).toBe(404);
    await new Promise((resolve) => setTimeout(resolve, 5)); // time is the subject: a created-at time of another millisecond
    expect((await putRaw(node.url, bytes)).status).toBe(201);
    const again = await fetch(`${node.url}/v1/blobs/${id}`);
    expect(Buffer.from(await again.arrayBuffer()).equals(bytes)).toBe(true);
    expect(again.headers.get('x-blobstore-created-at')).not.toBe(cached.headers.get('x-blobstore-created-at'));
  });

  /** Flips a byte of the blob's data in its segment record. */
  const corrupt = (bytes: Buffer): void => {
    const segments = join(node.dataDir, 'segments');
    for (const name of readdirSync(segments)) {
      const at = readFileSync(join(segments, name)).indexOf(bytes.subarray(0, 64));
      if (at >= 0) return flipByte(join(segments, name), at + 100);
    }
    throw new Error('record not found');
  };
  const reports = (id: string): number => node.output().split(`corrupt copy of blob ${id} detected`).length - 1;

  it('a corrupt record never read before answers 500, counted once per GET; never its bytes', async () => {
    const bytes = patternBytes(4096, 33);
    const { id } = (await (await putRaw(node.url, bytes)).json()) as { id: string };
    corrupt(bytes);
    for (let i = 1; i <= 2; i++) {
      const res = await fetch(`${node.url}/v1/blobs/${id}`);
      expect(res.status).toBe(500);
      expect(Buffer.from(await res.arrayBuffer()).includes(bytes.subarray(0, 64))).toBe(false);
      // The log line travels through the node's stdout pipe: it may come just after the answer.
      await waitFor(() => reports(id) >= i, { what: `report ${i} of the corrupt copy in the node's output`, timeoutMs: 10_000, pollMs: 20 });
      expect(reports(id)).toBe(i);
    }
  });

  it('a record verified and cached before the disk went bad is answered with its verified bytes (the scrubber finds the disk copy)', async () => {
    const bytes = patternBytes(4096, 34);
    const { id } = (await (await putRaw(node.url, bytes)).json()) as { id: string };
    for (let i = 0; i < 2; i++) await (await fetch(`${node.url}/v1/blobs/${id}`)).arrayBuffer(); // kept on the second read
    corrupt(bytes);
    const res = await fetch(`${node.url}/v1/blobs/${id}`);
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
  });
});

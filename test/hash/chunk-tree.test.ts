/**
 * ChunkTree: a blob's BLAKE3 digest joined from its 1 MiB chunks' chaining values, set in any
 * order, equals the digest of the whole (one chunk, several, a short last one, none).
 */
import { describe, expect, it } from 'vitest';
import { CHUNK_BYTES } from '../../src/blob/chunk.js';
import { blake3 } from '../../src/hash/blake3.js';
import { chunkCvOf } from '../../src/hash/blake3-tree.js';
import { ChunkTree } from '../../src/hash/chunk-tree.js';
import { patternBytes } from '../helpers/blobs.js';

describe('ChunkTree', () => {
  for (const size of [0, 1, CHUNK_BYTES, CHUNK_BYTES + 1, 3 * CHUNK_BYTES, 5 * CHUNK_BYTES + 12_345]) {
    it(`joins the digest of ${size} bytes from chunks set out of order`, () => {
      const bytes = patternBytes(size, size + 1);
      const tree = new ChunkTree();
      const count = Math.ceil(size / CHUNK_BYTES);
      const order = [...Array(count).keys()].reverse();
      for (const i of order) tree.set(i, chunkCvOf(bytes.subarray(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES), i * CHUNK_BYTES, i === 0));
      expect(tree.digest(count).equals(blake3(bytes))).toBe(true);
      expect(tree.cvs(count).length).toBe(count * 32);
    });
  }
});

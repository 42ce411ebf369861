/**
 * Small records are read on the event loop only from memory (src/engine/segment-reader.ts): a
 * record whose bytes the page cache does not hold is read in the thread pool, so a cold read on a
 * slow disk stalls no other request. The page cache of a segment is emptied with
 * posix_fadvise(DONTNEED), which GNU dd does for `iflag=nocache count=0`.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/engine/engine.js';
import { HEADER_BYTES } from '../src/engine/record.js';
import { SegmentReader } from '../src/engine/segment-reader.js';
import type { SegmentStore } from '../src/engine/segment-store.js';
import { patternBytes, putRaw } from './helpers/blobs.js';
import { openEngine, testConfig } from './helpers/engine.js';
import { pagesKept } from './helpers/page-cache.js';
import { type NodeProcess, startNode } from './helpers/node-process.js';
import { waitFor } from './helpers/wait.js';

const EMPTY = Buffer.alloc(0);

/** Drops every segment file's pages from the page cache (the files are synced: none is dirty). */
function dropSegmentPages(dataDir: string): void {
  const dir = join(dataDir, 'segments');
  for (const name of readdirSync(dir)) execFileSync('dd', [`if=${join(dir, name)}`, 'iflag=nocache', 'count=0', 'status=none']);
}

/** Why no read can be made cold here, or '' when one can (the data dirs are temp dirs, like the probe's). */
const warmOnly = pagesKept();
const skipped = warmOnly ? ` - skipped: ${warmOnly}` : '';

const segmentFile = (dataDir: string, segment: number): string => join(dataDir, 'segments', `${String(segment).padStart(8, '0')}.seg`);

describe('a small record whose bytes are not in memory', () => {
  let engine: Engine;
  let dataDir: string;
  beforeAll(async () => {
    const config = testConfig({ diskReserveBytes: '1MiB', readCacheBytes: 0 });
    dataDir = config.dataDir;
    engine = await openEngine(config);
  });
  afterAll(async () => {
    await engine.close();
  });

  it.skipIf(warmOnly !== '')(`is not read on the calling thread: the thread pool reads it, verified, and then it is in memory${skipped}`, async () => {
    const data = patternBytes(4096, 61);
    const put = await engine.putInline(data, 1, EMPTY);
    await engine.settled();
    const meta = engine.stat(put.id)!;
    // A page still under writeback is not dropped (the suite's other I/O can keep it there): the
    // drop is asked again until the record is out of memory, which the calling thread must then
    // refuse to read (a read that blocked for it would answer it here, and this would time out).
    await waitFor(() => {
      dropSegmentPages(dataDir);
      return engine.readInlineSync(meta) === undefined;
    }, { what: 'the record out of memory, and not read on the calling thread', timeoutMs: 10_000 });
    expect((await engine.readInline(meta)).equals(data)).toBe(true);
    expect(engine.readInlineSync(meta)?.equals(data)).toBe(true);
  });

  it('still reads on the calling thread where the kernel cannot read without waiting (a blocking read)', async () => {
    const data = patternBytes(4096, 62);
    const put = await engine.putInline(data, 1, EMPTY);
    await engine.settled();
    const meta = engine.stat(put.id)!;
    const store = { path: (segment: number) => segmentFile(dataDir, segment) } as SegmentStore;
    const reader = new SegmentReader(store, 64 * 1024);
    // What an old kernel or a file system without RWF_NOWAIT answers: EOPNOTSUPP.
    let calls = 0;
    (reader as unknown as { noWait: () => number }).noWait = () => (calls++, -95);
    dropSegmentPages(dataDir);
    const at = meta.offset + HEADER_BYTES;
    expect(reader.readSmallScratch(meta.segment, at, 4096)?.equals(data)).toBe(true);
    expect(reader.readSmallScratch(meta.segment, at, 4096)?.equals(data)).toBe(true);
    expect(calls).toBe(1); // asked once, then never again
    reader.close();
  });
});

describe('GET of a small blob whose bytes are not in memory', () => {
  let node: NodeProcess;
  beforeAll(async () => {
    node = await startNode();
  });
  afterAll(async () => {
    await node.stop();
  });

  it.skipIf(warmOnly !== '')(`answers its verified bytes, again and again, hot or cold${skipped}`, async () => {
    const blobs = [1, 2, 3].map((n) => patternBytes(4096, 70 + n));
    const ids: string[] = [];
    for (const bytes of blobs) {
      const put = await putRaw(node.url, bytes);
      expect(put.status).toBe(201);
      ids.push(((await put.json()) as { id: string }).id);
    }
    dropSegmentPages(node.dataDir);
    for (let round = 0; round < 3; round++) {
      for (const [i, id] of ids.entries()) {
        const res = await fetch(`${node.url}/v1/blobs/${id}`);
        expect(res.status).toBe(200);
        expect(Buffer.from(await res.arrayBuffer()).equals(blobs[i]!)).toBe(true);
      }
      dropSegmentPages(node.dataDir);
    }
  });
});

/**
 * Small stores' pooled log records (src/engine/small-record.ts): one object is a store's record,
 * its index entry while the overlay holds it, and its digest's owner; it serves another store once
 * its store is answered and its commit is in. A reader's entry is its own (BlobIndex.get copies an
 * overlay entry): later stores reusing the record do not change what the reader holds.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/engine.js';
import { blake3 } from '../../src/hash/blake3.js';
import { crc32c } from '../../src/hash/crc32c.js';
import { patternBytes } from '../helpers/blobs.js';
import { openEngine, testConfig } from '../helpers/engine.js';

const EMPTY = Buffer.alloc(0);

/** A small store through the fast path, as the HTTP front end makes it (uWS hands an ArrayBuffer over). */
function putSmall(engine: Engine, data: Buffer): Promise<{ id: Buffer; existed: boolean }> {
  const body = new Uint8Array(data).buffer;
  return new Promise((resolve, reject) =>
    engine.putSmall(body, 1, EMPTY, { stored: (err, id, existed) => (err ? reject(err) : resolve({ id: Buffer.from(id), existed })) }),
  );
}

describe('pooled small-store records', () => {
  let engine: Engine | undefined;
  afterEach(async () => {
    await engine?.close();
    engine = undefined;
  });

  it('an entry read while its record is in the overlay stays the blob\'s after the record serves other stores', async () => {
    // Commits wait 300 ms: the first store is read while its record is the overlay's entry.
    engine = await openEngine(testConfig({ diskReserveBytes: '1MiB', indexCommitIntervalMs: 300, durableAck: 'log' }));
    const first = patternBytes(4096, 1);
    await putSmall(engine, first);
    await engine.settled();
    const data = patternBytes(4096, 2);
    const { id, existed } = await putSmall(engine, data);
    expect(existed).toBe(false);
    expect(engine.index.overlay.blobs.lookup(id)).toBeDefined();
    const held = engine.index.get(id)!;
    expect(held.checksum.equals(blake3(data))).toBe(true);
    // The record goes back once committed, and serves the next stores.
    await engine.settled();
    for (let i = 0; i < 20; i++) await putSmall(engine, patternBytes(4096, 100 + i));
    await engine.settled();
    expect(held.checksum.equals(blake3(data))).toBe(true);
    expect((await engine.readInline(engine.stat(id)!)).equals(data)).toBe(true);
  });

  it('reuses a record only once its store is answered and its commit is in', async () => {
    engine = await openEngine(testConfig({ diskReserveBytes: '1MiB', indexCommitIntervalMs: 300, durableAck: 'log' }));
    const pool = (engine as unknown as { smallRecords: { idle: number } }).smallRecords;
    await putSmall(engine, patternBytes(4096, 3));
    await engine.settled();
    const idle = pool.idle;
    // Answered (durable in the log) but not committed: the record is the overlay's, not the pool's.
    const stored = await Promise.all([putSmall(engine, patternBytes(4096, 4)), putSmall(engine, patternBytes(4096, 5))]);
    expect(pool.idle).toBe(Math.max(0, idle - 2));
    await engine.settled();
    expect(pool.idle).toBe(Math.max(idle, 2));
    for (const { id } of stored) expect(engine.stat(id)).toBeDefined();
    // Bytes stored already take no record: answered at once, the record back in the pool.
    expect((await putSmall(engine, patternBytes(4096, 4))).existed).toBe(true);
    expect(pool.idle).toBe(Math.max(idle, 2));
  });

  it('hashes the small stores of one turn together: each its own id and CRC, copies within the turn and of stored blobs answered as stored', async () => {
    engine = await openEngine(testConfig({ diskReserveBytes: '1MiB', durableAck: 'log' }));
    const e = engine;
    const sizes = [4096, 4096, 100, 1024, 1025, 5000, 8192, 16 * 1024, 16 * 1024 + 1, 40_000];
    const before = patternBytes(4096, 900);
    await putSmall(e, before);
    // 40 distinct bodies, 5 copies of them and 3 of a blob stored before, all in one turn.
    const bodies = Array.from({ length: 40 }, (_, i) => patternBytes(sizes[i % sizes.length]!, 1000 + i));
    const sent = [...bodies, bodies[0]!, bodies[7]!, bodies[7]!, bodies[21]!, bodies[39]!, before, before, before];
    const answers = await Promise.all(sent.map((data) => putSmall(e, data)));
    answers.forEach(({ id, existed }, i) => {
      expect(id.equals(blake3(sent[i]!).subarray(0, 16)), `store ${i}: its id`).toBe(true);
      expect(existed, `store ${i}: stored before`).toBe(i >= bodies.length);
    });
    for (const data of bodies) {
      const meta = e.stat(blake3(data).subarray(0, 16))!;
      expect(meta.dataCrc).toBe(crc32c(data));
      expect((await e.readInline(meta)).equals(data)).toBe(true);
    }
  });

  it('a store made from a store\'s answer, in the turn that hashes it, is hashed at the next turn: every store answered with its own id', async () => {
    engine = await openEngine(testConfig({ diskReserveBytes: '1MiB', durableAck: 'log' }));
    const e = engine;
    const stored = patternBytes(4096, 700);
    await putSmall(e, stored);
    const [b, c, d, f] = [701, 702, 703, 704].map((seed) => patternBytes(4096, seed));
    const later: Promise<{ id: Buffer; existed: boolean }>[] = [];
    // A copy of a stored blob is answered during the turn's hashing; its answer stores two more.
    const first = new Promise<{ id: Buffer; existed: boolean }>((resolve, reject) =>
      e.putSmall(new Uint8Array(stored).buffer, 1, EMPTY, {
        stored: (err, id, existed) => {
          if (err) return reject(err);
          later.push(putSmall(e, d!), putSmall(e, f!));
          resolve({ id: Buffer.from(id), existed });
        },
      }),
    );
    const others = [putSmall(e, b!), putSmall(e, c!)];
    expect((await first).existed).toBe(true);
    const answers = await Promise.all([...others, ...later]);
    [b, c, d, f].forEach((data, i) => {
      expect(answers[i]!.id.equals(blake3(data!).subarray(0, 16)), `store ${i}: its own id`).toBe(true);
      expect(answers[i]!.existed).toBe(false);
    });
    for (const data of [b, c, d, f]) expect((await e.readInline(e.stat(blake3(data!).subarray(0, 16))!)).equals(data!)).toBe(true);
  });

  it('a store placed as the engine closes is stored before it closes', async () => {
    engine = await openEngine(testConfig({ diskReserveBytes: '1MiB', durableAck: 'log' }));
    const data = patternBytes(4096, 800);
    const answered = putSmall(engine, data);
    await engine.close();
    expect((await answered).existed).toBe(false);
    engine = await openEngine(testConfig({ dataDir: engine.config.dataDir, diskReserveBytes: '1MiB' }));
    expect((await engine.readInline(engine.stat(blake3(data).subarray(0, 16))!)).equals(data)).toBe(true);
  });

  it('reuses the log\'s batches, those that waited for a file\'s unlink too, under either durable-ack', async () => {
    for (const durableAck of ['log', 'index'] as const) {
      // Index commits every 5 ms: a batch serves again once its records' commit is done, so the
      // batches under way at once scale with the interval (the default 20 ms let ~25 be made here).
      engine = await openEngine(testConfig({ diskReserveBytes: '1MiB', durableAck, smallBlobMaxBytes: '4KiB', indexCommitIntervalMs: 5 }));
      const made = (): number => (engine as unknown as { segmentLog: { batches: unknown[] } }).segmentLog.batches.length;
      for (let i = 0; i < 30; i++) {
        await putSmall(engine, patternBytes(4096, 200 + i));
        // A blob in a file of its own: its delete's batch waits for the unlink before it is answered.
        const sink = await engine.beginFile();
        await sink.write(patternBytes(6000, 300 + i));
        const { id } = await engine.commitFile(sink, await sink.finish(), 1, EMPTY);
        await engine.delete(id);
      }
      await engine.settled();
      // 90 batches went through the log (a store, a file's record, a delete, one after another);
      // those made are as many as were under way at once (waiting for their commit's interval
      // meanwhile): a handful, each serving again, not one per delete.
      console.log(`durable-ack ${durableAck}: ${made()} batches made for 90`);
      expect(made()).toBeLessThan(20);
      await engine.close();
      engine = undefined;
    }
  });
});

/**
 * Index commits under durable-ack log (src/engine/log.ts): a store is acknowledged once its
 * record is fsynced and staged in the overlay, and its index commit starts at most every
 * indexCommitIntervalMs after the one before, taking every batch staged meanwhile. Under
 * durable-ack index the store waits for its commit, which never waits for the interval.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/engine.js';
import { patternBytes } from '../helpers/blobs.js';
import { openEngine, testConfig } from '../helpers/engine.js';

const EMPTY = Buffer.alloc(0);
/** Far longer than a store's fsync, so the order below does not depend on the machine's speed. */
const INTERVAL_MS = 3000;

describe('index commits', () => {
  let engine: Engine | undefined;
  afterEach(async () => {
    await engine?.close();
    engine = undefined;
  });

  it('with durable-ack log, start at most every indexCommitIntervalMs; stores are acknowledged and read meanwhile', async () => {
    engine = await openEngine(testConfig({ diskReserveBytes: '1MiB', indexCommitIntervalMs: INTERVAL_MS, durableAck: 'log' }));
    // The first commit starts at once.
    await engine.putInline(patternBytes(1000, 1), 1, EMPTY);
    await engine.settled();
    const first = engine.index.committedCheckpoint.nextLsn;
    // The next ones wait for the interval: acknowledged, served from the overlay, not committed yet.
    const later = [patternBytes(1000, 2), patternBytes(2000, 3), patternBytes(3000, 4)];
    const ids = [];
    for (const data of later) ids.push((await engine.putInline(data, 1, EMPTY)).id);
    // Time for a commit that did not wait to end. The interval is a rule of time, and nothing tells
    // a committer waiting for it from one committing (committing is true in both): a pause it is.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(engine.index.committedCheckpoint.nextLsn).toBe(first);
    for (const [i, id] of ids.entries()) expect((await engine.readInline(engine.stat(id)!)).equals(later[i]!)).toBe(true);
    // Then one commit takes all three.
    await engine.settled();
    expect(engine.index.committedCheckpoint.nextLsn).toBeGreaterThan(first);
    expect(engine.index.checkpoint).toEqual(engine.index.committedCheckpoint);
  });

  it('with durable-ack index, a store is answered once its commit is flushed, the interval not waited for', async () => {
    engine = await openEngine(testConfig({ diskReserveBytes: '1MiB', indexCommitIntervalMs: INTERVAL_MS, durableAck: 'index' }));
    const started = Date.now();
    for (let i = 0; i < 3; i++) {
      await engine.putInline(patternBytes(1500, 10 + i), 1, EMPTY);
      expect(engine.index.committedCheckpoint).toEqual(engine.index.checkpoint);
    }
    // Three commits back to back: had they waited for the interval, this would have taken 6 s.
    expect(Date.now() - started).toBeLessThan(2 * INTERVAL_MS);
  });
});

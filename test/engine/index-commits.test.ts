/**
 * Index commits under durable-ack log (src/engine/log.ts): a store is acknowledged once its
 * record is fsynced and staged in the overlay, and its index commit starts at most every
 * indexCommitIntervalMs after the one before, taking every batch staged meanwhile. Under
 * durable-ack index the store waits for its commit, which never waits for the interval. In a
 * cluster a commit first waits for its hold (the replicator catching up, holdIndexCommits), at
 * most indexCommitHoldMs.
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

  it('with durable-ack log, a commit waits for its hold, and commits once the hold settles', async () => {
    engine = await openEngine(testConfig({ diskReserveBytes: '1MiB', indexCommitIntervalMs: 0, indexCommitHoldMs: 1000, durableAck: 'log' }));
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    let asked = 0;
    engine.holdIndexCommits(() => {
      asked++;
      return hold;
    });
    const before = engine.index.committedCheckpoint.nextLsn;
    const data = patternBytes(1000, 20);
    const { id } = await engine.putInline(data, 1, EMPTY);
    // Acknowledged and served from the overlay while the commit waits for its hold.
    while (asked === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await engine.readInline(engine.stat(id)!)).equals(data)).toBe(true);
    expect(engine.index.committedCheckpoint.nextLsn).toBe(before);
    release();
    await engine.settled();
    expect(engine.index.committedCheckpoint.nextLsn).toBeGreaterThan(before);
  });

  it('a hold that never settles keeps a commit waiting indexCommitHoldMs at most', async () => {
    const HOLD_MS = 300;
    engine = await openEngine(testConfig({ diskReserveBytes: '1MiB', indexCommitIntervalMs: 0, indexCommitHoldMs: HOLD_MS, durableAck: 'log' }));
    let asked = 0;
    engine.holdIndexCommits(() => {
      asked++;
      return new Promise<void>(() => undefined);
    });
    const before = engine.index.committedCheckpoint.nextLsn;
    const started = performance.now();
    await engine.putInline(patternBytes(1000, 21), 1, EMPTY);
    await engine.settled();
    expect(asked).toBeGreaterThan(0);
    expect(engine.index.committedCheckpoint.nextLsn).toBeGreaterThan(before);
    // The limit, not the hold, ended the wait (a slow machine adds to it, never takes from it).
    expect(performance.now() - started).toBeGreaterThanOrEqual(HOLD_MS - 5);
  });

  it('with durable-ack index, or indexCommitHoldMs 0, no commit is held', async () => {
    for (const flags of [{ durableAck: 'index', indexCommitHoldMs: 1000 }, { durableAck: 'log', indexCommitHoldMs: 0 }]) {
      engine = await openEngine(testConfig({ diskReserveBytes: '1MiB', indexCommitIntervalMs: 0, ...flags }));
      let asked = 0;
      engine.holdIndexCommits(() => {
        asked++;
        return new Promise<void>(() => undefined);
      });
      await engine.putInline(patternBytes(1000, 22), 1, EMPTY);
      await engine.settled();
      expect(asked).toBe(0);
      await engine.close();
      engine = undefined;
    }
  });
});

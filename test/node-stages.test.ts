/**
 * The set-once slots a node's builder hands to the parts made before what they need (src/node/):
 * the metrics before the engine, the listeners and the service before the cluster. Read early, a
 * slot answers as the node always has while starting: nothing, or 503 for the cluster.
 */
import { describe, expect, it } from 'vitest';
import { BlobstoreError } from '../src/errors/errors.js';
import { AssertionError } from '../src/util/assert.js';
import { Late } from '../src/util/late.js';

describe('a set-once slot', () => {
  it('peek answers undefined until set, then the part', () => {
    const slot = new Late<{ n: number }>('the part');
    expect(slot.peek()).toBeUndefined();
    const part = { n: 1 };
    slot.set(part);
    expect(slot.peek()).toBe(part);
    expect(slot.get()).toBe(part);
  });

  it('get before set throws the error the slot was made with', () => {
    const slot = new Late<number>('the part', () => new BlobstoreError('unavailable', 'not yet'));
    expect(() => slot.get()).toThrow('not yet');
  });

  it('get before set without such an error is a bug (an assertion)', () => {
    expect(() => new Late<number>('the part').get()).toThrow(AssertionError);
  });

  it('a second set is a bug', () => {
    const slot = new Late<number>('the part');
    slot.set(1);
    expect(() => slot.set(2)).toThrow(AssertionError);
    expect(slot.get()).toBe(1);
  });
});

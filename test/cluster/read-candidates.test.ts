/**
 * Whom a read of a blob this node lacks asks, in order (src/cluster/remote-reader.ts): the owners
 * its policy names, or the first three on the ring when the policy is unknown, then nodes that may
 * hold a copy they do not own; online ones first; at most three are asked.
 */
import { describe, expect, it } from 'vitest';
import { readCandidates } from '../../src/cluster/remote-reader.js';
import { Ring } from '../../src/cluster/ring.js';

const ring = new Ring(Array.from({ length: 6 }, (_, i) => ({ nodeId: `node-${i + 1}`, region: '' })), 128);
const id = Buffer.from('00112233445566778899aabbccddeeff', 'hex');
const [o1, o2, o3, o4] = ring.owners(id, 4) as [string, string, string, string];
/** A node that owns none of the blob's first three places. */
const self = ring.nodeIds.find((n) => ![o1, o2, o3].includes(n))!;
const everyone = (): boolean => true;
/** The three a read asks when every candidate is a member it can reach. */
const asked = (list: string[]): string[] => list.slice(0, 3);

describe('readCandidates', () => {
  it('policy unknown: the first three on the ring, then leaving nodes', () => {
    expect(readCandidates(ring, self, [o4], everyone, id)).toStrictEqual([o1, o2, o3, o4]);
  });

  it('an EC policy asks as an unknown one does (any of the first owners describes the columns)', () => {
    expect(readCandidates(ring, self, [o4], everyone, id, 4)).toStrictEqual([o1, o2, o3, o4]);
  });

  it('REPLICA2: its two owners, then a leaving node (a copy it still holds), before the third on the ring', () => {
    const list = readCandidates(ring, self, [o4], everyone, id, 2);
    expect(list).toStrictEqual([o1, o2, o4, o3]);
    expect(asked(list)).not.toContain(o3);
  });

  it('REPLICA2 with nobody leaving: the third on the ring is asked only after both owners (the owner before a join)', () => {
    expect(readCandidates(ring, self, [], everyone, id, 2)).toStrictEqual([o1, o2, o3]);
  });

  it('REPLICA3: as many owners as copies first', () => {
    expect(readCandidates(ring, self, [o4], everyone, id, 3)).toStrictEqual([o1, o2, o3, o4]);
  });

  it('NONE: the ring\'s first three before a leaving node (its one copy may stay on any of them: Ring.holders)', () => {
    expect(readCandidates(ring, self, [o4], everyone, id, 1)).toStrictEqual([o1, o2, o3, o4]);
  });

  it('never this node; online nodes before offline ones', () => {
    expect(readCandidates(ring, o1, [], everyone, id, 2)).toStrictEqual([o2, o3]);
    expect(readCandidates(ring, self, [o4], (n) => n !== o1, id, 2)).toStrictEqual([o2, o4, o3, o1]);
  });
});

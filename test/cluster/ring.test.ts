/**
 * The consistent-hash ring: placement depends on the member list alone, copies go to distinct
 * nodes and to distinct regions first, a joining node takes about its share of the ids, and
 * NONE's one copy stays where it was stored when a read would find it there.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Ring, type RingMember } from '../../src/cluster/ring.js';

const members = (n: number, region = (_: number): string => ''): RingMember[] =>
  Array.from({ length: n }, (_, i) => ({ nodeId: `node-${i + 1}`, region: region(i) }));

const ids = (n: number, seed = 1): Buffer[] => {
  // Fixed ids (a counter hashed by the ring's own position rule is not needed: random bytes, seeded by index).
  const out: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    const b = Buffer.alloc(16);
    b.writeUInt32BE((i * 2654435761 + seed) >>> 0, 0);
    b.writeUInt32BE((i * 40503 + seed * 7) >>> 0, 4);
    b.writeUInt32BE((i * 97 + 13) >>> 0, 8);
    out.push(b);
  }
  return out;
};

describe('Ring', () => {
  it('places every blob the same way whatever the order of the member list', () => {
    const a = new Ring(members(7), 128);
    const b = new Ring([...members(7)].reverse(), 128);
    for (let i = 0; i < 2000; i++) {
      const id = randomBytes(16);
      expect(b.owners(id, 3)).toEqual(a.owners(id, 3));
    }
  });

  it('holders: NONE stays on its taker when the taker is among the three a read asks, else its owner; other policies their owners', () => {
    const ring = new Ring(members(6), 128);
    let stayed = 0;
    for (const id of ids(600)) {
      const three = ring.owners(id, 3);
      for (const taker of ring.nodeIds) {
        const none = ring.holders(id, 1, taker);
        expect(none).toEqual(three.includes(taker) ? [taker] : [three[0]]);
        if (none[0] === taker && taker !== three[0]) stayed++;
        expect(ring.holders(id, 3, taker)).toEqual(three);
        expect(ring.holders(id, 2, taker)).toEqual(three.slice(0, 2));
      }
    }
    expect(stayed).toBeGreaterThan(0);
    // On three nodes every node is among them: NONE never moves.
    const small = new Ring(members(3), 128);
    for (const id of ids(200)) for (const taker of small.nodeIds) expect(small.holders(id, 1, taker)).toEqual([taker]);
  });

  it('gives distinct nodes, as many as asked or as the ring has', () => {
    const ring = new Ring(members(5), 128);
    for (const id of ids(2000)) {
      const three = ring.owners(id, 3);
      expect(new Set(three).size).toBe(3);
      expect(ring.owners(id, 9)).toHaveLength(5);
    }
    expect(new Ring(members(2), 128).owners(randomBytes(16), 3)).toHaveLength(2);
    expect(new Ring([], 128).owners(randomBytes(16), 3)).toEqual([]);
  });

  it('puts copies in distinct regions first, then fills with the next nodes', () => {
    // Three regions of 3, 3 and 1 nodes: every blob has one copy in each region.
    const region = (i: number): string => (i < 3 ? 'eu' : i < 6 ? 'us' : 'ap');
    const ring = new Ring(members(7, region), 128);
    const regionOf = new Map(members(7, region).map((m) => [m.nodeId, m.region]));
    for (const id of ids(3000)) {
      const owners = ring.owners(id, 3);
      expect(new Set(owners.map((o) => regionOf.get(o))).size).toBe(3);
      // Five copies over three regions: still all regions, and distinct nodes.
      const five = ring.owners(id, 5);
      expect(new Set(five).size).toBe(5);
      expect(new Set(five.map((o) => regionOf.get(o))).size).toBe(3);
      expect(five.slice(0, 3)).toEqual(owners);
    }
  });

  it('moves about 1/11 of the ids to an 11th node, and nothing between the other ten', () => {
    const ten = new Ring(members(10), 128);
    const eleven = new Ring(members(11), 128);
    const sample = ids(100_000, 3);
    let moved = 0;
    for (const id of sample) {
      const before = ten.owners(id, 1)[0];
      const after = eleven.owners(id, 1)[0];
      if (before === after) continue;
      moved++;
      expect(after).toBe('node-11');
    }
    expect(moved / sample.length).toBeGreaterThan(0.06);
    expect(moved / sample.length).toBeLessThan(0.13);
  });
});

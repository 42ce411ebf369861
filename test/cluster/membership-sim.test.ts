/**
 * A seeded simulation of the membership protocol (FoundationDB / VOPR style): 5-7 nodes run the
 * real Membership state machine over an in-memory network that delays, drops, duplicates and
 * partitions messages, while random joins (at different nodes at once), graceful and immediate
 * leaves and restarts happen. Invariants are checked after every step and after the network heals:
 *
 *   - ring_version never goes down on any node;
 *   - a node that has seen a removal never holds the removed node active again unless a later
 *     join admitted it (a peer that has not heard of the removal cannot bring it back);
 *   - within 3 heartbeat rounds of the last fault, every member agrees on the member state (digest),
 *     the ring's members and ring_version.
 *
 * A failure prints its seed: SIM_SEED=<seed> reruns exactly that case; SIM_RUNS=<n> SIM_BASE=<seed>
 * runs n seeds from that one.
 */
import { describe, expect, it } from 'vitest';
import { HeartbeatRefused, type HeartbeatResponse, type JoinResponse, Membership, type SelfInfo } from '../../src/cluster/membership.js';
import { seededRandom } from '../helpers/rng.js';

const RUNS = Number(process.env.SIM_RUNS ?? 300);
const OFFLINE_AFTER_MS = 15_000;
const ROUND_MS = 1000;


interface SimNode {
  id: string;
  m: Membership;
  up: boolean;
  /** Highest ring_version this node ever held (it must never go below it). */
  maxVersion: number;
  /** Told to rejoin by a peer, or joining and not yet answered: joins through that peer next round. */
  rejoinVia: string | undefined;
}

interface Message {
  deliverAt: number;
  run: () => void;
}

function selfInfo(id: string): SelfInfo {
  return { nodeId: id, address: `10.0.0.${id.slice(1)}:8080`, grpcAddress: `10.0.0.${id.slice(1)}:9000`, region: '', capacityBytes: 1000 };
}

function simulate(seed: number): void {
  const rand = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const count = 5 + Math.floor(rand() * 3);
  const ids = Array.from({ length: count }, (_, i) => `n${i + 1}`);
  const options = { vnodesPerNode: 16, offlineAfterMs: OFFLINE_AFTER_MS, tellRemovedMs: 40 * OFFLINE_AFTER_MS };
  let now = 0;
  const nodes = new Map<string, SimNode>();
  let queue: Message[] = [];
  /** Pairs that cannot talk (a partition), as "a|b". */
  let cut = new Set<string>();
  let lossRate = 0;
  let dupRate = 0;
  let settling = false;
  const log: string[] = [];
  /** Incarnations of the records joins wrote, per node. */
  const joinRecords = new Map<string, number[]>();
  /** The step of the last join, leave or finished leave a node processed. */
  let lastEventStep = 0;
  let step = 0;

  const fail = (why: string): never => {
    throw new Error(`seed ${seed}: ${why}\n  (rerun: SIM_SEED=${seed})\n  last events:\n    ${log.slice(-25).join('\n    ')}`);
  };
  const reachable = (a: string, b: string): boolean => !cut.has(`${a}|${b}`) && !cut.has(`${b}|${a}`);
  /** Sends a request a -> b; the reply, if any, comes back through the same faults. */
  const send = (a: string, b: string, request: () => (() => void) | undefined): void => {
    const copies = rand() < dupRate ? 2 : 1;
    for (let c = 0; c < copies; c++) {
      if (rand() < lossRate) continue;
      queue.push({
        // Late by up to 3 rounds while faults run; at once (milliseconds, against seconds between heartbeats) once healed.
        deliverAt: now + Math.floor(rand() * (settling ? 0 : 3) * ROUND_MS),
        run: () => {
          const target = nodes.get(b);
          if (!target?.up || !reachable(a, b)) return;
          const reply = request();
          if (!reply || rand() < lossRate) return;
          queue.push({ deliverAt: now + Math.floor(rand() * (settling ? 0 : 1) * ROUND_MS), run: () => nodes.get(a)?.up && reachable(a, b) && reply() });
        },
      });
    }
  };

  const track = (n: SimNode): void => {
    if (n.m.ringVersion < n.maxVersion) fail(`ring_version of ${n.id} went down from ${n.maxVersion} to ${n.m.ringVersion}`);
    n.maxVersion = n.m.ringVersion;
  };

  /** Per holder and member: the step at which the holder first held the member's tombstone. */
  const tombstoneSeen = new Map<string, { step: number; incarnation: number }>();
  const checkTombstones = (): void => {
    for (const n of nodes.values()) {
      for (const r of n.m.records()) {
        const key = `${n.id}|${r.nodeId}`;
        const seen = tombstoneSeen.get(key);
        if (r.status === 'removed') {
          if (!seen || seen.incarnation < r.incarnation) tombstoneSeen.set(key, { step, incarnation: r.incarnation });
          continue;
        }
        if (!seen) continue;
        // Once a holder knew of the removal, only a join's newer record may bring the node back.
        const rejoined = (joinRecords.get(r.nodeId) ?? []).some((j) => j > seen.incarnation && j <= r.incarnation);
        if (!rejoined) {
          fail(`${n.id} holds ${r.nodeId} ${r.status} (incarnation ${r.incarnation}) after it held its removal (incarnation ${seen.incarnation}, step ${seen.step}), with no join between`);
        }
        tombstoneSeen.delete(key);
      }
    }
  };

  const joinThrough = (joiner: SimNode, seedId: string): void => {
    const mine = joiner.m.selfRecord();
    const req = { node_id: joiner.id, address: selfInfo(joiner.id).address, capacity_bytes: 1000, grpc_address: selfInfo(joiner.id).grpcAddress, incarnation: mine?.incarnation ?? 0 };
    send(joiner.id, seedId, () => {
      const seedNode = nodes.get(seedId)!;
      let response: JoinResponse;
      try {
        response = seedNode.m.join(req, now).response;
      } catch (err) {
        if ((err as { status?: number }).status !== 503) throw err;
        // Not a member (any more): the joiner tries another seed, as a node walks its seed list.
        return () => {
          if (joiner.rejoinVia === seedId) joiner.rejoinVia = pick(ids.filter((id) => id !== joiner.id));
        };
      }
      joinRecords.set(joiner.id, [...(joinRecords.get(joiner.id) ?? []), seedNode.m.record(joiner.id)!.incarnation]);
      lastEventStep = step;
      track(seedNode);
      return () => {
        joiner.m.absorb(response.members, now);
        track(joiner);
      };
    });
  };

  const heartbeatRound = (): void => {
    for (const n of nodes.values()) {
      if (!n.up) continue;
      n.m.expireRemoved(now);
      if (n.rejoinVia && n.m.selfStatus() !== 'joining') {
        joinThrough(n, n.rejoinVia);
        n.rejoinVia = undefined;
      }
      // A node keeps asking to join until an answer admits it (as the node's join loop does).
      if (n.m.selfStatus() === 'joining') {
        if (n.rejoinVia) joinThrough(n, n.rejoinVia);
        continue;
      }
      // A leaving node has nothing to migrate here: it finishes at some point (at once once healed).
      if (n.m.selfStatus() === 'leaving' && (settling || rand() < 0.5)) {
        n.m.finishLeaving(now);
        lastEventStep = step;
        track(n);
      }
      for (const target of n.m.heartbeatTargets()) {
        const req = n.m.heartbeatRequest();
        send(n.id, target.nodeId, () => {
          const peer = nodes.get(target.nodeId)!;
          let res: HeartbeatResponse;
          try {
            res = peer.m.heartbeat(req, now).response;
          } catch (err) {
            if (!(err instanceof HeartbeatRefused)) throw err;
            res = err.response;
          }
          track(peer);
          return () => {
            n.m.heartbeatAnswered(target.nodeId, res, now);
            if (res.commands.includes('rejoin') && n.m.selfStatus() !== 'removed') n.rejoinVia = target.nodeId;
            track(n);
          };
        });
      }
    }
  };

  /** Runs every message due by now, replies sent meanwhile included. */
  const deliver = (): void => {
    for (;;) {
      const due = queue.filter((msg) => msg.deliverAt <= now);
      if (due.length === 0) return;
      queue = queue.filter((msg) => msg.deliverAt > now);
      due.sort((a, b) => a.deliverAt - b.deliverAt);
      for (const msg of due) msg.run();
    }
  };

  const tick = (): void => {
    now += ROUND_MS;
    step++;
    heartbeatRound();
    deliver();
    checkTombstones();
    if (settling && process.env.SIM_DEBUG) {
      console.log(`tick ${step}: ` + [...nodes.values()].map((n) => `${n.id}:${n.m.selfStatus()[0]}:v${n.m.ringVersion}:${n.m.digest().slice(0, 4)}`).join(' '));
    }
  };

  // The first node forms the cluster by admitting itself.
  const first: SimNode = { id: ids[0]!, m: new Membership(selfInfo(ids[0]!), undefined, options, now), up: true, maxVersion: 0, rejoinVia: undefined };
  first.m.join({ node_id: first.id, address: selfInfo(first.id).address, capacity_bytes: 1000, grpc_address: selfInfo(first.id).grpcAddress }, now);
  nodes.set(first.id, first);
  for (const id of ids.slice(1)) nodes.set(id, { id, m: new Membership(selfInfo(id), undefined, options, now), up: true, maxVersion: 0, rejoinVia: undefined });

  const steps = 30 + Math.floor(rand() * 40);
  for (let i = 0; i < steps; i++) {
    const members = [...nodes.values()].filter((n) => n.up && n.m.selfStatus() !== 'joining' && n.m.selfStatus() !== 'removed');
    const r = rand();
    if (r < 0.3) {
      // Joins at different nodes at once: each joiner picks its own seed.
      for (const joiner of [...nodes.values()].filter((n) => n.up && n.m.selfStatus() === 'joining' && rand() < 0.6)) {
        if (members.length === 0) break;
        const seedNode = pick(members);
        log.push(`step ${step}: ${joiner.id} joins via ${seedNode.id}`);
        joiner.rejoinVia = seedNode.id;
      }
    } else if (r < 0.4 && members.length > 2) {
      const at = pick(members);
      const victim = pick(members.filter((n) => n !== at));
      const graceful = rand() < 0.5;
      log.push(`step ${step}: leave ${victim.id} (graceful ${graceful}) at ${at.id}`);
      try {
        at.m.leave(victim.id, graceful, now);
      } catch (err) {
        // A leave naming a node this one has not heard of yet is refused (404), as it should be.
        if ((err as { status?: number }).status !== 404) throw err;
      }
      track(at);
    } else if (r < 0.5) {
      const n = pick([...nodes.values()]);
      log.push(`step ${step}: restart ${n.id}`);
      // Persisted state survives; soft state does not.
      n.m = new Membership(selfInfo(n.id), n.m.persisted(), options, now);
      n.up = true;
      track(n);
    } else if (r < 0.6) {
      const n = pick([...nodes.values()]);
      n.up = !n.up;
      log.push(`step ${step}: ${n.id} ${n.up ? 'back' : 'down'}`);
    } else if (r < 0.7) {
      const side = new Set(ids.filter(() => rand() < 0.5));
      cut = new Set(ids.flatMap((a) => ids.filter((b) => side.has(a) !== side.has(b)).map((b) => `${a}|${b}`)));
      log.push(`step ${step}: partition {${[...side].join(',')}}`);
    } else if (r < 0.8) {
      lossRate = rand() * 0.5;
      dupRate = rand() * 0.3;
      log.push(`step ${step}: loss ${lossRate.toFixed(2)} dup ${dupRate.toFixed(2)}`);
    }
    tick();
  }

  // Heal: every node up, no partition, no loss; messages already in flight still arrive late.
  cut = new Set();
  lossRate = 0;
  dupRate = 0;
  for (const n of nodes.values()) n.up = true;
  settling = true;
  log.push(`step ${step}: healed`);
  // Messages still in flight arrive now (late ones from before the heal). Joins still under way
  // (a joiner walking its seeds) may land during the next rounds: the count of 3 rounds starts
  // after the last membership change any node made.
  for (const msg of queue) msg.deliverAt = now;
  deliver();
  lastEventStep = step;
  while (step - lastEventStep < 3 && step < 200) tick();
  const healedAt = lastEventStep;
  const members = [...nodes.values()].filter((n) => n.m.selfStatus() !== 'joining' && n.m.selfStatus() !== 'removed');
  const reference = members[0];
  if (!reference) return;
  for (const n of members) {
    if (n.m.digest() !== reference.m.digest()) {
      fail(`${n.id} and ${reference.id} disagree on the member state 3 rounds after the last change at step ${healedAt}:\n${JSON.stringify(n.m.records())}\n${JSON.stringify(reference.m.records())}`);
    }
    if (n.m.ringVersion !== reference.m.ringVersion) fail(`${n.id} ring_version ${n.m.ringVersion}, ${reference.id} ${reference.m.ringVersion}`);
    if (n.m.ring.nodeIds.join() !== reference.m.ring.nodeIds.join()) fail(`${n.id} and ${reference.id} have different rings`);
  }
  // Every node knows where it stands: admitted ones know they are members, removed ones that they are out.
  for (const n of nodes.values()) {
    const r = reference.m.record(n.id);
    if (r && r.status !== n.m.selfStatus()) fail(`${n.id} thinks it is ${n.m.selfStatus()}; the cluster holds it ${r.status}`);
  }
}

describe('membership converges under faults (seeded simulation)', () => {
  it(`${RUNS} random runs of joins, leaves, restarts, partitions, loss and duplication: all invariants hold`, () => {
    const only = process.env.SIM_SEED;
    const base = only ? Number(only) : Number(process.env.SIM_BASE ?? (Date.now() % 1_000_000) * 1000);
    const seeds = only ? [base] : Array.from({ length: RUNS }, (_, i) => base + i);
    console.log(`membership simulation: seeds ${seeds[0]}..${seeds[seeds.length - 1]}`);
    for (const seed of seeds) expect(() => simulate(seed)).not.toThrow();
  }, Math.max(60_000, RUNS * 100));
});

describe('a join that arrives late', () => {
  const options = { vnodesPerNode: 16, offlineAfterMs: OFFLINE_AFTER_MS, tellRemovedMs: 40 * OFFLINE_AFTER_MS };
  const request = (id: string, incarnation: number) => ({ node_id: id, address: selfInfo(id).address, grpc_address: selfInfo(id).grpcAddress, capacity_bytes: 1000, incarnation });
  const cluster = (...ids: string[]): Membership[] => {
    const ms = ids.map((id) => new Membership(selfInfo(id), undefined, options, 0));
    ms[0]!.join(request(ids[0]!, 0), 0);
    return ms;
  };

  it('does not undo a leave that came after it was sent; a removed node is still admitted again', () => {
    const [seed] = cluster('n1') as [Membership];
    seed.join(request('n2', 0), 0);
    expect(seed.record('n2')).toMatchObject({ status: 'active', incarnation: 1 });
    seed.leave('n2', true, 0);
    // The same join again (sent before the leave, delivered after it): accepted, the leave stands.
    expect(seed.join(request('n2', 0), 0).response.accepted).toBe(true);
    expect(seed.record('n2')).toMatchObject({ status: 'leaving', incarnation: 2 });
    // Once removed, a join admits the node again, with a newer incarnation (joins take odd ones).
    seed.leave('n2', false, 0);
    expect(seed.record('n2')).toMatchObject({ status: 'removed', incarnation: 4 });
    seed.join(request('n2', 0), 0);
    expect(seed.record('n2')).toMatchObject({ status: 'active', incarnation: 5 });
  });

  it('a leave made from a join that lost to a removal does not outrank the removal (seed 500063162)', () => {
    const [a, b, n2] = cluster('n1', 'n3', 'n2') as [Membership, Membership, Membership];
    a.join(request('n2', 0), 0);
    b.absorb(a.records(), 0);
    n2.absorb(a.records(), 0);
    // At n1: n2 removed, then its first join, repeated late, admits it again.
    a.leave('n2', false, 0);
    a.join(request('n2', 0), 0);
    // Meanwhile n3, which heard of neither, asks n2 to leave; n2 hears of that and finishes.
    b.leave('n2', true, 0);
    n2.absorb(b.records(), 0);
    n2.finishLeaving(0);
    // n1 asks n2 to leave too, from the record its join wrote: the removal outranks that leave.
    a.leave('n2', true, 0);
    for (const m of [a, b]) m.absorb(n2.records(), 0);
    b.absorb(a.records(), 0);
    for (const m of [a, b, n2]) expect(m.record('n2')?.status).toBe('removed');
  });

  it('a join at the same moment as a removal elsewhere does not tie with it (seed 800005710)', () => {
    const [a, b, n2] = cluster('n4', 'n5', 'n2') as [Membership, Membership, Membership];
    a.join(request('n5', 0), 0);
    b.absorb(a.records(), 0);
    a.join(request('n2', 0), 0);
    n2.absorb(a.records(), 0);
    // n5, not yet told of n2, admits it too (the join carries the record n4 wrote), then asks it to
    // leave; n4 removes it meanwhile.
    b.join(request('n2', n2.record('n2')!.incarnation), 0);
    a.leave('n2', false, 0);
    const join = b.record('n2')!.incarnation;
    const removal = a.record('n2')!.incarnation;
    expect(join).not.toBe(removal);
    b.leave('n2', true, 0);
    a.absorb(b.records(), 0);
    // The join is above the removal, so the leave made from it stands above a join.
    expect(join).toBeGreaterThan(removal);
    expect(a.record('n2')).toMatchObject({ status: 'leaving' });
  });
});

/**
 * How nodes started together form exactly one cluster from any seed list (docs/cluster.md,
 * Bootstrap). A node without a member record of itself probes every seed each round:
 *
 *   a seed that is a member          -> join through it (done)
 *   every seed answered, all joining -> the node whose id is the lowest of all it heard founds
 *                                       the cluster (admits itself); the others join it next round
 *   a seed silent past bootstrapWait -> the same, among a majority of the listed nodes
 *
 * "Heard" is gossip: a probe carries the prober's id and the lowest id it heard, and so does the
 * answer, so a node learns of nodes its own list does not name. Nodes that agree on their seed set
 * (everyone lists the others, or everyone, in any order, or DNS names) all hear every id in the
 * round where all are up, so exactly one founds. Waiting for every seed keeps a slow seed from
 * being left out (no cluster of one); the majority fallback keeps a seed that never starts from
 * blocking the rest, and two majorities of one set always share a node that hears both minima.
 * A node whose seeds name only itself (or none) founds at once.
 */

/** A probe, both ways: who is asking or answering, and the lowest node id it heard from its node. */
export interface BootstrapProbe {
  node_id: string;
  candidate: string;
}

/** A probe's answer: besides the probe, whether the answering node is a member already. */
export interface BootstrapAnswer extends BootstrapProbe {
  member: boolean;
}

export type BootstrapStep =
  | { kind: 'join'; via: number }
  | { kind: 'found' }
  | { kind: 'wait'; why: string };

export class Bootstrap {
  /** Ids heard from the nodes themselves (a probe or an answer), with when. */
  private readonly direct = new Map<string, number>();
  /** Ids other nodes named as the lowest they heard, with when: hints, never passed on. */
  private readonly named = new Map<string, number>();

  constructor(
    private readonly selfId: string,
    private readonly startedMs: number,
    /** How long to wait for every seed before a majority may found. */
    private readonly waitMs: number,
    /** An id not heard of again for this long is forgotten (a node that went away). */
    private readonly forgetMs: number,
  ) {}

  /** A probe came in, or an answer: its sender is heard of, and the candidate it named. */
  hear(probe: BootstrapProbe, nowMs: number): void {
    if (probe.node_id !== '') this.direct.set(probe.node_id, nowMs);
    if (probe.candidate !== '') this.named.set(probe.candidate, nowMs);
  }

  /**
   * The lowest of this node's id and the ids heard lately (`named` too: the named ones as well).
   * Only ids heard from their own nodes are passed on, so a node that went away is forgotten
   * everywhere forgetMs after it was last heard, however the others echo each other.
   */
  private lowest(nowMs: number, withNamed: boolean): string {
    let lowest = this.selfId;
    for (const map of withNamed ? [this.direct, this.named] : [this.direct]) {
      for (const [id, at] of map) {
        if (nowMs - at > this.forgetMs) map.delete(id);
        else if (id < lowest) lowest = id;
      }
    }
    return lowest;
  }

  /** What this node's probe (or its answer to one) says. */
  probe(nowMs: number): BootstrapProbe {
    return { node_id: this.selfId, candidate: this.lowest(nowMs, false) };
  }

  /**
   * The next step after a round of probes, one answer per seed (undefined: no answer). Answers
   * from this node itself (a DNS name or address of its own among the seeds) do not count.
   */
  decide(answers: readonly (BootstrapAnswer | undefined)[], nowMs: number): BootstrapStep {
    let listed = 0;
    const answered = new Set<string>();
    for (const [i, a] of answers.entries()) {
      if (a?.node_id === this.selfId) continue;
      listed++;
      if (!a) continue;
      if (a.member) return { kind: 'join', via: i };
      this.hear(a, nowMs);
      answered.add(a.node_id);
    }
    if (listed === 0) return { kind: 'found' };
    const lowest = this.lowest(nowMs, true);
    if (lowest !== this.selfId) return { kind: 'wait', why: `${lowest} has the lowest id: it forms the cluster` };
    if (answered.size >= listed) return { kind: 'found' };
    const majority = 2 * (answered.size + 1) > listed + 1;
    if (nowMs - this.startedMs >= this.waitMs && majority) return { kind: 'found' };
    return { kind: 'wait', why: `${answered.size} of ${listed} seeds answered` };
  }
}

/**
 * A cluster node's placement: STARTING until its cluster is made, the cluster from then on. The
 * node's listener opens before its cluster is made (peers learn its port from it), so the blob
 * service is made with this, over the slot the node's builder sets once (src/util/late.ts). The
 * cluster itself answers not ready until it has admitted this node (Placement.ready).
 */
import type { BlobMeta, PutResult } from '../blob/meta.js';
import type { Policy } from '../blob/policy.js';
import type { LateRead } from '../util/late.js';
import type { StoreContent } from './blob-writer.js';
import type { ByteRange, ChunkSink, FileSink } from './local-store.js';
import { type Located, type Placement, STARTING } from './placement.js';

export class LatePlacement implements Placement {
  constructor(private readonly cluster: LateRead<Placement>) {}

  private get target(): Placement {
    return this.cluster.peek() ?? STARTING;
  }

  ready(): boolean {
    return this.target.ready();
  }

  nodesAvailable(): number {
    return this.target.nodesAvailable();
  }

  storeEc(content: StoreContent, policy: Policy, labels: Buffer): Promise<PutResult> {
    return this.target.storeEc(content, policy, labels);
  }

  openEcStream(policy: Policy, size: number): FileSink | undefined {
    return this.target.openEcStream(policy, size);
  }

  replicates(policy: Policy): boolean {
    return this.target.replicates(policy);
  }

  stored(id: Buffer, data?: Buffer): Promise<void> | undefined {
    return this.target.stored(id, data);
  }

  freshCopy(bytes: Uint8Array | ArrayBuffer): Buffer {
    return this.target.freshCopy(bytes);
  }

  find(id: Buffer): Promise<Located | undefined> {
    return this.target.find(id);
  }

  fetch(blob: Located, sink: ChunkSink, range?: ByteRange): Promise<void> {
    return this.target.fetch(blob, sink, range);
  }

  repair(meta: BlobMeta): void {
    this.target.repair(meta);
  }
}

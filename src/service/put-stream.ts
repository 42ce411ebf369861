/**
 * The rules of a put stream (PutChunk messages), for every transport: chunks in order, the
 * policy and labels on the first (later chunks may repeat them, not change them), `final` true
 * on the last, one blob per stream. A stream that ends before a chunk, or before its final
 * chunk, is INTERNAL (the spec's 500) and leaves nothing behind; a chunk after the final one, or
 * with another blob's id, policy or labels, is INVALID_ARGUMENT.
 */
import { BlobstoreError, internal, invalidArgument } from '../errors/errors.js';
import type { PutResult } from '../blob/meta.js';
import { encodeLabels } from '../blob/labels.js';
import { type Policy, parsePolicy } from '../blob/policy.js';
import type { BlobService } from './blob-service.js';
import type { BlobWriter, FlowControl } from './blob-writer.js';

export interface PutChunkMessage {
  /** The blob's id when the client gives it (ids only tell blobs apart: they must not change). */
  id?: Buffer | undefined;
  data: Uint8Array;
  final: boolean;
  /** Name or number; only on the first chunk. */
  policy?: unknown;
  /** A map of strings; only on the first chunk. */
  labels?: unknown;
}

export class PutStream {
  private readonly writer: BlobWriter;
  private chunks = 0;
  private finalSeen = false;
  private policy: Policy = 3;
  private labels: Buffer = Buffer.alloc(0);
  private id: Buffer | undefined;

  constructor(
    private readonly service: BlobService,
    flow?: FlowControl,
  ) {
    this.writer = service.openWriter(flow);
  }

  get lastActivityMs(): number {
    return this.writer.lastActivityMs;
  }

  get received(): number {
    return this.writer.received;
  }

  /** Applies one chunk; throws a BlobstoreError when it breaks the rules (then discard()). */
  chunk(msg: PutChunkMessage): void {
    if (this.finalSeen) throw invalidArgument('put stream: a chunk after the final chunk');
    if (this.chunks === 0) {
      this.policy = parsePolicy(msg.policy);
      this.labels = encodeLabels(msg.labels, this.service.config);
      this.service.checkPlacement({ policy: this.policy, labels: this.labels });
      this.writer.expectPolicy(this.policy);
    } else {
      // Later chunks may repeat the first chunk's policy and labels, not change them.
      if (msg.policy !== undefined && msg.policy !== null && msg.policy !== '' && parsePolicy(msg.policy) !== this.policy) {
        throw invalidArgument('put stream: the policy is set on the first chunk and cannot change');
      }
      if (msg.labels !== undefined && msg.labels !== null && !encodeLabels(msg.labels, this.service.config).equals(this.labels)) {
        throw invalidArgument('put stream: labels are set on the first chunk and cannot change');
      }
    }
    if (msg.id && msg.id.length > 0) {
      if (this.id && !this.id.equals(msg.id)) throw invalidArgument('put stream: chunks of different blobs interleaved (the id changed)');
      this.id = msg.id;
    }
    this.chunks++;
    if (msg.data.length > 0) this.writer.write(msg.data);
    if (msg.final) this.finalSeen = true;
  }

  /**
   * Whether the next chunk's data may be taken as it arrives, before the chunk's other fields
   * (data()): the first chunk (policy and labels) was applied and the final one has not come.
   */
  get midStream(): boolean {
    return this.chunks > 0 && !this.finalSeen;
  }

  /**
   * Data of the next chunk as it arrives, before chunk() applies the chunk's other fields (with
   * no data); only while midStream. A chunk that then breaks the rules fails the stream as it
   * would have with its data (the caller discards it).
   */
  data(bytes: Uint8Array): void {
    if (!this.midStream) throw internal('put stream: data taken before the header chunk or after the final one');
    if (bytes.length > 0) this.writer.write(bytes);
  }

  /** The stream ended: stores the blob if its final chunk came. */
  async end(): Promise<PutResult> {
    if (this.chunks === 0) throw internal('put stream ended before a header chunk');
    if (!this.finalSeen) throw new BlobstoreError('unfinished_stream', 'put stream ended before the final chunk');
    return this.writer.finish({ policy: this.policy, labels: this.labels });
  }

  discard(): Promise<void> {
    return this.writer.discard();
  }
}

/**
 * GetStream's chunking, whichever server answers it (direct-streams.ts on the HTTP/2 stream, or
 * grpc-js in blob-handlers.ts for a compressed call): a blob's verified chunks cut to what one
 * message may carry.
 */
import { CHUNK_BYTES } from '../blob/chunk.js';
import type { BlobService, Located } from '../service/blob-service.js';

/** The largest data field of a GetChunk under GrpcMaxMessageBytes (at most one 1 MiB chunk). */
export function maxChunkData(grpcMaxMessageBytes: number): number {
  return Math.min(CHUNK_BYTES, grpcMaxMessageBytes - 16);
}

/**
 * A blob's verified chunks as GetChunk data fields of at most `maxData` bytes, in order, `final`
 * on the last (the empty blob: one empty final chunk); each waits for `send` to take it.
 */
export function streamChunks(service: BlobService, meta: Located, maxData: number, send: (data: Buffer, final: boolean) => Promise<void> | void): Promise<void> {
  let sent = 0;
  return service.stream(meta, async (chunk) => {
    if (chunk.length === 0) return send(chunk, true);
    for (let at = 0; at < chunk.length; at += maxData) {
      const part = at === 0 && chunk.length <= maxData ? chunk : chunk.subarray(at, at + maxData);
      sent += part.length;
      await send(part, sent === meta.size);
    }
  });
}

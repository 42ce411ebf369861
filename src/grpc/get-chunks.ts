/**
 * GetStream's chunking, whichever server answers it (direct-streams.ts on the HTTP/2 stream, or
 * grpc-js in blob-handlers.ts for a compressed call): a blob's verified chunks cut to what one
 * message may carry.
 */
import { pieceBytes, STREAM_CHUNK_MAX_BYTES } from '../blob/chunk.js';
import type { BlobService, Located } from '../service/blob-service.js';

/** The largest data field of a GetChunk under GrpcMaxMessageBytes (at most the spec's 1 MB). */
export function maxChunkData(grpcMaxMessageBytes: number): number {
  return Math.min(STREAM_CHUNK_MAX_BYTES, grpcMaxMessageBytes - 16);
}

/**
 * A blob's verified chunks as GetChunk data fields of at most `maxData` bytes, in order, `final`
 * on the last (the empty blob: one empty final chunk); each waits for `send` to take it. A 1 MiB
 * chunk goes as two even halves (views of it), not as 1,000,000 bytes and a remnant.
 */
export function streamChunks(service: BlobService, meta: Located, maxData: number, send: (data: Buffer, final: boolean) => Promise<void> | void): Promise<void> {
  let sent = 0;
  return service.stream(meta, async (chunk) => {
    if (chunk.length === 0) return send(chunk, true);
    const step = pieceBytes(chunk.length, maxData);
    for (let at = 0; at < chunk.length; at += step) {
      const part = step === chunk.length ? chunk : chunk.subarray(at, at + step);
      sent += part.length;
      await send(part, sent === meta.size);
    }
  });
}

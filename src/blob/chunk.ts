/**
 * Bytes move in chunks of at most 1 MiB everywhere: uploads and downloads, file digests, replica
 * and shard transfers, erasure-coding cells; server-stream messages carry at most 1 MB of them.
 */
export const CHUNK_BYTES = 1024 * 1024;

/**
 * The spec's "up to 1 MB" of data per GetChunk of a server stream (gRPC GetStream and
 * GET /v1/blobs/{id}/stream), read as 10^6 bytes: the spec writes MiB where it means it (EC shards).
 */
export const STREAM_CHUNK_MAX_BYTES = 1_000_000;

/** The size of each of the fewest even pieces of at most `max` bytes that `length` bytes are cut into. */
export function pieceBytes(length: number, max: number): number {
  return length <= max ? length : Math.ceil(length / Math.ceil(length / max));
}

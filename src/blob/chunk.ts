/**
 * Bytes move in chunks of at most 1 MiB everywhere: uploads and downloads, file digests, stream
 * messages, replica and shard transfers, erasure-coding cells.
 */
export const CHUNK_BYTES = 1024 * 1024;

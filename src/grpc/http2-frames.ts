/**
 * HTTP/2 frame size our gRPC server announces (server.ts, on grpc-js's server only). Node's
 * default (16 KiB) cuts every 1 MiB message (a stream chunk, a shard cell) into 64 DATA frames,
 * each an event and a copy in grpc-js. Clients keep Node's default: the bulk of what a node reads
 * from a peer comes over the peer's API listener (http-fetcher.ts, column-stream.ts), gRPC only
 * when that path cannot serve it, and node:http2 is not patched for the whole process.
 */
export const MAX_FRAME_BYTES = 1024 * 1024 + 1024;

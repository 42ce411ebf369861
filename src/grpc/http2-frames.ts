/**
 * HTTP/2 frame size of node-to-node gRPC. Node's default (16 KiB) cuts every 1 MiB message (a
 * stream chunk, a shard cell) into 64 DATA frames, each an event and a copy in grpc-js; a node
 * announces frames of up to MAX_FRAME_BYTES instead, as server (widenHttp2Windows in server.ts)
 * and as client. grpc-js has no option for either side, so its http2.connect is wrapped once per
 * process: only grpc-js makes HTTP/2 connections here.
 */
import http2 from 'node:http2';

export const MAX_FRAME_BYTES = 1024 * 1024 + 1024;

let wrapped = false;

/** From now on, HTTP/2 client sessions of this process take frames of up to MAX_FRAME_BYTES. */
export function takeLargeFrames(): void {
  if (wrapped) return;
  wrapped = true;
  const original = http2.connect;
  const connect = (authority: string | URL, options?: http2.SecureClientSessionOptions | ((session: http2.ClientHttp2Session, socket: unknown) => void), listener?: (session: http2.ClientHttp2Session, socket: unknown) => void): http2.ClientHttp2Session => {
    if (typeof options === 'function') return original(authority, { settings: { maxFrameSize: MAX_FRAME_BYTES } }, options as never);
    return original(authority, { ...options, settings: { ...options?.settings, maxFrameSize: MAX_FRAME_BYTES } }, listener as never);
  };
  (http2 as { connect: unknown }).connect = connect;
}

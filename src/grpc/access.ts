/**
 * The access log and request ids of gRPC calls (src/log/access-log.ts). Calls reach the node two
 * ways, and each has one seam:
 *
 *   grpc-js (unary calls, health, reflection, the cluster services): a server interceptor
 *     (accessInterceptor, given to grpc.Server) sees the caller's metadata, each response
 *     message and the status
 *   PutStream and GetStream on their HTTP/2 streams (direct-call.ts): DirectCall holds a
 *     CallAccess and reports its headers, messages and status to it
 *
 * Either way a caller's sane `x-request-id` metadata comes back in the response's initial
 * metadata (in the trailers of a trailers-only answer: an error before any message), and a
 * call that is logged gets one line: the rpc, its status code, the encoded bytes of its response
 * messages, the time from its start to its status, the request id, the peer.
 */
import { Metadata, type ServerInterceptor, ServerInterceptingCall } from '@grpc/grpc-js';
import type { AccessLog } from '../log/access-log.js';
import { msSince, traceparentOf } from '../log/access-log.js';
import { saneRequestId } from '../log/request-id.js';
import { DeferredMessage } from '../proto/messages.js';

const REQUEST_ID = 'x-request-id';

/** `/blobstore.v1.BlobService/Get` -> `BlobService.Get` (the name errors are logged under, status.ts). */
export function rpcName(path: string): string {
  const slash = path.lastIndexOf('/');
  const service = path.slice(path.lastIndexOf('.', slash) + 1, slash);
  return `${service}.${path.slice(slash + 1)}`;
}

/** The caller's sane request id in `metadata`; '' when it sent none (or an insane one). */
export function sentRequestId(metadata: Metadata): string {
  const value = metadata.get(REQUEST_ID)[0];
  return typeof value === 'string' ? saneRequestId(value) : '';
}

/** A status's metadata with the request id added, unless it carries one already (status.ts). */
export function withRequestId(metadata: Metadata | null | undefined, id: string): Metadata {
  const out = metadata ?? new Metadata();
  if (out.get(REQUEST_ID).length === 0) out.set(REQUEST_ID, id);
  return out;
}

/** One call's line, for a call that is logged. */
export class CallAccess {
  private readonly startNs = process.hrtime.bigint();
  bytes = 0;
  /** A well-formed `traceparent` the caller sent (a peer reading on behalf of a client does). */
  traceparent: string | undefined;
  private finished = false;

  constructor(
    private readonly access: AccessLog,
    private readonly method: string,
    private readonly peer: string,
  ) {}

  /** The call ended with `code` (or was cancelled: `aborted`). `reqId`: the caller's, or the one the status carries. */
  finish(code: number, reqId: string, aborted: boolean): void {
    if (this.finished) return;
    this.finished = true;
    this.access.write({
      access: 'grpc', method: this.method, status: code, bytes: this.bytes, ms: msSince(this.startNs), peer: this.peer,
      ...(reqId === '' ? {} : { reqId }), ...(this.traceparent ? { traceparent: this.traceparent } : {}), ...(aborted ? { aborted } : {}),
    });
  }
}

/** The id on a status's line: the caller's, else one a failure's status carries (status.ts). */
function lineId(sent: string, status: { metadata?: Metadata | null | undefined }): string {
  if (sent !== '') return sent;
  const value = status.metadata?.get(REQUEST_ID)[0];
  return typeof value === 'string' ? value : '';
}

/** The grpc-js interceptor of every call the node serves through grpc-js. */
export function accessInterceptor(access: AccessLog): ServerInterceptor {
  return (method, call) => {
    let sent = '';
    let metadataSent = false;
    const line = access.sampled() ? new CallAccess(access, rpcName(method.path), call.getPeer()) : undefined;
    return new ServerInterceptingCall(call, {
      start: (next) => next({
        onReceiveMetadata: (metadata, pass) => {
          sent = sentRequestId(metadata);
          if (line) {
            const trace = metadata.get('traceparent')[0];
            line.traceparent = traceparentOf(typeof trace === 'string' ? trace : undefined);
          }
          pass(metadata);
        },
        onCancel: () => line?.finish(1, sent, true),
      }),
      sendMetadata: (metadata, next) => {
        metadataSent = true;
        if (sent !== '') metadata.set(REQUEST_ID, sent);
        next(metadata);
      },
      sendMessage: (message, next) => {
        // Encoded once more only for a logged call (a DeferredMessage knows its size).
        if (line) line.bytes += message instanceof DeferredMessage ? message.byteLength : (method.responseSerialize(message) as Buffer).length;
        next(message);
      },
      sendStatus: (status, next) => {
        if (sent !== '' && !metadataSent) status = { ...status, metadata: withRequestId(status.metadata, sent) };
        line?.finish(status.code, lineId(sent, status), false);
        next(status);
      },
    });
  };
}

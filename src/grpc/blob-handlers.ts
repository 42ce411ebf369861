/**
 * BlobService over gRPC: each handler checks the caller's scope, decodes, calls the BlobService
 * (src/service) and encodes; no storage rule lives here. Errors map through the catalog
 * (status.ts). PutStream is in put-stream.ts.
 */
import type {
  handleClientStreamingCall,
  handleServerStreamingCall,
  handleUnaryCall,
  ServerWritableStream,
  UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { Gate, Scope } from '../auth/gate.js';
import { blobIdFromBytes } from '../engine/blob-id.js';
import type { BlobMeta } from '../engine/engine.js';
import { encodeLabels } from '../engine/labels.js';
import { parsePolicy } from '../engine/policy.js';
import type { BlobService } from '../service/blob-service.js';
import { metaMessage } from '../service/meta.js';
import type {
  BlobMetaMessage,
  DeleteResponse,
  GetResponse,
  IdRequest,
  ListRequest,
  ListResponse,
  PutRequest,
  PutChunk,
  PutResponse,
  StatResponse,
} from './messages.js';
import { encodeGetChunk } from './messages.js';
import type { MalformedMessage } from './proto.js';
import { handlePutStream } from './put-stream.js';
import { authorization, toStatus, wellFormed } from './status.js';

const EMPTY = Buffer.alloc(0);

export function blobMeta(meta: BlobMeta): BlobMetaMessage {
  const m = metaMessage(meta);
  return { ...m, created_at: m.created_at.toString(), modified_at: m.modified_at.toString() };
}

/** Room a GetResponse needs beside the data: BlobMeta with the largest labels allowed, framing. */
function metaReserveBytes(service: BlobService): number {
  const c = service.config;
  return c.maxLabels * (c.labelKeyMaxBytes + c.labelValueMaxBytes + 8) + 256;
}

/** Resolves once the stream can take more (or is cancelled: then nothing more is written). */
function drained(call: ServerWritableStream<unknown, unknown>): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      call.off('drain', done);
      call.off('cancelled', done);
      call.off('close', done);
      resolve();
    };
    call.on('drain', done);
    call.on('cancelled', done);
    call.on('close', done);
  });
}

/** Thrown into the reader to stop it when the client has gone. */
class CallCancelled extends Error {}

export function blobServiceHandlers(service: BlobService, gate: Gate): UntypedServiceImplementation {
  const unary = <Req, Res>(method: string, scope: Scope, fn: (request: Req) => Res | Promise<Res>): handleUnaryCall<Req | MalformedMessage, Res> =>
    (call, callback) => {
      let result: Res | Promise<Res>;
      try {
        gate.check(authorization(call.metadata), scope);
        result = fn(wellFormed(call.request));
      } catch (err) {
        callback(toStatus(err, method));
        return;
      }
      if (result instanceof Promise) result.then((response) => callback(null, response), (err: unknown) => callback(toStatus(err, method)));
      else callback(null, result);
    };

  const config = service.config;
  const maxGetBytes = Math.max(0, config.grpcMaxMessageBytes - metaReserveBytes(service));

  const put = unary('Put', 'write', async (request: PutRequest): Promise<PutResponse> => {
    const options = { policy: parsePolicy(request.policy), labels: encodeLabels(request.labels, config) };
    const result = await service.put(request.data ?? EMPTY, options);
    return { id: { id: result.id }, size: result.size };
  });

  const get = unary('Get', 'read', async (request: IdRequest): Promise<GetResponse> => {
    const { meta, data } = await service.read(blobIdFromBytes(request.id?.id), maxGetBytes);
    return { data, meta: blobMeta(meta) };
  });

  const stat = unary('Stat', 'read', (request: IdRequest): StatResponse => {
    const meta = service.stat(blobIdFromBytes(request.id?.id));
    return meta ? { exists: true, meta: blobMeta(meta) } : { exists: false };
  });

  const remove = unary('Delete', 'write', async (request: IdRequest): Promise<DeleteResponse> => {
    await service.delete(blobIdFromBytes(request.id?.id));
    return { deleted: true };
  });

  const list = unary('List', 'read', (request: ListRequest): ListResponse => {
    const cursor = request.cursor && request.cursor.length > 0 ? request.cursor.toString('base64url') : undefined;
    const page = service.list(request.prefix ?? '', cursor, request.limit ?? 0);
    return {
      ids: page.ids.map((id) => ({ id })),
      next_cursor: page.nextCursor === undefined ? undefined : Buffer.from(page.nextCursor, 'base64url'),
      has_more: page.hasMore,
    };
  });

  const putStream: handleClientStreamingCall<PutChunk | MalformedMessage, PutResponse> = (call, callback) =>
    handlePutStream(service, gate, call, callback);

  const getStream: handleServerStreamingCall<IdRequest | MalformedMessage, Buffer> = (call) => {
    void streamBlob(service, gate, call);
  };

  return {
    Put: put,
    Get: get,
    Stat: stat,
    Delete: remove,
    List: list,
    PutStream: putStream,
    GetStream: getStream,
  } as UntypedServiceImplementation;
}

/**
 * GetStream: verified chunks of at most 1 MiB, each encoded (copied) at once because the reader
 * reuses its buffer; when grpc-js's queue is full (16 messages) the reader waits for 'drain', so
 * a slow client holds the node to about 16 MiB per stream, never the whole blob.
 */
async function streamBlob(service: BlobService, gate: Gate, call: ServerWritableStream<IdRequest | MalformedMessage, Buffer>): Promise<void> {
  try {
    gate.check(authorization(call.metadata), 'read');
    const meta = service.lookup(blobIdFromBytes(wellFormed(call.request).id?.id));
    let sent = 0;
    await service.stream(meta, async (chunk) => {
      if (call.cancelled) throw new CallCancelled();
      sent += chunk.length;
      if (!call.write(encodeGetChunk(chunk, sent === meta.size))) await drained(call);
    });
    if (!call.cancelled) call.end();
  } catch (err) {
    if (call.cancelled || err instanceof CallCancelled) return;
    call.emit('error', toStatus(err, 'GetStream'));
  }
}

/**
 * BlobService over gRPC: each handler checks the caller's scope, decodes, calls the BlobService
 * (src/service) and encodes; no storage rule lives here. Errors map through the catalog
 * (status.ts). PutStream is in put-stream.ts.
 */
import { scopeOf } from '../auth/access.js';
import type {
  handleClientStreamingCall,
  handleServerStreamingCall,
  handleUnaryCall,
  ServerWritableStream,
  UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { Gate, Scope } from '../auth/gate.js';
import { ClientGone } from '../errors/client-gone.js';
import { blobIdFromBytes, parseIdPrefix } from '../blob/id.js';
import type { BlobMeta } from '../blob/meta.js';
import { encodeLabels } from '../blob/labels.js';
import { parsePolicy } from '../blob/policy.js';
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
} from '../proto/messages.js';
import { maxChunkData, streamChunks } from './get-chunks.js';
import { OutgoingChunk } from '../proto/messages.js';
import type { MalformedMessage } from '../proto/loader.js';
import { handlePutStream } from './put-stream.js';
import type { Logger } from '../log/logger.js';
import { authorization, blobCallStatus, wellFormed } from './status.js';

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

/**
 * Hands GetStream chunks to grpc-js one at a time: each waits until grpc-js has encoded it (the
 * reader's buffer is free again then) or the call is gone. grpc-js encodes a message when the one
 * before it has been written to the HTTP/2 stream, so a slow client holds the node to about one
 * message in grpc-js plus the reader's read-ahead, never the whole blob.
 */
class ChunkSender {
  private wake: (() => void) | undefined;
  gone = false;

  constructor(private readonly call: ServerWritableStream<unknown, unknown>) {
    const stop = (): void => {
      this.gone = true;
      this.wake?.();
    };
    call.once('cancelled', stop);
    call.once('close', stop);
    call.once('error', stop);
  }

  send(data: Buffer, final: boolean): Promise<void> {
    // Thrown into the reader to stop it: a cancelled call is no storage failure.
    if (this.gone || this.call.cancelled) return Promise.reject(new ClientGone());
    return new Promise((resolve) => {
      this.wake = resolve;
      this.call.write(new OutgoingChunk(data, final, resolve));
    });
  }
}

export function blobServiceHandlers(service: BlobService, gate: Gate, log: Logger): UntypedServiceImplementation {
  const unary = <Req, Res>(method: string, scope: Scope, fn: (request: Req) => Res | Promise<Res>): handleUnaryCall<Req | MalformedMessage, Res> =>
    (call, callback) => {
      let result: Res | Promise<Res>;
      try {
        gate.check(authorization(call.metadata), scope);
        result = fn(wellFormed(call.request));
      } catch (err) {
        callback(blobCallStatus(service, err, method, log, call.metadata));
        return;
      }
      if (result instanceof Promise) result.then((response) => callback(null, response), (err: unknown) => callback(blobCallStatus(service, err, method, log, call.metadata)));
      else callback(null, result);
    };

  const config = service.config;
  const maxGetBytes = Math.max(0, config.grpcMaxMessageBytes - metaReserveBytes(service));

  const put = unary('Put', scopeOf('BlobService/Put'), async (request: PutRequest): Promise<PutResponse> => {
    const release = service.admitUpload();
    try {
      const options = { policy: parsePolicy(request.policy), labels: encodeLabels(request.labels, config) };
      const result = await service.put(request.data ?? EMPTY, options);
      return { id: { id: result.id }, size: result.size };
    } finally {
      release();
    }
  });

  const get = unary('Get', scopeOf('BlobService/Get'), async (request: IdRequest): Promise<GetResponse> => {
    const { meta, data } = await service.read(blobIdFromBytes(request.id?.id), maxGetBytes);
    return { data, meta: blobMeta(meta) };
  });

  const stat = unary('Stat', scopeOf('BlobService/Stat'), async (request: IdRequest): Promise<StatResponse> => {
    const meta = await service.stat(blobIdFromBytes(request.id?.id));
    return meta ? { exists: true, meta: blobMeta(meta) } : { exists: false };
  });

  const remove = unary('Delete', scopeOf('BlobService/Delete'), async (request: IdRequest): Promise<DeleteResponse> => {
    await service.delete(blobIdFromBytes(request.id?.id));
    return { deleted: true };
  });

  const list = unary('List', scopeOf('BlobService/List'), (request: ListRequest): ListResponse => {
    const cursor = request.cursor && request.cursor.length > 0 ? request.cursor.toString('base64url') : undefined;
    // The prefix is of the hex form, read case-insensitively as variant A's HTTP list reads it;
    // anything but hex is INVALID_ARGUMENT, as over HTTP.
    const page = service.list(parseIdPrefix(request.prefix ?? '', false), cursor, request.limit ?? 0);
    return {
      ids: page.ids.map((id) => ({ id })),
      next_cursor: page.nextCursor === undefined ? undefined : Buffer.from(page.nextCursor, 'base64url'),
      has_more: page.hasMore,
    };
  });

  const putStream: handleClientStreamingCall<PutChunk | MalformedMessage, PutResponse> = (call, callback) =>
    handlePutStream(service, gate, log, call, callback);

  const getStream: handleServerStreamingCall<IdRequest | MalformedMessage, unknown> = (call) => {
    void streamBlob(service, gate, log, call);
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
 * GetStream: verified chunks of at most 1 MB (less when GrpcMaxMessageBytes is smaller), in
 * order, `final` on the last; the reader waits for each to be taken (ChunkSender).
 */
async function streamBlob(service: BlobService, gate: Gate, log: Logger, call: ServerWritableStream<IdRequest | MalformedMessage, unknown>): Promise<void> {
  const sender = new ChunkSender(call);
  const maxData = maxChunkData(service.config.grpcMaxMessageBytes);
  try {
    gate.check(authorization(call.metadata), scopeOf('BlobService/GetStream'));
    const meta = await service.find(blobIdFromBytes(wellFormed(call.request).id?.id));
    await streamChunks(service, meta, maxData, (part, final) => sender.send(part, final));
    if (!sender.gone) call.end();
  } catch (err) {
    if (sender.gone || call.cancelled || err instanceof ClientGone) return;
    call.emit('error', blobCallStatus(service, err, 'GetStream', log, call.metadata));
  }
}

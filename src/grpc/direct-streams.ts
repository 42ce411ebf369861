/**
 * PutStream and GetStream served on their HTTP/2 streams (direct-seam.ts, direct-call.ts) instead
 * of through grpc-js: the same rules, codes and messages as the grpc-js handlers (put-stream.ts,
 * blob-handlers.ts), measured against a bare node:http2 stream (bench/grpc/bare-h2.ts).
 *
 *   PutStream  each PutChunk is checked and decoded as grpc-js would (the hardened deserializer of
 *              proto.ts) and handed to put-stream.ts's PutStreamCall as it arrives; after the
 *              first chunk (policy, labels) and until the final one, a chunk is taken piece by
 *              piece (put-chunk-parser.ts): its data goes to the writer straight from the DATA
 *              frames, its other fields are decoded at its end; the writer's pause stops
 *              reading the HTTP/2 stream, so the client's window closes
 *   GetStream  each verified chunk is framed as a GetChunk in one of FRAMES reusable buffers and
 *              written at once; the reader waits only when all FRAMES are still being sent, so a
 *              slow reader holds the node to FRAMES messages (plus the read-ahead)
 */
import { scopeOf } from '../auth/access.js';
import type { Gate } from '../auth/gate.js';
import { blobIdFromBytes } from '../blob/id.js';
import { ClientGone } from '../errors/client-gone.js';
import type { AccessLog } from '../log/access-log.js';
import type { Logger } from '../log/logger.js';
import type { BlobService } from '../service/blob-service.js';
import { type CallStatus, DirectCall, type MessagePieces, STATUS_OK } from './direct-call.js';
import type { DirectHandler } from './direct-seam.js';
import { maxChunkData, streamChunks } from './get-chunks.js';
import { type IdRequest, type PutChunk, type PutResponse, writeVarint } from '../proto/messages.js';
import { type MalformedMessage, serverDefinition } from '../proto/loader.js';
import { PutChunkParser } from './put-chunk-parser.js';
import { handlePutStream, type PutStreamCall } from './put-stream.js';
import { authorization, blobCallStatus, wellFormed } from './status.js';

/** GetChunk messages in flight per GetStream (each at most 1 MB + 13 bytes). */
export const FRAMES = 4;

/** The routes direct-seam.ts intercepts: `/blobstore.v1.BlobService/PutStream` and `.../GetStream`; their calls logged to `access`. */
export function directRoutes(service: BlobService, gate: Gate, log: Logger, access?: AccessLog): Map<string, DirectHandler> {
  const definition = serverDefinition('BlobService');
  const put = definition.PutStream!;
  const get = definition.GetStream!;
  const maxReceive = service.config.grpcMaxMessageBytes;
  return new Map<string, DirectHandler>([
    [put.path, (stream, headers) => {
      const call = new DirectCall(stream, headers, maxReceive, access && { log: access, method: 'BlobService.PutStream' });
      servePutStream(service, gate, log, call, put.requestDeserialize as (b: Buffer) => PutChunk | MalformedMessage, put.responseSerialize as (r: PutResponse) => Buffer);
    }],
    [get.path, (stream, headers) => {
      const call = new DirectCall(stream, headers, maxReceive, access && { log: access, method: 'BlobService.GetStream' });
      serveGetStream(service, gate, log, call, get.path, get.requestDeserialize as (b: Buffer) => IdRequest | MalformedMessage);
    }],
  ]);
}

/** grpc-js's answer to a handler's error object (a ServerErrorResponse or any Error). */
function statusOf(err: { code?: number; details?: string; message?: string; metadata?: CallStatus['metadata'] }): CallStatus {
  return { code: err.code ?? 2, details: err.details ?? err.message ?? '', metadata: err.metadata };
}

function framed(message: Buffer): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  message.copy(out, 5);
  return out;
}

function servePutStream(
  service: BlobService, gate: Gate, log: Logger, call: DirectCall,
  decode: (bytes: Buffer) => PutChunk | MalformedMessage, encode: (response: PutResponse) => Buffer,
): void {
  // DirectCall is a PutCall: it emits 'data' per message, 'end' and 'cancelled'.
  const put = handlePutStream(service, gate, log, call, (err, response) => {
    if (err) return call.sendStatus(statusOf(err));
    call.write(framed(encode(response!)));
    call.sendStatus(STATUS_OK);
  });
  call.read((bytes) => call.emit('data', decode(bytes)), () => call.emit('end'), put && new ChunkPieces(put, decode));
}

/** The chunks a PutStream takes as they arrive (PutStreamCall.streaming): data to the writer, the rest decoded at the end. */
class ChunkPieces implements MessagePieces {
  private readonly parser = new PutChunkParser();
  private readonly data = (piece: Buffer): void => this.put.dataPiece(piece);

  constructor(
    private readonly put: PutStreamCall,
    private readonly decode: (bytes: Buffer) => PutChunk | MalformedMessage,
  ) {}

  begin(length: number): boolean {
    if (!this.put.streaming) return false;
    this.parser.begin(length);
    return true;
  }

  arrived(): void {
    this.put.arrived();
  }

  piece(bytes: Buffer): void {
    this.parser.piece(bytes, this.data);
  }

  end(): void {
    this.put.chunkRest(this.decode(this.parser.end()), this.parser.streamed);
  }
}

/**
 * Frames GetChunk {bytes data = 1; bool final = 2} into FRAMES reusable buffers; a buffer is free
 * again when the HTTP/2 stream has written it (its write callback).
 */
class ChunkFramer {
  private readonly free: Buffer[] = [];
  private waiter: (() => void) | undefined;
  private allocated = 0;

  constructor(
    private readonly call: DirectCall,
    private readonly maxData: number,
  ) {
    call.once('cancelled', () => this.waiter?.());
  }

  async send(data: Buffer, final: boolean): Promise<void> {
    let frame = this.free.pop();
    while (!frame) {
      if (this.call.cancelled) throw new ClientGone();
      if (this.allocated < FRAMES) {
        this.allocated++;
        frame = Buffer.allocUnsafeSlow(5 + 1 + 5 + this.maxData + 2);
        break;
      }
      await new Promise<void>((resolve) => (this.waiter = resolve));
      this.waiter = undefined;
      frame = this.free.pop();
    }
    if (this.call.cancelled) throw new ClientGone();
    const length = data.length;
    let at = 5;
    frame[at++] = 0x0a; // field 1 (data), wire type 2
    at = writeVarint(frame, at, length);
    // fill() copies with one native memcpy; copy()/set() from the reader's SharedArrayBuffer
    // chunks run ~14x slower in V8 (messages.ts).
    if (length > 0) frame.fill(data, at, at + length);
    at += length;
    if (final) {
      frame[at++] = 0x10; // field 2 (final), wire type 0
      frame[at++] = 1;
    }
    frame[0] = 0;
    frame.writeUInt32BE(at - 5, 1);
    const used = frame;
    this.call.write(frame.subarray(0, at), () => {
      this.free.push(used);
      this.waiter?.();
    });
  }
}

async function serveGetStream(
  service: BlobService, gate: Gate, log: Logger, call: DirectCall, path: string,
  decode: (bytes: Buffer) => IdRequest | MalformedMessage,
): Promise<void> {
  // As grpc-js: one request message, then the half-close, then the handler.
  let request: IdRequest | MalformedMessage | undefined;
  const ready = await new Promise<boolean>((resolve) => {
    call.once('cancelled', () => resolve(false));
    call.read((bytes) => {
      if (request !== undefined) {
        call.sendStatus({ code: 12, details: `Received a second request message for server streaming method ${path}` });
        return resolve(false);
      }
      request = decode(bytes);
    }, () => {
      if (request === undefined) {
        call.sendStatus({ code: 12, details: `Received no request message for server streaming method ${path}` });
        return resolve(false);
      }
      resolve(true);
    });
  });
  if (!ready) return;
  const maxData = maxChunkData(service.config.grpcMaxMessageBytes);
  const framer = new ChunkFramer(call, maxData);
  try {
    gate.check(authorization(call.metadata), scopeOf('BlobService/GetStream'));
    const meta = await service.find(blobIdFromBytes(wellFormed(request!).id?.id));
    await streamChunks(service, meta, maxData, (part, final) => framer.send(part, final));
    call.sendStatus(STATUS_OK);
  } catch (err) {
    if (call.cancelled || err instanceof ClientGone) return;
    call.sendStatus(statusOf(blobCallStatus(service, err, 'GetStream', log, call.metadata)));
  }
}

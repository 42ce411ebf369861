/**
 * The three shapes of an InternalService call, each written once: a unary call, a client stream
 * (a replica, several for Migrate, or an EC column) and a server stream (a blob's or a column's
 * bytes). Each checks the caller (the cluster secret, the client certificate) first, takes only
 * well-formed messages, and answers an error with its status (status.ts).
 */
import type * as grpc from '@grpc/grpc-js';
import type { Cluster } from '../cluster/cluster.js';
import type { Logger } from '../log/logger.js';
import type { MalformedMessage } from '../proto/loader.js';
import { toStatus, wellFormed } from './status.js';

/** The receiving end of a client stream. */
export interface Receiver {
  chunk(msg: never): Promise<void>;
  end(): Promise<void>;
  abort(): Promise<void>;
}

export type Unary = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => void;

export type ClientStream = (call: grpc.ServerReadableStream<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => void;

export type ServerStream = (call: grpc.ServerWritableStream<unknown, unknown>) => void;

/**
 * A server stream's producer: `write` resolves once grpc-js has encoded the message (the sender
 * may reuse the buffer then); `send` waits only while the stream is full (buffers never reused);
 * `gone` tells that the caller cancelled.
 */
export type Produce<Req> = (req: Req, write: (msg: unknown) => Promise<void>, gone: () => boolean, send: (msg: unknown) => Promise<void>) => Promise<void>;

export class InternalCalls {
  constructor(
    /** The cluster, once it runs (a call in the moment between listening and its start gets a retry). */
    private readonly running: () => Cluster,
    private readonly log: Logger,
  ) {}

  unary<Req>(method: string, fn: (request: Req, metadata: grpc.Metadata) => unknown): Unary {
    const { running, log } = this;
    return (call, callback) => {
      let result: unknown;
      try {
        running().checkPeer(call);
        result = fn(wellFormed(call.request as Req | MalformedMessage), call.metadata);
      } catch (err) {
        callback(toStatus(err, `InternalService.${method}`, log, call.metadata));
        return;
      }
      Promise.resolve(result).then((res) => callback(null, res), (err: unknown) => callback(toStatus(err, `InternalService.${method}`, log, call.metadata)));
    };
  }

  /** A client stream of chunks, taken one at a time, in order (the stream pauses while the disk is behind). */
  receive<R extends Receiver>(method: string, make: (cluster: Cluster, repair: boolean) => R, respond: (r: R) => unknown): ClientStream {
    const { running, log } = this;
    return (call, callback) => {
      let receiver: R;
      try {
        const cluster = running();
        cluster.checkPeer(call);
        receiver = make(cluster, method === 'Migrate' || call.metadata.get('x-blobstore-repair')[0] === '1');
      } catch (err) {
        callback(toStatus(err, `InternalService.${method}`, log, call.metadata));
        return;
      }
      let failed = false;
      let chain = Promise.resolve();
      const fail = (err: unknown): void => {
        if (failed) return;
        failed = true;
        void receiver.abort();
        callback(toStatus(err, `InternalService.${method}`, log, call.metadata));
      };
      call.on('data', (msg: unknown) => {
        call.pause();
        chain = chain.then(async () => {
          if (failed) return;
          await receiver.chunk(wellFormed(msg as Parameters<R['chunk']>[0] | MalformedMessage));
          call.resume();
        }).catch(fail);
      });
      call.on('end', () => {
        chain = chain.then(async () => {
          if (failed) return;
          await receiver.end();
          callback(null, respond(receiver));
        }).catch(fail);
      });
      call.on('error', () => void receiver.abort());
      call.on('cancelled', () => {
        failed = true;
        void receiver.abort();
      });
    };
  }

  /** A server stream: `produce` writes the messages (see Produce); an error ends the call with its status. */
  serverStream<Req>(method: string, produce: Produce<Req>): ServerStream {
    const { running, log } = this;
    return (call) => {
      void (async () => {
        let cancelled = false;
        call.once('cancelled', () => (cancelled = true));
        try {
          running().checkPeer(call);
          const req = wellFormed(call.request as Req | MalformedMessage);
          const send = (msg: unknown): Promise<void> => (call.write(msg) ? Promise.resolve() : new Promise((resolve) => call.once('drain', () => resolve())));
          await produce(req, (msg) => new Promise((resolve) => call.write(msg, () => resolve())), () => cancelled, send);
          // A server stream's end() takes trailing metadata, not a last message.
          call.end();
        } catch (err) {
          if (!cancelled) call.emit('error', toStatus(err, `InternalService.${method}`, log, call.metadata));
        }
      })();
    };
  }
}

/**
 * Load generator thread of the unary figure: `channels` connections x `inFlight` Put calls each,
 * for `seconds`. Requests are PutRequest bytes encoded here (data + policy NONE; every body differs,
 * as wrk's post-unique.lua) and sent through a grpc-js generic client with identity serializers,
 * so the client spends its time on gRPC, not on protobufjs: it is a load generator, as wrk is.
 *
 *   PutRequest = 0a <varint len> <data>  10 01
 */
import { parentPort, workerData } from 'node:worker_threads';
import * as grpc from '@grpc/grpc-js';

export interface UnaryLoadJob {
  target: string;
  channels: number;
  inFlight: number;
  seconds: number;
  size: number;
  nonce: string;
  /** Index of this thread, so channel options (and connections) differ between threads. */
  thread: number;
}

export interface UnaryLoadResult {
  done: number;
  errors: number;
  firstError: string | undefined;
  elapsedS: number;
  cpuS: number;
}

const identity = (b: Buffer): Buffer => b;
const RawBlobService = grpc.makeGenericClientConstructor(
  {
    Put: {
      path: '/blobstore.v1.BlobService/Put', requestStream: false, responseStream: false,
      requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity,
    },
  },
  'RawBlobService',
);

function header(size: number): Buffer {
  const bytes = [0x0a];
  for (let v = size; ; v = Math.floor(v / 128)) {
    if (v < 0x80) {
      bytes.push(v);
      break;
    }
    bytes.push((v & 0x7f) | 0x80);
  }
  return Buffer.from(bytes);
}

async function run(job: UnaryLoadJob): Promise<UnaryLoadResult> {
  const clients = Array.from({ length: job.channels }, (_, i) => new RawBlobService(job.target, grpc.credentials.createInsecure(), {
    // The load client's own channelz bookkeeping would take CPU from the node on these 2 cores.
    'grpc.enable_channelz': 0,
    'grpc.use_local_subchannel_pool': 1,
    'bench.channel': job.thread * 1000 + i,
  }) as unknown as grpc.Client & { Put: (req: Buffer, cb: (err: grpc.ServiceError | null, res: Buffer) => void) => void });
  const head = header(job.size);
  const template = Buffer.concat([head, Buffer.alloc(job.size, 'b'), Buffer.from([0x10, 0x01])]);
  let done = 0;
  let errors = 0;
  let firstError: string | undefined;
  let counter = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + job.seconds * 1000;
  const loop = (c: (typeof clients)[number]): Promise<void> =>
    new Promise((resolve) => {
      const next = (): void => {
        if (performance.now() >= end) return resolve();
        const request = Buffer.from(template);
        request.write(`${job.nonce}:${job.thread}:${counter++}:`.padEnd(40), head.length, 'latin1');
        c.Put(request, (err, response) => {
          if (err || response.length === 0) {
            errors++;
            firstError ??= err ? `${err.code} ${err.details}` : 'empty response';
          } else done++;
          next();
        });
      };
      next();
    });
  await Promise.all(clients.flatMap((c) => Array.from({ length: job.inFlight }, () => loop(c))));
  const elapsedS = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  for (const c of clients) c.close();
  return { done, errors, firstError, elapsedS, cpuS: (cpu.user + cpu.system) / 1e6 };
}

if (parentPort) {
  const result = await run(workerData as UnaryLoadJob);
  parentPort.postMessage(result);
}

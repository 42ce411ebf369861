/**
 * A gRPC client built from the repo's .proto files (the same loader the server uses), against a
 * real `blobstore serve` with its gRPC listener on a free loopback port.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { loadProtos } from '../../src/proto/loader.js';
import { type NodeProcess, type StartOptions, startNode } from '../helpers/node-process.js';

export interface GrpcNode {
  readonly node: NodeProcess;
  readonly grpcPort: number;
  readonly target: string;
  readonly blobs: BlobClient;
  stop(): Promise<number | null>;
}

/** The generated client of a service: methods by name (grpc-js's dynamic clients are untyped). */
export type BlobClient = grpc.Client & Record<string, (...args: unknown[]) => any>;

const pkg = grpc.loadPackageDefinition(loadProtos()) as unknown as {
  blobstore: { v1: Record<string, grpc.ServiceClientConstructor> };
};

export function client(service: 'BlobService' | 'ClusterService' | 'InternalService', target: string, options: grpc.ChannelOptions = {}): BlobClient {
  const Ctor = pkg.blobstore.v1[service]!;
  return new Ctor(target, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': -1,
    'grpc.max_send_message_length': -1,
    ...options,
  }) as unknown as BlobClient;
}

const HEALTH_PROTOS = join(dirname(createRequire(import.meta.url).resolve('grpc-health-check/package.json')), 'proto');
const healthPkg = grpc.loadPackageDefinition(loadSync(join(HEALTH_PROTOS, 'health/v1/health.proto'), { keepCase: true, enums: String })) as unknown as {
  grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
};

/** A grpc.health.v1.Health client (what Kubernetes gRPC probes call). */
export type HealthClient = grpc.Client & {
  Check(req: { service: string }, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res?: { status: string }) => void): void;
  Watch(req: { service: string }): grpc.ClientReadableStream<{ status: string }>;
};

export const healthClient = (target: string): HealthClient =>
  new healthPkg.grpc.health.v1.Health(target, grpc.credentials.createInsecure()) as unknown as HealthClient;

/** What Health/Check answers for `service` ("" is the whole server). */
export function healthStatus(client: HealthClient, service: string): Promise<string | undefined> {
  return new Promise((resolve, reject) => client.Check({ service }, new grpc.Metadata(), (err, res) => (err ? reject(err) : resolve(res?.status))));
}

/** The port of the gRPC listener a node's output names. */
export function grpcPortOf(output: string): number | undefined {
  const m = /gRPC listening on [^\s]*:(\d+)/.exec(output);
  return m ? Number(m[1]) : undefined;
}

export async function startGrpcNode(options: StartOptions = {}): Promise<GrpcNode> {
  const node = await startNode({ ...options, args: ['--grpc-addr', '127.0.0.1:0', ...(options.args ?? [])] });
  const grpcPort = grpcPortOf(node.output());
  if (grpcPort === undefined) {
    await node.stop();
    throw new Error(`no gRPC listener in the output:\n${node.output()}`);
  }
  const target = `127.0.0.1:${grpcPort}`;
  const blobs = client('BlobService', target);
  return {
    node,
    grpcPort,
    target,
    blobs,
    stop: async () => {
      blobs.close();
      return node.stop();
    },
  };
}

export interface CallError {
  code: number;
  details: string;
}

export interface CallOptions {
  metadata?: grpc.Metadata;
  deadlineMs?: number;
}

function callArgs(options: CallOptions): [grpc.Metadata, grpc.CallOptions] {
  const deadline = options.deadlineMs === undefined ? undefined : Date.now() + options.deadlineMs;
  return [options.metadata ?? new grpc.Metadata(), deadline === undefined ? {} : { deadline }];
}

/** A unary call; resolves with the response, or rejects with {code, details}. */
export function unary<T = any>(c: BlobClient, method: string, request: unknown, options: CallOptions = {}): Promise<T> {
  return new Promise((resolve, reject) => {
    c[method]!(request, ...callArgs(options), (err: grpc.ServiceError | null, response: T) => {
      if (err) reject({ code: err.code, details: err.details } satisfies CallError);
      else resolve(response);
    });
  });
}

/** The status a call fails with (or throws when it succeeds). */
export async function failure(promise: Promise<unknown>): Promise<CallError> {
  try {
    await promise;
  } catch (err) {
    return err as CallError;
  }
  throw new Error('expected the call to fail');
}

/** PutStream with the given chunks (objects as the .proto shapes them); half-closes after the last. */
export function putStream<T = any>(c: BlobClient, chunks: Iterable<Record<string, unknown>>, options: CallOptions & { end?: boolean } = {}): Promise<T> {
  return new Promise((resolve, reject) => {
    const call = c.PutStream!(...callArgs(options), (err: grpc.ServiceError | null, response: T) => {
      if (err) reject({ code: err.code, details: err.details } satisfies CallError);
      else resolve(response);
    }) as grpc.ClientWritableStream<unknown>;
    void (async () => {
      for (const chunk of chunks) {
        if (!call.write(chunk)) await new Promise((r) => call.once('drain', r));
      }
      if (options.end !== false) call.end();
    })();
  });
}

/** Chunks of `data` for PutStream: `size` bytes each, final on the last, policy on the first. */
export function* chunksOf(data: Buffer, size: number, first: Record<string, unknown> = {}): Generator<Record<string, unknown>> {
  if (data.length === 0) {
    yield { ...first, data, final: true };
    return;
  }
  for (let at = 0; at < data.length; at += size) {
    const end = Math.min(at + size, data.length);
    yield { ...(at === 0 ? first : {}), data: data.subarray(at, end), final: end === data.length };
  }
}

/** GetStream to completion: the concatenated data and the chunk messages' sizes and final flags. */
export function getStream(c: BlobClient, id: Buffer, options: CallOptions = {}): Promise<{ data: Buffer; sizes: number[]; finals: boolean[] }> {
  return new Promise((resolve, reject) => {
    const call = c.GetStream!({ id: { id } }, ...callArgs(options)) as grpc.ClientReadableStream<{ data?: Buffer; final?: boolean }>;
    const parts: Buffer[] = [];
    const sizes: number[] = [];
    const finals: boolean[] = [];
    call.on('data', (chunk) => {
      parts.push(chunk.data ?? Buffer.alloc(0));
      sizes.push(chunk.data?.length ?? 0);
      finals.push(chunk.final === true);
    });
    call.on('error', (err: grpc.ServiceError) => reject({ code: err.code, details: err.details } satisfies CallError));
    call.on('end', () => resolve({ data: Buffer.concat(parts), sizes, finals }));
  });
}

/** Deterministic bytes (a seeded xorshift) so round trips compare against something non-trivial. */
export function patterned(length: number, seed = 1): Buffer {
  const out = Buffer.allocUnsafe(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

export const Status = grpc.status;

/**
 * Hostile gRPC messages: raw protobuf bytes through a generic client (identity serializers) to
 * every BlobService rpc, streams cut or cancelled midway, ClusterService/InternalService rpcs and
 * unknown methods. Every call ends in time with OK or a client-error status (INVALID_ARGUMENT,
 * NOT_FOUND, FAILED_PRECONDITION, RESOURCE_EXHAUSTED; UNIMPLEMENTED where no handler exists;
 * INTERNAL only for a put stream ended before its final chunk); a clean Put stores exactly its
 * bytes; the node stays healthy and keeps no temp file.
 */
import * as grpc from '@grpc/grpc-js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isUtf8 } from 'node:buffer';
import { expectedId } from '../helpers/blobs.js';
import { type GrpcNode, startGrpcNode } from '../grpc/helpers.js';
import { FUZZ_NODE_ARGS } from './exchange.js';
import { budgetMs, checkNode, count, fuzz, newStats, testTimeout, stopAndClean } from './harness.js';
import { damage, damageArb, decodeTop, encode, knownIdBytes, type PbField, requests } from './protobuf.js';

const SHARE = 0.15;
const DEADLINE_MS = 15_000;
const identity = (b: Buffer): Buffer => b;

type Shape = 'unary' | 'client-stream' | 'server-stream';
const RPCS: Record<string, Shape> = {
  'BlobService/Put': 'unary',
  'BlobService/Get': 'unary',
  'BlobService/Stat': 'unary',
  'BlobService/Delete': 'unary',
  'BlobService/List': 'unary',
  'BlobService/PutStream': 'client-stream',
  'BlobService/GetStream': 'server-stream',
  'BlobService/Nope': 'unary',
  'ClusterService/Join': 'unary',
  'ClusterService/Heartbeat': 'unary',
  'InternalService/Replicate': 'unary',
  'InternalService/ReplicateStream': 'client-stream',
  'InternalService/StoreShardBatch': 'unary',
  'Nothing/Here': 'unary',
};

type Call =
  | { kind: 'unary'; rpc: string; fields: PbField[]; bytes: Buffer; clean: boolean }
  | { kind: 'put-stream'; chunks: Buffer[]; end: 'end' | 'cancel'; clean: boolean; data: Buffer }
  | { kind: 'get-stream'; bytes: Buffer; cancelAfter: number | undefined }
  | { kind: 'other'; rpc: string; bytes: Buffer };

const LABEL_KEY = /^[A-Za-z0-9._/-]{1,128}$/;

/** A Put/PutChunk whose fields are all valid (the server must store it). */
function cleanFields(fields: PbField[], labelsField: number, policyField: number): boolean {
  for (const f of fields) {
    if (f.n === policyField && (typeof f.v !== 'bigint' || f.v < 0n || f.v > 3n)) return false;
    if (f.n === labelsField) {
      const [k, v] = f.v as PbField[];
      if (!LABEL_KEY.test((k!.v as Buffer).toString('latin1')) || !isUtf8(v!.v as Buffer) || (v!.v as Buffer).length > 1024) return false;
    }
  }
  return true;
}

const unaryArb = (method: 'Put' | 'Get' | 'Stat' | 'Delete' | 'List'): fc.Arbitrary<Call> =>
  fc.tuple(requests[method], damageArb).map(([fields, d]) => ({
    kind: 'unary' as const,
    rpc: `BlobService/${method}`,
    fields,
    bytes: damage(fields, d),
    clean: method === 'Put' && d.kind === 'none' && fields.some((f) => f.n === 1) && cleanFields(fields, 3, 2),
  }));

const putStreamArb: fc.Arbitrary<Call> = fc
  .record({
    chunks: fc.array(fc.tuple(requests.PutChunk, damageArb), { maxLength: 5 }),
    end: fc.constantFrom('end' as const, 'end' as const, 'cancel' as const),
    cleanMode: fc.boolean(),
  })
  .map(({ chunks, end, cleanMode }) => {
    // Clean mode: no damage, no id, final only on the last chunk, first-chunk fields only first.
    const list = cleanMode
      ? chunks.map(([fields], i) =>
          fields
            .filter((f) => f.n === 2 || (i === 0 && (f.n === 4 || f.n === 5)))
            .concat(i === chunks.length - 1 ? [{ n: 3, wire: 0, v: 1n }] : []),
        )
      : chunks.map(([fields]) => fields);
    const clean = cleanMode && end === 'end' && list.length > 0 && cleanFields(list[0]!, 5, 4);
    const data = Buffer.concat(list.flatMap((fields) => fields.filter((f) => f.n === 2).map((f) => f.v as Buffer)));
    const bytes = cleanMode ? list.map((fields) => encode(fields)) : chunks.map(([fields, d]) => damage(fields, d));
    return { kind: 'put-stream' as const, chunks: bytes, end, clean, data };
  });

const callArb: fc.Arbitrary<Call> = fc.oneof(
  { weight: 4, arbitrary: unaryArb('Put') },
  { weight: 2, arbitrary: unaryArb('Get') },
  { weight: 1, arbitrary: unaryArb('Stat') },
  { weight: 1, arbitrary: unaryArb('Delete') },
  { weight: 2, arbitrary: unaryArb('List') },
  { weight: 4, arbitrary: putStreamArb },
  {
    weight: 2,
    arbitrary: fc.record({ fields: requests.GetStream, d: damageArb, cancelAfter: fc.option(fc.nat(3), { nil: undefined, freq: 3 }) }).map(
      ({ fields, d, cancelAfter }): Call => ({ kind: 'get-stream', bytes: damage(fields, d), cancelAfter }),
    ),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom(...Object.keys(RPCS).filter((r) => !r.startsWith('BlobService/') || r === 'BlobService/Nope')), fc.uint8Array({ maxLength: 200 }))
      .map(([rpc, b]): Call => ({ kind: 'other', rpc, bytes: Buffer.from(b) })),
  },
);

interface Result {
  code: number;
  details: string;
  response?: Buffer;
  ms: number;
}

type Raw = grpc.Client & Record<string, (...args: unknown[]) => any>;

function rawClient(target: string): Raw {
  const definition: grpc.ServiceDefinition = {};
  for (const [rpc, shape] of Object.entries(RPCS)) {
    (definition as Record<string, grpc.MethodDefinition<Buffer, Buffer>>)[rpc] = {
      path: `/${rpc.startsWith('Nothing') ? '' : 'blobstore.v1.'}${rpc}`,
      requestStream: shape === 'client-stream',
      responseStream: shape === 'server-stream',
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    };
  }
  const Ctor = grpc.makeGenericClientConstructor(definition, 'RawFuzz');
  return new Ctor(target, grpc.credentials.createInsecure(), { 'grpc.max_send_message_length': -1, 'grpc.max_receive_message_length': -1 }) as Raw;
}

const deadline = (): grpc.CallOptions => ({ deadline: Date.now() + DEADLINE_MS });
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function run(client: Raw, call: Call): Promise<Result> {
  const started = Date.now();
  return new Promise((resolve) => {
    const done = (err: grpc.ServiceError | null, response?: Buffer): void =>
      resolve({ code: err?.code ?? 0, details: err?.details ?? '', response, ms: Date.now() - started });
    switch (call.kind) {
      case 'unary':
      case 'other':
        if (RPCS[call.rpc] === 'client-stream') {
          const stream = client[call.rpc]!(new grpc.Metadata(), deadline(), done) as grpc.ClientWritableStream<Buffer>;
          stream.write(call.bytes);
          stream.end();
        } else client[call.rpc]!(call.bytes, new grpc.Metadata(), deadline(), done);
        return;
      case 'put-stream': {
        const stream = client['BlobService/PutStream']!(new grpc.Metadata(), deadline(), done) as grpc.ClientWritableStream<Buffer>;
        void (async () => {
          for (const [i, chunk] of call.chunks.entries()) {
            stream.write(chunk);
            if (call.end === 'cancel' && i === Math.floor(call.chunks.length / 2)) {
              await sleep(5); // time is the subject: a client that cancels a moment after its writes went out
              return stream.cancel();
            }
          }
          if (call.end === 'cancel') stream.cancel();
          else stream.end();
        })();
        return;
      }
      case 'get-stream': {
        const stream = client['BlobService/GetStream']!(call.bytes, new grpc.Metadata(), deadline()) as grpc.ClientReadableStream<Buffer>;
        let messages = 0;
        stream.on('data', () => {
          if (++messages === call.cancelAfter) stream.cancel();
        });
        stream.on('error', (err: grpc.ServiceError) => done(err));
        stream.on('end', () => undefined);
        stream.on('status', (s: grpc.StatusObject) => {
          if (s.code === 0) done(null);
        });
      }
    }
  });
}

/** Why this status is wrong for the call, or undefined. */
function judge(call: Call, r: Result): string | undefined {
  const { code } = r;
  if (code === grpc.status.DEADLINE_EXCEEDED) return `no status within ${DEADLINE_MS} ms`;
  if (code === grpc.status.CANCELLED) return (call.kind === 'put-stream' && call.end === 'cancel') || (call.kind === 'get-stream' && call.cancelAfter !== undefined) ? undefined : 'CANCELLED by the server';
  const rpc = call.kind === 'unary' || call.kind === 'other' ? call.rpc : call.kind === 'put-stream' ? 'BlobService/PutStream' : 'BlobService/GetStream';
  if (code === grpc.status.UNIMPLEMENTED) return rpc.startsWith('BlobService/') && rpc !== 'BlobService/Nope' ? 'UNIMPLEMENTED on a BlobService rpc' : undefined;
  if (code === grpc.status.INTERNAL && rpc === 'BlobService/PutStream' && /ended before/.test(r.details)) return undefined;
  const fine: number[] = [grpc.status.OK, grpc.status.INVALID_ARGUMENT, grpc.status.NOT_FOUND, grpc.status.FAILED_PRECONDITION, grpc.status.RESOURCE_EXHAUSTED];
  if (!fine.includes(code)) return `status ${grpc.status[code] ?? code}: ${r.details}`;
  return undefined;
}

async function checkClean(call: Call, r: Result): Promise<string | undefined> {
  if (!('clean' in call) || !call.clean) return undefined;
  if (r.code !== 0) return `a clean ${call.kind} answered ${grpc.status[r.code]}: ${r.details}`;
  const data = call.kind === 'put-stream' ? call.data : ((call as { fields: PbField[] }).fields.find((f) => f.n === 1)?.v as Buffer);
  const id = decodeTop(decodeTop(r.response!).get(1) as Buffer).get(1) as Buffer;
  const want = await expectedId(data);
  return id.toString('hex') === want ? undefined : `id ${id.toString('hex')} is not BLAKE3 ${want}`;
}

describe('gRPC BlobService under hostile messages', () => {
  let n: GrpcNode;
  let client: Raw;

  beforeAll(async () => {
    n = await startGrpcNode({ args: FUZZ_NODE_ARGS });
    client = rawClient(n.target);
    for (const data of [Buffer.from('grpc fuzz: small'), Buffer.alloc(40 * 1024, 9)]) {
      const r = await run(client, { kind: 'unary', rpc: 'BlobService/Put', fields: [], bytes: encode([{ n: 1, wire: 2, v: data }, { n: 2, wire: 0, v: 1n }]), clean: false });
      expect(r.code).toBe(0);
      knownIdBytes.push(decodeTop(decodeTop(r.response!).get(1) as Buffer).get(1) as Buffer);
    }
  });

  afterAll(async () => {
    client?.close();
    expect(await stopAndClean(n)).toBe(0);
  });

  it(
    'every call ends in time with OK or a client-error status; clean puts store their bytes; the node stays healthy',
    async () => {
      const stats = newStats();
      await fuzz(
        'grpc',
        fc.array(callArb, { minLength: 1, maxLength: 4 }),
        async (calls) => {
          const results = await Promise.all(calls.map((c) => run(client, c)));
          for (const [i, r] of results.entries()) {
            const call = calls[i]!;
            count(stats, grpc.status[r.code] ?? r.code, call.kind, r.ms);
            const problem = judge(call, r) ?? (await checkClean(call, r));
            if (problem) {
              const what = call.kind === 'put-stream' ? `${call.chunks.length} chunks (${call.end}): ${call.chunks.map((c) => c.toString('hex', 0, 40)).join(' | ')}` : `${'rpc' in call ? call.rpc : call.kind} ${call.bytes.toString('hex', 0, 200)}`;
              throw new Error(`${problem}\ncall: ${call.kind} ${what}`);
            }
          }
          await checkNode(n.node);
        },
        budgetMs(SHARE),
        stats,
      );
      console.log(`grpc: ${stats.runs} batches, ${stats.requests} calls, statuses ${JSON.stringify(stats.statuses)}, ms ${JSON.stringify(stats.msByKind)}`);
    },
    testTimeout(budgetMs(SHARE)),
  );
});

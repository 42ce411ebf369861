/**
 * Hostile input over gRPC: raw protobuf bytes sent through a generic client (identity
 * serializers), with wrong wire types, truncation, invalid UTF-8, unknown fields and random
 * garbage. Every call ends with a status (INVALID_ARGUMENT for malformed messages; unknown fields
 * are ignored as proto3 says), never a crash or a hang, and the node serves on.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GrpcNode, patterned, startGrpcNode, Status, unary } from './helpers.js';

let n: GrpcNode;
let raw: grpc.Client & Record<string, (...args: unknown[]) => any>;

const identity = (b: Buffer): Buffer => b;
const METHODS = {
  Put: [false, false],
  Get: [false, false],
  Stat: [false, false],
  Delete: [false, false],
  List: [false, false],
  PutStream: [true, false],
  GetStream: [false, true],
} as const;

beforeAll(async () => {
  n = await startGrpcNode();
  const definition: grpc.ServiceDefinition = {};
  for (const [name, [requestStream, responseStream]] of Object.entries(METHODS)) {
    (definition as Record<string, grpc.MethodDefinition<Buffer, Buffer>>)[name] = {
      path: `/blobstore.v1.BlobService/${name}`,
      requestStream,
      responseStream,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    };
  }
  const Raw = grpc.makeGenericClientConstructor(definition, 'RawBlobService');
  raw = new Raw(n.target, grpc.credentials.createInsecure()) as typeof raw;
});

afterAll(async () => {
  raw?.close();
  await n?.stop();
});

interface Outcome {
  code: number;
  details: string;
  response?: Buffer;
}

const DEADLINE_MS = 10_000;

function rawUnary(method: string, bytes: Buffer): Promise<Outcome> {
  return new Promise((resolve) => {
    raw[method]!(bytes, { deadline: Date.now() + DEADLINE_MS }, (err: grpc.ServiceError | null, response: Buffer) =>
      resolve(err ? { code: err.code, details: err.details } : { code: Status.OK, details: '', response }),
    );
  });
}

function rawPutStream(messages: Buffer[]): Promise<Outcome> {
  return new Promise((resolve) => {
    const call = raw.PutStream!({ deadline: Date.now() + DEADLINE_MS }, (err: grpc.ServiceError | null, response: Buffer) =>
      resolve(err ? { code: err.code, details: err.details } : { code: Status.OK, details: '', response }),
    );
    for (const m of messages) call.write(m);
    call.end();
  });
}

function rawGetStream(bytes: Buffer): Promise<Outcome> {
  return new Promise((resolve) => {
    const call = raw.GetStream!(bytes, { deadline: Date.now() + DEADLINE_MS }) as grpc.ClientReadableStream<Buffer>;
    call.on('data', () => undefined);
    call.on('error', (err: grpc.ServiceError) => resolve({ code: err.code, details: err.details }));
    call.on('end', () => resolve({ code: Status.OK, details: '' }));
  });
}

const hex = (text: string): Buffer => Buffer.from(text.replace(/\s+/g, ''), 'hex');
const ID16 = '0a 10' + ' 00'.repeat(16); // BlobID { id: 16 zero bytes }

describe('malformed messages answer INVALID_ARGUMENT', () => {
  const cases: [string, string, Buffer][] = [
    ['Put: data (bytes) sent as a varint', 'Put', hex('08 05')],
    ['Put: policy (enum) sent as length-delimited', 'Put', hex('0a 01 78 12 03 61 62 63')],
    ['Put: data length runs past the end', 'Put', hex('0a 10 61')],
    ['Put: wire type 7', 'Put', hex('0f')],
    ['Put: field number 0', 'Put', hex('00 01')],
    ['Put: varint longer than 10 bytes', 'Put', hex('10 ff ff ff ff ff ff ff ff ff ff 01')],
    ['Put: label key that is not UTF-8', 'Put', hex('0a 01 78 1a 06 0a 02 ff fe 12 00')],
    ['Put: label map entry with a key sent as a varint', 'Put', hex('0a 01 78 1a 04 08 01 12 00')],
    ['Put: unknown group never closed', 'Put', hex('0a 01 78 a3 01 08 01')],
    ['Put: end-group tag without a start', 'Put', hex('a4 01')],
    ['Get: BlobID sent as fixed32', 'Get', hex('0d 00 00 00 00')],
    ['Get: BlobID.id sent as a varint', 'Get', hex('0a 02 08 01')],
    ['Get: BlobID length past the end', 'Get', hex('0a 20 0a 10')],
    ['Stat: truncated varint tag', 'Stat', hex('8a')],
    ['Delete: BlobID with 16 bytes as fixed64', 'Delete', hex('0a 09 09 00 00 00 00 00 00 00 00')],
    ['List: limit sent as length-delimited', 'List', hex('12 01 05')],
    ['List: prefix that is not UTF-8', 'List', hex('1a 02 c3 28')],
    ['List: cursor sent as fixed64', 'List', hex('09 01 02 03 04 05 06 07 08')],
  ];
  for (const [name, method, bytes] of cases) {
    it(name, async () => {
      const outcome = await rawUnary(method, bytes);
      expect(outcome.code, outcome.details).toBe(Status.INVALID_ARGUMENT);
      expect(outcome.details).toMatch(/malformed blobstore\.v1\.\w+/);
    });
  }

  it('GetStream: a malformed request', async () => {
    const outcome = await rawGetStream(hex('0a 02 08 01'));
    expect(outcome.code).toBe(Status.INVALID_ARGUMENT);
  });

  it('PutStream: a malformed chunk among good ones stores nothing', async () => {
    const before = await unary(n.blobs, 'List', { limit: 10000 });
    const good = Buffer.concat([hex('12 80 08'), patterned(1024, 3)]); // data: 1 KiB
    const finalAsBytes = hex('1a 01 01'); // final (bool) sent length-delimited
    const outcome = await rawPutStream([good, finalAsBytes, Buffer.concat([good, hex('18 01')])]);
    expect(outcome.code).toBe(Status.INVALID_ARGUMENT);
    expect(outcome.details).toMatch(/final/);
    const after = await unary(n.blobs, 'List', { limit: 10000 });
    expect(after.ids ?? []).toEqual(before.ids ?? []);
  });

  it('Put: a negative policy number', async () => {
    const outcome = await rawUnary('Put', hex('0a 01 78 10 ff ff ff ff ff ff ff ff ff 01'));
    expect(outcome.code).toBe(Status.INVALID_ARGUMENT);
    expect(outcome.details).toMatch(/policy/);
  });
});

describe('unknown fields are ignored', () => {
  it('Put with unknown varint, bytes, fixed and group fields stores the data', async () => {
    const data = patterned(100, 5);
    const message = Buffer.concat([
      hex('f8 06 2a'), // field 111 varint
      hex('0a 64'), data, // data: 100 bytes
      hex('ba 06 03 61 62 63'), // field 103 bytes
      hex('f9 06 01 02 03 04 05 06 07 08'), // field 111 fixed64
      hex('a3 01 08 01 a4 01'), // field 20 group { field 1 varint }
    ]);
    const outcome = await rawUnary('Put', message);
    expect(outcome.code, outcome.details).toBe(Status.OK);
    const got = await unary(n.blobs, 'Get', { id: { id: outcome.response!.subarray(4, 20) } });
    expect(got.data.equals(data)).toBe(true);
  });

  it('Stat with an unknown field inside BlobID answers as usual', async () => {
    const outcome = await rawUnary('Stat', Buffer.concat([hex('0a 14'), hex(ID16), hex('18 07')]));
    expect(outcome.code, outcome.details).toBe(Status.OK);
  });
});

describe('random garbage', () => {
  it('600 random messages to every method: each ends with a status, no INTERNAL/UNKNOWN; the node serves on', async () => {
    let seed = 12345;
    const next = (): number => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return seed >>> 0;
    };
    const unaries = ['Put', 'Get', 'Stat', 'Delete', 'List'];
    const codes = new Map<number, number>();
    for (let round = 0; round < 100; round++) {
      const batch: Promise<Outcome>[] = [];
      for (const method of [...unaries, 'GetStream']) {
        const length = next() % 64;
        const bytes = Buffer.alloc(length);
        for (let i = 0; i < length; i++) bytes[i] = next() & 0xff;
        // Half the cases start with a plausible tag so they get past the first byte.
        if (length > 0 && round % 2 === 0) bytes[0] = [0x0a, 0x12, 0x10, 0x1a][next() % 4]!;
        batch.push(method === 'GetStream' ? rawGetStream(bytes) : rawUnary(method, bytes));
      }
      for (const outcome of await Promise.all(batch)) {
        codes.set(outcome.code, (codes.get(outcome.code) ?? 0) + 1);
        expect([Status.INTERNAL, Status.UNKNOWN, Status.DEADLINE_EXCEEDED, Status.UNAVAILABLE], outcome.details).not.toContain(outcome.code);
      }
    }
    expect(codes.get(Status.INVALID_ARGUMENT) ?? 0).toBeGreaterThan(100);
    expect(n.node.child.exitCode).toBeNull();
    const put = await unary(n.blobs, 'Put', { data: Buffer.from('still here') });
    expect((await unary(n.blobs, 'Get', { id: put.id })).data.toString()).toBe('still here');
  });
});

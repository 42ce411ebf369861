/**
 * A blob's metadata between nodes (src/cluster/wire-meta.ts): what one node writes, as a gRPC
 * message or as /internal/v1 headers, another reads back the same; a replica's receiver refuses
 * metadata that does not name its bytes.
 */
import { describe, expect, it } from 'vitest';
import { idOfDigest } from '../src/blob/id.js';
import { encodeLabels, type LabelLimits } from '../src/blob/labels.js';
import type { NodeConfig } from '../src/config/settings.js';
import { blake3 } from '../src/hash/blake3.js';
import { incomingMeta } from '../src/cluster/transfer.js';
import { columnBlobMeta, messageOfHeaderLines, messageOfHeaders, messageOfMeta, metaHeaderLines, metaOfMessage, peerBlobMeta, statAnswerOfJson, statJson, statOfAnswer, type WireMeta } from '../src/cluster/wire-meta.js';

const LIMITS: LabelLimits = { maxLabels: 2, labelKeyMaxBytes: 128, labelValueMaxBytes: 1024 };
const checksum = blake3(Buffer.from('the bytes'));
const id = idOfDigest(checksum);
const meta: WireMeta = {
  size: 9, checksum, createdAtNs: 1_712_345_678_901_234_567n, policy: 2,
  labels: encodeLabels({ team: 'storage', note: 'grüße: a: b' }, LIMITS),
};

/** Header lines as a receiver's request answers them: by lower-case name, '' when absent. */
function headersOf(lines: string): (name: string) => string {
  const map = new Map(lines.split('\r\n').filter((l) => l !== '').map((l) => {
    const at = l.indexOf(': ');
    return [l.slice(0, at).toLowerCase(), l.slice(at + 2)] as const;
  }));
  return (name) => map.get(name) ?? '';
}

describe('the gRPC message', () => {
  it('reads back what was written: size, creation time beyond 2^53 ns, checksum, policy, labels', () => {
    expect(metaOfMessage(messageOfMeta(meta), LIMITS)).toStrictEqual(meta);
  });

  it('an absent or malformed creation time reads as 0; an absent policy as 0 (unspecified); no labels as none', () => {
    const read = metaOfMessage({ size: 1, checksum, created_at: '12abc' }, LIMITS);
    expect([read.createdAtNs, read.policy, read.labels.length]).toStrictEqual([0n, 0, 0]);
    expect(metaOfMessage({ checksum }, LIMITS).createdAtNs).toBe(0n);
  });

  it('the checksum read is a copy, not a view of the message', () => {
    const message = { ...messageOfMeta(meta), checksum: Buffer.from(checksum) };
    const read = metaOfMessage(message, LIMITS);
    message.checksum.fill(0);
    expect(read.checksum).toStrictEqual(checksum);
  });

  it("labels beyond this node's count limit: refused in a replica, read in a peer's answer", () => {
    const message = { ...messageOfMeta(meta), labels: { a: '1', b: '2', c: '3' } };
    expect(() => metaOfMessage(message, LIMITS)).toThrow(/too many labels/);
    const found = peerBlobMeta(id, message, LIMITS);
    expect([found.id, JSON.parse(found.labels.toString())]).toStrictEqual([id, { a: '1', b: '2', c: '3' }]);
  });
});

describe('the /internal/v1 headers', () => {
  it('read back what was written, labels included (base64 of their encoding)', () => {
    const lines = metaHeaderLines(meta);
    expect(lines.endsWith('\r\n')).toBe(true);
    expect(metaOfMessage(messageOfHeaders(headersOf(lines)), LIMITS)).toStrictEqual(meta);
  });

  it("a column's header names its blob's metadata", () => {
    const column = { id, index: 4, policy: 4, shardBytes: 65_536, blobBytes: meta.size, blobChecksum: checksum, blobLabels: meta.labels, createdAtNs: meta.createdAtNs };
    expect(metaOfMessage(messageOfHeaders(headersOf(metaHeaderLines(columnBlobMeta(column)))), LIMITS)).toStrictEqual({ ...meta, policy: 4 });
  });

  it('as a streamed column\'s seal (the lines in its body): read back the same; lines unended, without a name, or naming a field twice are refused', () => {
    expect(metaOfMessage(messageOfHeaderLines(metaHeaderLines(meta)), LIMITS)).toStrictEqual(meta);
    const lines = metaHeaderLines(meta);
    expect(() => messageOfHeaderLines(lines.slice(0, -2))).toThrow(/not ended/);
    expect(() => messageOfHeaderLines(`${lines}X-Blobstore-Size: 10\r\n`)).toThrow(/twice/);
    expect(() => messageOfHeaderLines(`${lines}no colon here\r\n`)).toThrow(/Name: value/);
    expect(() => messageOfHeaderLines(`${lines}\r\n`)).toThrow(/Name: value/);
  });
});

describe('a stat answer on the data plane (GET /internal/v1/stat/{id})', () => {
  const read = (held: Parameters<typeof statJson>[0]) => statOfAnswer(id, statAnswerOfJson(statJson(held)), LIMITS);

  it('reads back a whole copy as the blob, with no columns', () => {
    const got = read({ kind: 'blob', meta });
    expect(got.ec).toBeUndefined();
    expect(got.indices).toEqual([]);
    expect(metaOfMessage(messageOfMeta(got.meta!), LIMITS)).toEqual(meta);
  });

  it('reads back columns with their indices, shard size and placement key, and a manifest with no columns', () => {
    const placement = Buffer.alloc(16, 0xab);
    const columns = read({ kind: 'columns', meta, indices: [0, 4], shardBytes: 3 << 20, placement });
    expect(columns.indices).toEqual([0, 4]);
    expect(columns.ec).toEqual({ shardBytes: 3 << 20, placement });
    expect(columns.meta!.checksum.equals(checksum)).toBe(true);
    const manifest = read({ kind: 'manifest', meta, shardBytes: 1 << 20, placement });
    expect(manifest.indices).toEqual([]);
    expect(manifest.ec).toEqual({ shardBytes: 1 << 20, placement });
    // Columns placed by the id name no placement key.
    expect(read({ kind: 'columns', meta, indices: [2], shardBytes: 5 }).ec).toEqual({ shardBytes: 5 });
  });

  it('reads back nothing held as no blob', () => {
    expect(read(undefined)).toEqual({ indices: [] });
  });
});

describe("a replica's metadata as it arrives", () => {
  const config = LIMITS as NodeConfig;

  it('is the id and the metadata when the checksum names the id', () => {
    expect(incomingMeta({ id }, messageOfMeta(meta), config)).toStrictEqual({ id, ...meta });
  });

  it('is refused when the checksum names another id, or is missing', () => {
    const other = blake3(Buffer.from('other bytes'));
    expect(() => incomingMeta({ id }, { ...messageOfMeta(meta), checksum: other }, config)).toThrow(/checksum does not match the id/);
    expect(() => incomingMeta({ id }, { size: 9 }, config)).toThrow(/checksum does not match the id/);
    expect(() => incomingMeta({ id }, undefined, config)).toThrow(/without metadata/);
  });

  it('is refused with a size that is no byte count', () => {
    expect(() => incomingMeta({ id }, { ...messageOfMeta(meta), size: -1 }, config)).toThrow(/invalid size/);
    expect(() => incomingMeta({ id }, { ...messageOfMeta(meta), size: 2 ** 60 }, config)).toThrow(/invalid size/);
  });
});

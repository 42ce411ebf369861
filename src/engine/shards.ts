/**
 * Shard columns of erasure-coded blobs in the local engine (docs/erasure-coding.md): a column is
 * stored like a blob (inline in a segment when small, else in a file of its own with 1 MiB chunk
 * digests) under the key (blob id, column index), with the shard info in its record. The same log,
 * group commit, recovery, compaction and full-disk rules apply as to whole blobs.
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { BlobstoreError, invalidArgument } from '../errors/errors.js';
import { blake3 } from '../hash/blake3.js';
import type { IndexEntry } from '../index/entry.js';
import type { BlobIndex } from '../index/blob-index.js';
import type { BlobFileWriter } from './blob-file.js';
import type { AppendRecord, RecordInput } from './log-record.js';
import type { ShardMeta, ShardWrite } from '../blob/shard.js';
import { fsyncDir, mkdirDurable } from './fs-util.js';
import { RecordFlag, RecordType } from './record.js';
import { blobLabelsOf, decodeShardInfo, encodeShardLabels, shardFilePath, shardKey } from './shard-info.js';

/** What the shard columns need of the engine. */
export interface ShardHost {
  readonly index: Pick<BlobIndex, 'hasShard' | 'shardsOf'>;
  readonly dataDir: { readonly path: string };
  /** Runs `fn` after every earlier operation on the same id has finished (id-locks.ts). */
  exclusive<T>(id: Buffer, fn: () => Promise<T>): Promise<T>;
  appendRecord: AppendRecord;
}

export function shardMetaOf(id: Buffer, entry: IndexEntry): ShardMeta {
  return { ...entry, id, shard: decodeShardInfo(entry.labels), blobLabels: blobLabelsOf(entry.labels) };
}

const NO_DATA = { relocatedFromSegment: 0, relocatedFromOffset: 0 } as const;

/** Stores a column held in memory as a segment record; created false when it was here already. */
export async function putShardInline(engine: ShardHost, w: ShardWrite, data: Buffer): Promise<{ created: boolean }> {
  if (!blake3(data).equals(w.columnChecksum)) throw invalidArgument(`shard ${w.index} of ${w.id.toString('hex')}: bytes do not match its checksum`);
  const labels = encodeShardLabels(w, w.blobLabels);
  return engine.exclusive(w.id, async () => {
    if (engine.index.hasShard(shardKey(w.id, w.index))) return { created: false };
    const done = await engine.appendRecord({
      type: RecordType.SHARD_INLINE, policy: w.policy, labelsLength: labels.length, dataLength: data.length, ...NO_DATA,
      size: data.length, createdAtNs: w.createdAtNs, id: w.id, checksum: w.columnChecksum, labels, data, flags: 0,
    });
    return { created: !done.existed };
  });
}

/** Moves a finished column file (written with engine.beginFile) into place and records it. */
export function commitShardFile(engine: ShardHost, writer: BlobFileWriter, w: ShardWrite): Promise<{ created: boolean }> {
  const labels = encodeShardLabels(w, w.blobLabels);
  return engine.exclusive(w.id, async () => {
    if (engine.index.hasShard(shardKey(w.id, w.index))) {
      await writer.abort();
      return { created: false };
    }
    const target = shardFilePath(engine.dataDir.path, w.id.toString('hex'), w.index);
    await mkdirDurable(join(target, '..'));
    await fsp.rename(writer.tmpPath, target);
    writer.committed();
    await fsyncDir(join(target, '..'));
    const done = await engine.appendRecord({
      type: RecordType.SHARD_FILE, policy: w.policy, labelsLength: labels.length, dataLength: 0, ...NO_DATA,
      size: writer.size, createdAtNs: w.createdAtNs, id: w.id, checksum: w.columnChecksum, labels, data: undefined, flags: 0,
    });
    return { created: !done.existed };
  });
}

/** A column's tombstone: the labels area names the column. */
function shardDelete(id: Buffer, index: number, handoff: boolean): RecordInput {
  const labels = encodeShardLabels({ index, shardBytes: 0, blobBytes: 0, blobChecksum: ZERO_CHECKSUM }, EMPTY);
  return {
    type: RecordType.SHARD_DELETE, policy: 0, labelsLength: labels.length, dataLength: 0, ...NO_DATA,
    size: 0, createdAtNs: BigInt(Date.now()) * 1_000_000n, id, checksum: ZERO_CHECKSUM, labels, data: undefined, flags: handoff ? RecordFlag.HANDOFF : 0,
  };
}

/**
 * Drops columns of a blob held here (all of them, or the one `index` names). `handoff`: the
 * column moved to another node, or is being replaced (a corrupt one): not a user's delete, so
 * repair may put one here again.
 */
export function deleteShards(engine: ShardHost, id: Buffer, index: number | undefined, handoff: boolean): Promise<void> {
  return engine.exclusive(id, () => appendShardDeletes(engine, id, index, handoff));
}

/** deleteShards inside an exclusive section the caller holds. */
export async function appendShardDeletes(engine: ShardHost, id: Buffer, index: number | undefined, handoff: boolean): Promise<void> {
  const held = engine.index.shardsOf(id).filter((c) => index === undefined || c.index === index);
  await Promise.all(held.map((c) => engine.appendRecord(shardDelete(id, c.index, handoff))));
}

/** Throws when a column record does not describe the blob it names (a bug or a foreign record). */
export function assertShardOf(meta: ShardMeta, id: Buffer): void {
  if (!meta.id.equals(id) || !meta.shard.blobChecksum.subarray(0, 16).equals(id)) {
    throw new BlobstoreError('internal', `shard record of ${meta.id.toString('hex')} names another blob`);
  }
}

const EMPTY = Buffer.alloc(0);
const ZERO_CHECKSUM = Buffer.alloc(32);

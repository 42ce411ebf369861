/**
 * A test's look at the columns of an EC blob on a cluster's nodes, through their internal routes
 * (loopback nodes without a cluster secret): what each holds, a column's bytes, and the column
 * checksums each column keeps.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { blake3 } from '../../src/hash/blake3.js';
import { client, unary } from '../grpc/helpers.js';
import type { TestCluster } from './cluster.js';

/** The ids whose columns node i holds (its list). */
export async function listed(c: TestCluster, i: number): Promise<Set<string>> {
  const page = (await (await fetch(`${c.url(i)}/v1/blobs?limit=10000`)).json()) as { ids: string[] };
  return new Set(page.ids);
}

/** Column files on node i's disk (columns too large for a segment record). */
export function columnFiles(c: TestCluster, i: number): string[] {
  const root = join(c.dataDirs[i]!, 'shards');
  const out: string[] = [];
  if (!existsSync(root)) return out; // made with the node's first column file
  for (const dir of readdirSync(root, { withFileTypes: true })) if (dir.isDirectory()) for (const f of readdirSync(join(root, dir.name))) out.push(join(root, dir.name, f));
  return out;
}

/** What GET /internal/v1/stat/{id} says of node i's holdings (no cluster secret: loopback). */
export interface InternalStat { kind: string; indices?: number[]; size: number; checksum: string; created_at: string; policy: number; labels: string; column_checksums: string }

export async function internalStat(c: TestCluster, i: number, id: string): Promise<InternalStat> {
  return (await fetch(`${c.url(i)}/internal/v1/stat/${id}`)).json() as Promise<InternalStat>;
}

/** Column index -> the live node that holds it. */
export async function columnHolders(c: TestCluster, id: string): Promise<Map<number, number>> {
  const held = new Map<number, number>();
  for (const i of c.live()) for (const index of (await internalStat(c, i, id)).indices ?? []) held.set(index, i);
  return held;
}

/** Column `index`'s bytes as node i holds them. */
export async function columnBytes(c: TestCluster, i: number, id: string, index: number): Promise<Buffer> {
  const res = await fetch(`${c.url(i)}/internal/v1/shards/${id}/${index}`);
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

/** Drops node i's column (DeleteShard: not a user's delete, so repair may bring it back). */
export async function dropColumn(c: TestCluster, i: number, id: string, index: number): Promise<void> {
  const address = (await c.state(i)).nodes.find((n) => n.node_id === c.ids[i])!.grpc_address;
  const internal = client('InternalService', address);
  try {
    expect(await unary<{ deleted: number }>(internal, 'DeleteShard', { id: { id: Buffer.from(id, 'hex') }, index })).toEqual({ deleted: 1 });
  } finally {
    internal.close();
  }
}

/** The head of a column PUT of the blob `stat` describes. */
export function columnHeaders(stat: InternalStat, shardBytes: number, columnBytes: number): Record<string, string> {
  return {
    'x-blobstore-size': String(stat.size), 'x-blobstore-checksum': stat.checksum, 'x-blobstore-created-at': stat.created_at, 'x-blobstore-policy': String(stat.policy),
    'x-blobstore-labels-encoded': stat.labels, 'x-blobstore-shard-size': String(shardBytes), 'x-blobstore-column-size': String(columnBytes),
  };
}

/**
 * Every column of the blob on the live nodes keeps the same column checksums, one per column of
 * the blob, each that of the column's bytes as its holder has them; returns them (hex).
 */
export async function expectColumnChecksums(c: TestCluster, id: string, shards: number): Promise<string> {
  const held = await columnHolders(c, id);
  expect(held.size, `columns of ${id} held`).toBe(shards);
  let first = '';
  for (const [index, at] of held) {
    const kept = (await internalStat(c, at, id)).column_checksums;
    first ||= kept;
    expect(kept, `column ${index} of ${id} on node ${at}`).toBe(first);
    expect(kept.slice(index * 64, index * 64 + 64), `column ${index} of ${id}: its entry`).toBe(blake3(await columnBytes(c, at, id, index)).toString('hex'));
  }
  expect(first.length).toBe(shards * 64);
  return first;
}

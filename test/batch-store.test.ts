/**
 * POST /v1/blobs/batch against a real node: many blobs in one request, each stored as a single
 * store of it would be, answered once every one is durable; a body that is not a batch stores
 * nothing; limits are settings; the ids survive a SIGKILL right after the answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BATCH_CONTENT_TYPE } from '../src/blob/batch.js';
import { expectedId, patternBytes } from './helpers/blobs.js';
import { type NodeProcess, startNode, tempDir } from './helpers/node-process.js';

/** A batch body: each blob behind its 4-byte big-endian length. */
function batchOf(blobs: Uint8Array[]): Buffer {
  return Buffer.concat(blobs.flatMap((b) => {
    const head = Buffer.alloc(4);
    head.writeUInt32BE(b.length);
    return [head, Buffer.from(b)];
  }));
}

function postBatch(url: string, body: Uint8Array, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/v1/blobs/batch`, { method: 'POST', body, headers: { 'content-type': BATCH_CONTENT_TYPE, ...headers } });
}

interface Answer {
  blobs: { id: string; size: number; created: boolean }[];
}

describe('a batch store', () => {
  let node: NodeProcess;
  beforeAll(async () => {
    node = await startNode({ args: ['--max-batch-bytes', '65536', '--max-batch-blobs', '8'] });
  });
  afterAll(async () => {
    expect(await node.stop()).toBe(0);
  });

  it('stores every blob and answers 200 with their ids in body order; a repeat says created false', async () => {
    const blobs = [patternBytes(4096, 1), patternBytes(0, 2), patternBytes(10_000, 3), patternBytes(4096, 1)];
    const res = await postBatch(node.url, batchOf(blobs), { 'x-blobstore-policy': '1', 'x-blobstore-labels': '{"team":"ingest"}' });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as Answer;
    const ids = await Promise.all(blobs.map((b) => expectedId(b)));
    expect(answer.blobs).toStrictEqual([
      { id: ids[0], size: 4096, created: true },
      { id: ids[1], size: 0, created: true },
      { id: ids[2], size: 10_000, created: true },
      { id: ids[0], size: 4096, created: false },
    ]);
    for (let i = 0; i < 3; i++) {
      const get = await fetch(`${node.url}/v1/blobs/${ids[i]}`);
      expect(get.status).toBe(200);
      expect(Buffer.from(await get.arrayBuffer()).equals(Buffer.from(blobs[i]!))).toBe(true);
    }
    const head = await fetch(`${node.url}/v1/blobs/${ids[2]}`, { method: 'HEAD' });
    expect(head.headers.get('x-blobstore-policy')).toBe('1');
    const stat = (await (await fetch(`${node.url}/v1/blobs/${ids[2]}/stat`)).json()) as { meta: { labels: Record<string, string> } };
    expect(stat.meta.labels).toStrictEqual({ team: 'ingest' });
  });

  it('a body that is not a batch answers 400 and stores nothing of it', async () => {
    const first = patternBytes(100, 11);
    const body = Buffer.concat([batchOf([first]), Buffer.from([0, 0, 1, 0]), Buffer.from('short')]);
    const res = await postBatch(node.url, body);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toBe('not a batch: frame 1: 256 bytes announced, 5 left in the body');
    expect((await fetch(`${node.url}/v1/blobs/${await expectedId(first)}`, { method: 'HEAD' })).status).toBe(404);
    const empty = await postBatch(node.url, Buffer.alloc(0));
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as { message: string }).message).toBe('not a batch: an empty batch (no frames)');
  });

  it('refuses another content type (415), a body over maxBatchBytes (413) and more blobs than maxBatchBlobs (400)', async () => {
    const one = batchOf([patternBytes(10, 21)]);
    const typed = await postBatch(node.url, one, { 'content-type': 'application/octet-stream' });
    expect(typed.status).toBe(415);
    const big = await postBatch(node.url, batchOf([patternBytes(70_000, 22)]));
    expect(big.status).toBe(413);
    expect(((await big.json()) as { message: string }).message).toBe('batch of 70004 bytes exceeds the limit of 65536 bytes');
    const many = await postBatch(node.url, batchOf(Array.from({ length: 9 }, (_, i) => patternBytes(8, 100 + i))));
    expect(many.status).toBe(400);
    expect(((await many.json()) as { message: string }).message).toBe('not a batch: more than 8 blobs in one batch');
  });

  it('a policy the node cannot place (EC42 on one node) answers 412 before the body is read', async () => {
    const res = await postBatch(node.url, batchOf([patternBytes(10, 31)]), { 'x-blobstore-policy': 'EC42' });
    expect(res.status).toBe(412);
  });

  it('GET /v1/blobs/batch is no blob: 400 invalid blob ID', async () => {
    const res = await fetch(`${node.url}/v1/blobs/batch`);
    expect(res.status).toBe(400);
  });
});

describe('a batch answered 200', () => {
  it('is on disk: every blob reads back after a SIGKILL right after the answer', async () => {
    const dataDir = tempDir('blobstore-batch-');
    const node = await startNode({ dataDir });
    const blobs = Array.from({ length: 64 }, (_, i) => patternBytes(4096 + i, 500 + i));
    const res = await postBatch(node.url, batchOf(blobs), { 'x-blobstore-policy': '1' });
    expect(res.status).toBe(200);
    await node.kill();
    const again = await startNode({ dataDir });
    try {
      for (const b of blobs) {
        const get = await fetch(`${again.url}/v1/blobs/${await expectedId(b)}`);
        expect(get.status).toBe(200);
        expect(Buffer.from(await get.arrayBuffer()).equals(Buffer.from(b))).toBe(true);
      }
    } finally {
      expect(await again.stop()).toBe(0);
    }
  });
});

describe('variant A', () => {
  it('answers ids as BlobID objects and sizes as int64 strings', async () => {
    const node = await startNode({ args: ['--api-variant', 'a'] });
    try {
      const blob = patternBytes(33, 41);
      const res = await postBatch(node.url, batchOf([blob]));
      expect(res.status).toBe(200);
      const id = Buffer.from(await expectedId(blob), 'hex').toString('base64');
      expect(await res.json()).toStrictEqual({ blobs: [{ id: { id }, size: '33', created: true }] });
    } finally {
      expect(await node.stop()).toBe(0);
    }
  });
});

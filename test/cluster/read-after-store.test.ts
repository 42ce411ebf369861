/**
 * Any node serves a blob as soon as its store is acknowledged (README: any node serves any blob):
 * a node that took a store but owns none of it holds the only copy until its copies are out
 * (they gather for replicationBatchDelayMs, here 10 s). A reader whose owners all lack the blob
 * asks the other members before answering 404. Five nodes started as users start them; blobs
 * stored on one, each read at once from every other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { oneBigClusterAtATime, TestCluster } from '../helpers/cluster.js';

oneBigClusterAtATime();

describe('a blob just stored reads back from every node', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ size: 5, together: true, args: ['--replication-batch-delay-ms', '10000'] });
    await c.converged({ members: c.ids });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('ten REPLICA2 blobs stored on node 1 (most owned by others, whose copies have not left yet) read back byte-exact from the four others at once', async () => {
    for (let i = 0; i < 10; i++) {
      const bytes = patternBytes(3000 + i, 5100 + i);
      const res = await putRaw(c.url(0), bytes, { 'X-Blobstore-Policy': '2' });
      expect(res.status, await res.clone().text()).toBe(201);
      const { id } = (await res.json()) as { id: string };
      for (const i of [1, 2, 3, 4]) {
        const got = await fetch(`${c.url(i)}/v1/blobs/${id}`);
        expect(got.status, `blob ${id} on node ${i + 1}: ${got.status === 200 ? '' : await got.text()}`).toBe(200);
        expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);
      }
    }
  });
});

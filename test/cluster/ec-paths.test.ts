/**
 * EC columns between nodes go over the peers' API listeners (the bulk path: a large blob's
 * column by column, a small one's in a batch per peer), which demand the cluster secret when one is set; with a token file too (the secure set-up: users present tokens,
 * nodes the secret), clients need a token and nodes none. Both store and read every blob
 * byte-exact from every node.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedId, patternBytes, putRaw } from '../helpers/blobs.js';
import { expectReadableEverywhere, freePort, oneBigClusterAtATime, putWithNodesUp, TestCluster } from '../helpers/cluster.js';
import { columnHolders } from '../helpers/columns.js';
import { logLines } from '../helpers/log.js';
import { tempDir } from '../helpers/node-process.js';
import { waitFor } from '../helpers/wait.js';

oneBigClusterAtATime();

const KiB = 1024;
const SECRET = 'correct horse battery staple';
const TOKEN = 'ec-paths-token-0123456789';
const SIZES = [3000, 300 * KiB + 1, 700 * KiB + 3];
const EC_ARGS = ['--ec-shard-bytes', String(64 * KiB), '--small-blob-max-bytes', String(128 * KiB), '--metrics-addr', ''];

async function storeAll(c: TestCluster, headers: Record<string, string>): Promise<Map<string, Buffer>> {
  const acked = new Map<string, Buffer>();
  for (const [i, size] of SIZES.entries()) {
    const bytes = patternBytes(size, 9100 + i);
    const res = await putWithNodesUp(c, i % 6, bytes, { 'X-Blobstore-Policy': '4', ...headers });
    expect(res.status, await res.clone().text()).toBe(201);
    acked.set(((await res.json()) as { id: string }).id, bytes);
  }
  return acked;
}

describe('EC columns with a cluster secret: over the API listeners', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ size: 6, args: [...EC_ARGS, '--cluster-secret', SECRET], together: true });
    await c.converged({ members: c.ids });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('stores and reads every blob from every node; a column read without the secret is refused', async () => {
    const acked = await storeAll(c, {});
    await expectReadableEverywhere(c, acked);
    const [id] = [...acked.keys()];
    for (const i of c.live()) {
      const res = await fetch(`${c.url(i)}/internal/v1/shards/${id}/${i}`);
      expect(res.status).toBeOneOf([401, 404]);
      if (res.status === 401) return;
    }
    throw new Error('no node refused a column read without the secret');
  });
});

describe('EC columns with a token file and a cluster secret', () => {
  let c: TestCluster;
  const auth = { Authorization: `Bearer ${TOKEN}` };
  beforeAll(async () => {
    const file = join(tempDir(), 'tokens.json');
    writeFileSync(file, JSON.stringify({ tokens: [{ name: 'all', sha256: createHash('sha256').update(TOKEN).digest('hex'), scopes: ['admin'] }] }));
    c = await TestCluster.start({ size: 6, args: [...EC_ARGS, '--auth-tokens-file', file, '--cluster-secret', SECRET], together: true });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('stores and reads every blob from every node with a token; without one a read is refused', async () => {
    await waitFor(async () => {
      const states = await Promise.all(c.live().map(async (i) => (await (await fetch(`${c.url(i)}/v1/cluster/state`, { headers: auth })).json()) as { nodes: { state: string }[] }));
      return states.every((s) => s.nodes.filter((n) => n.state === 'active').length === 6);
    }, { what: 'six active members on every node', timeoutMs: 60_000, pollMs: 100 });
    const acked = await storeAll(c, auth);
    for (const i of c.live()) {
      for (const [id, bytes] of acked) {
        const res = await fetch(`${c.url(i)}/v1/blobs/${id}`, { headers: auth });
        expect(res.status, `GET ${id} from ${c.ids[i]}`).toBe(200);
        expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
      }
    }
    expect((await fetch(`${c.url(0)}/v1/blobs/${[...acked.keys()][0]}`)).status).toBe(401);
  });
});

describe("EC columns when the peers' API addresses cannot be reached", () => {
  let c: TestCluster;
  afterAll(async () => {
    await c?.stopAll();
  });

  it('a store fails whole (503, nothing visible), a small one whose columns go in a batch as a large one, and no column goes over gRPC instead', async () => {
    // Each node tells the others an API address nobody listens on; gRPC works as usual.
    const nowhere = await Promise.all([0, 1, 2, 3, 4, 5].map(() => freePort()));
    c = await TestCluster.start({
      size: 6, args: [...EC_ARGS, '--log-level', 'debug', '--log-format', 'json'], together: true,
      nodeArgs: (i) => ['--advertise-addr', `127.0.0.1:${nowhere[i]}`],
    });
    await c.converged({ members: c.ids });
    // 3000 bytes: held whole, its small columns batched per peer; 700 KiB: streamed column by column.
    for (const [k, size] of [SIZES[0]!, SIZES[2]!].entries()) {
      const bytes = patternBytes(size, 9102 + k);
      const res = await putWithNodesUp(c, k, bytes, { 'X-Blobstore-Policy': '4' });
      expect(res.status, await res.clone().text()).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      const id = await expectedId(bytes);
      for (const i of c.live()) {
        // Nothing visible: no node lists it, and none answers it (a node that cannot ask the owners,
        // whose API addresses are what cannot be reached, cannot say 404 either: 503).
        const listed = (await (await fetch(`${c.url(i)}/v1/blobs?prefix=${id}`)).json()) as { ids: string[] };
        expect(listed.ids, `${size} bytes listed on ${c.ids[i]}`).toEqual([]);
        expect([404, 503], `HEAD on ${c.ids[i]}`).toContain((await fetch(`${c.url(i)}/v1/blobs/${id}`, { method: 'HEAD' })).status);
      }
    }
    for (const i of c.live()) {
      const columnCalls = logLines(c.node(i).output()).filter((l) => l.access === 'grpc' && /^InternalService\.(StoreShard|StoreShardBatch|FetchShard)$/.test(String(l.method)));
      expect(columnCalls, `column calls over gRPC on ${c.ids[i]}`).toEqual([]);
    }
  });
});

describe('a store of bytes the cluster holds already, failing, takes back only the columns it made', () => {
  let c: TestCluster;
  beforeAll(async () => {
    // Seven nodes: one holds no column of a blob and coordinates its second store. Frozen holders
    // stay members (offline only after a minute); a column store waits 2 s for them.
    c = await TestCluster.start({ size: 7, args: [...EC_ARGS, '--ec-store-timeout-ms', '2000', '--offline-after-ms', '60000'], together: true });
    await c.converged({ members: c.ids });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('the blob stored before stays whole: its columns on the holders that answered are left, not deleted with the failed store', async () => {
    // 3000 bytes: its small columns go in batches; 300 KiB: column by column, from the upload's transient file.
    const blobs = new Map<string, Buffer>();
    for (const [k, size] of [SIZES[0]!, SIZES[1]!].entries()) {
      const bytes = patternBytes(size, 9300 + k);
      const res = await putWithNodesUp(c, 0, bytes, { 'X-Blobstore-Policy': '4' });
      expect(res.status, await res.clone().text()).toBe(201);
      blobs.set(((await res.json()) as { id: string }).id, bytes);
    }
    for (const [id, bytes] of blobs) {
      // The node holding none stores it again, with the holders of columns 0 to 2 (the id's first
      // owners, whom it asks first) frozen: it cannot tell the blob is held, and more than m = 2
      // column stores fail.
      const holders = await columnHolders(c, id);
      const outsider = c.live().find((i) => ![...holders.values()].includes(i))!;
      const frozen = [0, 1, 2].map((index) => holders.get(index)!);
      for (const i of frozen) c.freeze(i);
      try {
        const again = await putRaw(c.url(outsider), bytes, { 'X-Blobstore-Policy': '4' });
        expect(again.status, await again.clone().text()).toBe(503);
      } finally {
        for (const i of frozen) c.thaw(i);
      }
    }
    await expectReadableEverywhere(c, blobs);
    // Six columns each, as before the failed store: nothing was deleted from the holders that answered.
    for (const id of blobs.keys()) {
      const holding = await Promise.all(c.live().map(async (i) => ((await (await fetch(`${c.url(i)}/v1/blobs?prefix=${id}`)).json()) as { ids: string[] }).ids.includes(id)));
      expect(holding.filter(Boolean), `nodes listing ${id}`).toHaveLength(6);
    }
  });
});

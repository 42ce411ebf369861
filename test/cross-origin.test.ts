/**
 * A web page of another origin cannot change anything through a node (src/http/framing.ts): a
 * browser sends a cross-site POST of `text/plain` without asking first, so a page could have a
 * node on loopback, reachable without a credential, join a stranger to its cluster (who is then
 * sent users' blobs), remove its nodes, or store blobs. Such a POST, PUT or DELETE answers 403 by
 * the browser's Sec-Fetch-Site, or, from a browser that does not send it, by Origin against Host.
 * The node's own pages (the UI), curl and peers are served as before, also behind a proxy that
 * rewrites Host.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type NodeProcess, startNode } from './helpers/node-process.js';

let node: NodeProcess;
let host = '';

beforeAll(async () => {
  node = await startNode({ args: ['--grpc-addr', '127.0.0.1:0'] });
  host = new URL(node.url).host;
});
afterAll(async () => {
  await node?.stop();
});

/** A request as a browser (or curl) sends it; the status and body. */
function send(method: string, path: string, headers: Record<string, string>, body = ''): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${node.url}${path}`, { method, headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const JOIN = JSON.stringify({ node_id: 'aaa-evil', address: '198.18.30.3:8080', grpc_address: '198.18.30.3:8081', capacity_bytes: 1e12 });

async function members(): Promise<string[]> {
  const state = (await (await fetch(`${node.url}/v1/cluster/state`)).json()) as { nodes: { node_id: string }[] };
  return state.nodes.map((n) => n.node_id);
}

describe('requests a browser sends for a page of another origin', () => {
  it.each([
    ['Origin of another site', { Origin: 'http://evil.example' }],
    ['Origin "null" (a sandboxed frame, a file)', { Origin: 'null' }],
    ['Origin of another port of this host', { Origin: 'http://127.0.0.1:1' }],
    ['Sec-Fetch-Site cross-site', { 'Sec-Fetch-Site': 'cross-site' }],
    ['Sec-Fetch-Site same-site (another origin of this site)', { 'Sec-Fetch-Site': 'same-site', Origin: 'http://localhost:3000' }],
  ])('%s: a cluster join, a leave and a store of text/plain answer 403 and change nothing', async (_, browser) => {
    const headers = { ...browser, 'Content-Type': 'text/plain' };
    const join = await send('POST', '/v1/cluster/join', headers, JOIN);
    expect(join.status, join.body).toBe(403);
    expect(JSON.parse(join.body)).toMatchObject({ error: 'Forbidden' });
    const leave = await send('POST', '/v1/cluster/leave', headers, JSON.stringify({ node_id: 'test-node', graceful: false }));
    expect(leave.status, leave.body).toBe(403);
    const store = await send('POST', '/v1/blobs', headers, 'from a page elsewhere');
    expect(store.status, store.body).toBe(403);
    expect(await members()).toEqual(['test-node']);
  });

  it('reads are answered (a browser keeps their answers from the page: no CORS here)', async () => {
    const res = await send('GET', '/v1/cluster/state', { Origin: 'http://evil.example' });
    expect(res.status).toBe(200);
  });
});

describe('requests of the node\'s own pages, curl and peers', () => {
  it('a store from the node\'s own page (Origin = its host), from behind a proxy that rewrites Host (Sec-Fetch-Site same-origin), and from curl (neither) are stored', async () => {
    const cases: Record<string, string>[] = [{ Origin: `http://${host}` }, { Origin: 'https://blobs.example.com', 'Sec-Fetch-Site': 'same-origin' }, {}];
    for (const headers of cases) {
      const res = await send('POST', '/v1/blobs', { ...headers, 'Content-Type': 'application/octet-stream' }, `stored with ${JSON.stringify(headers)}`);
      expect(res.status, res.body).toBe(201);
    }
  });
});

/**
 * W3C trace context across nodes: a read a node serves from a peer's copy passes the client's
 * `traceparent` on, so the peer's access line of that read carries it; a malformed one goes no
 * further, and background work (heartbeats, handoff) carries none.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../grpc/helpers.js';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { TestCluster } from '../helpers/cluster.js';
import { type LogLine, logLines } from '../helpers/log.js';
import { waitFor } from '../helpers/wait.js';

const TRACE = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

const accessLines = (c: TestCluster, i: number): LogLine[] => logLines(c.node(i).output()).filter((l) => l.access === 'http');

/** Polls node i's access lines until `done` finds one (10 s at most). */
async function waitForLine(c: TestCluster, i: number, done: (l: LogLine) => boolean, what: string): Promise<LogLine> {
  let line: LogLine | undefined;
  await waitFor(() => (line = accessLines(c, i).find(done)) !== undefined, { what: `${what}: its access line on node ${i}`, timeoutMs: 10_000, pollMs: 20 });
  return line!;
}

/** A NONE blob stored at node 1: on two nodes its one copy stays there (Ring.holders); its id. */
async function blobOnNode1Only(c: TestCluster): Promise<string> {
  const res = await putRaw(c.url(1), patternBytes(2000, 1), { 'X-Blobstore-Policy': '1' });
  const { id } = (await res.json()) as { id: string };
  for (const [i, holds] of [[0, false], [1, true]] as const) {
    const page = (await (await fetch(`${c.url(i)}/v1/blobs?prefix=${id}`)).json()) as { ids: string[] };
    if (page.ids.includes(id) !== holds) throw new Error(`node ${i} ${holds ? 'lacks' : 'holds'} the NONE blob stored at node 1`);
  }
  return id;
}

describe('traceparent', () => {
  let c: TestCluster;
  let id = '';
  beforeAll(async () => {
    c = await TestCluster.start({ size: 2, args: ['--handoff-interval-ms', '500', '--log-level', 'debug', '--log-format', 'json'] });
    await c.converged({ members: c.ids });
    id = await blobOnNode1Only(c);
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('goes with a read from the peer that holds the blob, onto the peer\'s access line', async () => {
    const res = await fetch(`${c.url(0)}/v1/blobs/${id}`, { headers: { traceparent: TRACE, 'x-request-id': 'traced-read' } });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    expect(await waitForLine(c, 0, (l) => l.reqId === 'traced-read', 'the read on node 0')).toMatchObject({
      route: '/v1/blobs/:id', status: 200, traceparent: TRACE,
    });
    expect(await waitForLine(c, 1, (l) => l.traceparent === TRACE, 'the peer read on node 1')).toMatchObject({
      method: 'GET', route: '/internal/v1/blobs/:id', status: 200, bytes: 2000,
    });
  });

  it('a malformed traceparent goes no further than the node it came to', async () => {
    const before = accessLines(c, 1).filter((l) => l.route === '/internal/v1/blobs/:id').length;
    const bad = TRACE.toUpperCase();
    const res = await fetch(`${c.url(0)}/v1/blobs/${id}`, { headers: { traceparent: bad, 'x-request-id': 'bad-trace' } });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const here = await waitForLine(c, 0, (l) => l.reqId === 'bad-trace', 'the read on node 0');
    expect(here.traceparent).toBeUndefined();
    const peerReads = (): number => accessLines(c, 1).filter((l) => l.route === '/internal/v1/blobs/:id').length;
    await waitFor(() => peerReads() > before, { what: 'the peer read on node 1', timeoutMs: 10_000, pollMs: 20 });
    const reads = accessLines(c, 1).filter((l) => l.route === '/internal/v1/blobs/:id');
    expect(reads.length).toBe(before + 1);
    expect(reads.at(-1)!.traceparent).toBeUndefined();
  });

  it('background work carries none', () => {
    for (const i of [0, 1]) {
      const traced = logLines(c.node(i).output()).filter((l) => l.traceparent !== undefined);
      expect(traced.every((l) => l.traceparent === TRACE), `node ${i}`).toBe(true);
      expect(traced.length, `node ${i}`).toBe(1);
    }
  });
});

describe('traceparent over gRPC', () => {
  let c: TestCluster;
  afterAll(async () => {
    await c?.stopAll();
  });

  it('goes as metadata onto the gRPC access line of the node that serves the call (InternalService.FetchBlob)', async () => {
    c = await TestCluster.start({ size: 2, args: ['--handoff-interval-ms', '500', '--log-level', 'debug', '--log-format', 'json'] });
    await c.converged({ members: c.ids });
    const id = await blobOnNode1Only(c);
    const grpcAddress = (await c.state(0)).nodes.find((n) => n.node_id === c.ids[1])!.grpc_address;
    const internal = client('InternalService', grpcAddress);
    try {
      const metadata = new grpc.Metadata();
      metadata.set('traceparent', TRACE);
      const call = internal.FetchBlob!({ id: { id: Buffer.from(id, 'hex') } }, metadata) as grpc.ClientReadableStream<{ data?: Buffer }>;
      let bytes = 0;
      for await (const msg of call) bytes += (msg as { data?: Buffer }).data?.length ?? 0;
      expect(bytes).toBe(2000);
    } finally {
      internal.close();
    }
    let line: LogLine | undefined;
    const fetchBlobLine = (): boolean => (line = logLines(c.node(1).output()).find((l) => l.access === 'grpc' && l.method === 'InternalService.FetchBlob')) !== undefined;
    await waitFor(fetchBlobLine, { what: 'the FetchBlob line on node 1', timeoutMs: 10_000, pollMs: 20 });
    expect(line, 'the FetchBlob line on node 1').toMatchObject({ status: 0, traceparent: TRACE });
  });
});

/**
 * `blobstore healthcheck`: the probe the image's HEALTHCHECK and the systemd unit's start check
 * run. It finds the node from the same settings `serve` reads, answers 0 only for a 200 (with
 * --up: any answer, so a node still joining its cluster counts as started), and 1 otherwise.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/cluster.js';
import { type NodeProcess, startNode } from '../helpers/node-process.js';
import { cli, statusOf } from './helpers.js';
import { waitFor } from '../helpers/wait.js';

describe('blobstore healthcheck', () => {
  let joining: NodeProcess;
  let deadPort: number;
  beforeAll(async () => {
    deadPort = await freePort();
    // A seed that never answers: the node waits to join, /healthz answers 503.
    joining = await startNode({ args: ['--grpc-addr', '127.0.0.1:0', '--seed-nodes', `127.0.0.1:${deadPort}`, '--bootstrap-wait-ms', '10m'] });
    await waitFor(async () => (await statusOf(`${joining.url}/healthz`)) === 503, { what: 'a joining node', timeoutMs: 20_000 });
  });
  afterAll(() => joining?.stop());

  it('exits 1 and says what the node answered when it is not healthy', () => {
    const r = cli(['healthcheck'], { BLOBSTORE_LISTEN: `127.0.0.1:${joining.port}` });
    expect(r.stderr).toBe(`blobstore: http://127.0.0.1:${joining.port}/healthz answered 503\n`);
    expect(r.status).toBe(1);
  });

  it('--up takes any answer: the node runs', () => {
    const r = cli(['healthcheck', '--up', '--url', joining.url]);
    expect(r.stdout).toBe(`${joining.url}/healthz answered 503\n`);
    expect(r.status).toBe(0);
  });

  it('exits 1 when nothing listens, after --wait seconds of trying', () => {
    const started = Date.now();
    const r = cli(['healthcheck', '--up', '--wait', '1.5'], { BLOBSTORE_LISTEN: `0.0.0.0:${deadPort}` });
    expect(r.stderr).toBe(`blobstore: http://127.0.0.1:${deadPort}/healthz did not answer (ECONNREFUSED)\n`);
    expect(r.status).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it('probes https when the node has a TLS certificate, and a bad setting is a usage error', () => {
    const r = cli(['healthcheck'], { BLOBSTORE_LISTEN: `127.0.0.1:${deadPort}`, BLOBSTORE_TLS_CERT: '/etc/blobstore/tls/node.crt' });
    expect(r.stderr).toBe(`blobstore: https://127.0.0.1:${deadPort}/healthz did not answer (ECONNREFUSED)\n`);
    const bad = cli(['healthcheck'], { BLOBSTORE_LISTEN: 'nowhere' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/setting listen \(from env BLOBSTORE_LISTEN\)/);
  });
});

/**
 * Erasure-coded blobs on six nodes that talk only TLS (mutual TLS and a cluster secret): the
 * columns go out and come back over TLS, and a reader gets every byte, from any node, to a client
 * that reads slowly, and with a holder gone.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Agent, setGlobalDispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes } from '../helpers/blobs.js';
import { type CertFiles, haveOpenssl, makeCa, makeCert } from '../helpers/certs.js';
import { STREAMED_EC_ARGS, TestCluster, expectReadableEverywhere, oneBigClusterAtATime, putWithNodesUp } from '../helpers/cluster.js';
import { tempDir } from '../helpers/node-process.js';

const run = promisify(execFile);
const SECRET = 'tls-ec-test-cluster-secret-0123456789';
const MiB = 1024 * 1024;

oneBigClusterAtATime();

let dir: string;
let ca: CertFiles;
let client: CertFiles;

beforeAll(() => {
  if (!haveOpenssl) return;
  dir = tempDir('blobstore-tls-ec-');
  ca = makeCa(dir);
  client = makeCert(dir, ca, 'client', { ips: ['127.0.0.1'] });
  setGlobalDispatcher(new Agent({ connect: { ca: readFileSync(ca.cert), cert: readFileSync(client.cert), key: readFileSync(client.key) } }));
});

describe.skipIf(!haveOpenssl)('EC42 on six nodes that talk only TLS', () => {
  let c: TestCluster;
  const blobs = new Map<string, Buffer>();
  afterAll(async () => {
    await c?.stopAll();
  });

  it('stores blobs whole and streamed, and every node reads each byte-exact', async () => {
    const certs = [0, 1, 2, 3, 4, 5].map((i) => makeCert(dir, ca, `node-${i}`, { ips: ['127.0.0.1'] }));
    c = await TestCluster.start({
      size: 6, together: true, scheme: 'https', args: [...STREAMED_EC_ARGS],
      nodeArgs: (i) => ['--tls-cert', certs[i]!.cert, '--tls-key', certs[i]!.key, '--tls-ca', ca.cert, '--cluster-secret', SECRET],
    });
    await c.converged({ members: c.ids, timeoutMs: 90_000 });
    // Under STREAMED_EC_ARGS, 1 MiB is stored whole (columns after the last byte) and 24 MiB
    // streams its columns as it arrives.
    for (const [i, size] of [1 * MiB + 7, 24 * MiB + 5].entries()) {
      const bytes = patternBytes(size, 900 + i);
      const res = await putWithNodesUp(c, i, bytes, { 'X-Blobstore-Policy': 'EC42' });
      expect(res.status).toBe(201);
      blobs.set(((await res.json()) as { id: string }).id, bytes);
    }
    await expectReadableEverywhere(c, blobs);
  }, 240_000);

  it('serves a client that reads slowly: the columns wait for it, every byte arrives', async () => {
    const [id, bytes] = [...blobs].find(([, b]) => b.length > 16 * MiB)!;
    const out = join(dir, 'slow.bin');
    const { stdout } = await run('curl', [
      '-sS', '--cacert', ca.cert, '--cert', client.cert, '--key', client.key, '--limit-rate', '6M', '-o', out, '-w', '%{http_code} %{size_download}', `${c.url(3)}/v1/blobs/${id}`,
    ], { timeout: 90_000 }).catch((err: { stdout?: string; stderr?: string }) => ({ stdout: `${err.stdout ?? ''} ${err.stderr ?? ''}` }));
    expect(stdout).toBe(`200 ${bytes.length}`);
    expect(readFileSync(out).equals(bytes)).toBe(true);
  }, 120_000);

  it('with a column holder killed, every other node still reads every byte over TLS', async () => {
    await c.kill(5);
    await expectReadableEverywhere(c, blobs, [0, 1, 2, 3, 4]);
  }, 120_000);
});

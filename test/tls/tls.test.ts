/**
 * TLS on every listener, with certificates made by Debian's openssl and checked by real clients:
 * curl --cacert on the API and metrics listeners, Python grpcio's ssl_channel_credentials on gRPC.
 * A bad certificate set stops the start with a clear message; SIGHUP loads a new certificate into
 * every listener; three nodes started as a user would (SeedNodes = the others) form a cluster that
 * talks only TLS, with mutual TLS between nodes and a cluster secret, and keep three copies.
 */
import { execFile, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { promisify } from 'node:util';
import { Agent, setGlobalDispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { type CertFiles, haveOpenssl, makeCa, makeCert } from '../helpers/certs.js';
import { copiesOf, expectReadableEverywhere, freePort, TestCluster } from '../helpers/cluster.js';
import { type NodeProcess, runCli, startNode, tempDir } from '../helpers/node-process.js';
import { waitFor } from '../helpers/wait.js';
import { BIN } from '../cli/helpers.js';
import { NodeTls } from '../../src/tls/node-tls.js';

const run = promisify(execFile);
const PYTHON = '/usr/bin/python3';
const SECRET = 'tls-test-cluster-secret-0123456789';

let dir: string;
let ca: CertFiles;
let nodeCert: CertFiles;

/** Runs a Python grpcio snippet against `target`; prints one JSON line. */
async function python(script: string, target: string): Promise<Record<string, string>> {
  const { stdout } = await run(PYTHON, ['-c', script, target, ca.cert, nodeCert.cert, nodeCert.key], { timeout: 30_000 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, string>;
}

/** The serial number of the certificate a TLS listener presents to a new connection. */
function servedSerial(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca: readFileSync(ca.cert) }, () => {
      resolve(socket.getPeerCertificate().serialNumber);
      socket.destroy();
    });
    socket.setTimeout(10_000, () => socket.destroy(new Error('no TLS handshake within 10 s')));
    socket.on('error', reject);
  });
}

const serialOf = (file: string): string => new X509Certificate(readFileSync(file)).serialNumber;

beforeAll(() => {
  if (!haveOpenssl) return;
  dir = tempDir('blobstore-tls-');
  ca = makeCa(dir);
  nodeCert = makeCert(dir, ca, 'node', { ips: ['127.0.0.1'], dns: ['localhost'] });
  // The test's own fetch trusts the test CA and presents a certificate of it.
  setGlobalDispatcher(new Agent({ connect: { ca: readFileSync(ca.cert), cert: readFileSync(nodeCert.cert), key: readFileSync(nodeCert.key) } }));
});

describe.skipIf(!haveOpenssl)('TLS on a node alone (openssl certificates)', () => {
  let node: NodeProcess;
  let metricsPort: number;
  let grpcPort: number;
  let cert: CertFiles;
  beforeAll(async () => {
    // A copy the SIGHUP test replaces.
    cert = { cert: join(dir, 'live.pem'), key: join(dir, 'live.key') };
    copyFileSync(nodeCert.cert, cert.cert);
    copyFileSync(nodeCert.key, cert.key);
    // Ports below the kernel's ephemeral range, as a configured node has (8080, 9090): a listener
    // on port 0 gets one from that range, which a client connection may take as its own local port
    // while the listener renews, and the listener could not bind it again.
    node = await startNode({ args: [
      '--listen', `127.0.0.1:${await freePort()}`, '--metrics-addr', `127.0.0.1:${await freePort()}`, '--grpc-addr', '127.0.0.1:0', '--tls-cert', cert.cert, '--tls-key', cert.key, '--tls-ca', ca.cert,
    ] });
    metricsPort = Number(/metrics on https:\/\/[^:]+:(\d+)/.exec(node.output())![1]);
    grpcPort = Number(/gRPC listening on [^:]+:(\d+)/.exec(node.output())![1]);
  });
  afterAll(async () => {
    await node?.stop();
  });

  it('curl --cacert stores and reads a blob over https; plain http gets no answer', async () => {
    expect(node.url).toMatch(/^https:\/\//);
    const body = join(dir, 'body.bin');
    writeFileSync(body, patternBytes(5000, 1));
    const put = await run('curl', ['-sS', '--cacert', ca.cert, '-H', 'Content-Type: application/octet-stream', '--data-binary', `@${body}`, `${node.url}/v1/blobs`]);
    const id = (JSON.parse(put.stdout) as { id: string }).id;
    const got = await run('curl', ['-sS', '--cacert', ca.cert, '-o', join(dir, 'got.bin'), '-w', '%{http_code}', `${node.url}/v1/blobs/${id}`]);
    expect(got.stdout).toBe('200');
    expect(readFileSync(join(dir, 'got.bin')).equals(readFileSync(body))).toBe(true);
    // Without the CA the certificate is refused by curl; plain text is not HTTP to this port.
    await expect(run('curl', ['-sS', `${node.url}/healthz`])).rejects.toThrow(/certificate/i);
    await expect(run('curl', ['-sS', '--max-time', '10', node.url.replace('https', 'http') + '/healthz'])).rejects.toThrow();
  });

  it('blobstore stat without the CA fails at once, saying how to give it; with $BLOBSTORE_CACERT it works', async () => {
    const env = { ...process.env, BLOBSTORE_URL: node.url, BLOBSTORE_CONFIG: '/nonexistent/blobstore.json', NODE_EXTRA_CA_CERTS: '' };
    const started = Date.now();
    const refused = await run(process.execPath, [BIN, 'stat', '0'.repeat(32)], { env }).catch((err: { code: number; stderr: string }) => err);
    expect(Date.now() - started).toBeLessThan(8000);
    expect((refused as { code: number }).code).toBe(1);
    expect((refused as { stderr: string }).stderr).toMatch(/certificate is not trusted here: give the CA that signed it with --cacert/);
    const trusted = await run(process.execPath, [BIN, 'stat', '0'.repeat(32)], { env: { ...env, BLOBSTORE_CACERT: ca.cert } }).catch((err: { code: number; stderr: string }) => err);
    expect((trusted as { stderr: string }).stderr).toBe(`blobstore: ${'0'.repeat(32)}: not found\n`);
  });

  it('offers TLS 1.2 only with forward secrecy and AEAD (API and gRPC); TLS 1.1 is refused', async () => {
    const apiPort = Number(new URL(node.url).port);
    // s_client with its input closed; whether it agreed a protocol and suite ("New, TLSv1.3, Cipher is ..."),
    // not its exit status (with TLS 1.3 it may close before the server has read the client's certificate).
    const handshake = async (port: number, args: string[]): Promise<boolean> => {
      const out = spawnSync('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-CAfile', ca.cert, '-cert', nodeCert.cert, '-key', nodeCert.key, ...args], { input: '', timeout: 20_000, encoding: 'utf8' }).stdout;
      return /^New, TLSv1\.[23], Cipher is (?!\(NONE\))/m.test(out);
    };
    // The test certificates have P-256 keys: the suites offered with them are the ECDSA ones.
    for (const port of [apiPort, grpcPort]) {
      expect(await handshake(port, ['-tls1_2', '-cipher', 'ECDHE-ECDSA-AES128-GCM-SHA256']), `port ${port}: ECDHE + GCM`).toBe(true);
      expect(await handshake(port, ['-tls1_2', '-cipher', 'ECDHE-ECDSA-CHACHA20-POLY1305']), `port ${port}: ECDHE + ChaCha20`).toBe(true);
      for (const weak of ['ECDHE-ECDSA-AES128-SHA', 'ECDHE-ECDSA-AES256-SHA384', 'ECDHE-ECDSA-ARIA128-GCM-SHA256', 'ECDHE-ECDSA-AES128-CCM8']) {
        expect(await handshake(port, ['-tls1_2', '-cipher', weak]), `port ${port}: ${weak}`).toBe(false);
      }
      expect(await handshake(port, ['-tls1_1', '-cipher', 'DEFAULT@SECLEVEL=0']), `port ${port}: TLS 1.1`).toBe(false);
      expect(await handshake(port, ['-tls1_3']), `port ${port}: TLS 1.3`).toBe(true);
    }
  });

  it('a certificate out of its validity is said to be (it loads, but clients refuse it)', () => {
    const loaded = NodeTls.load({ tlsCert: nodeCert.cert, tlsKey: nodeCert.key, tlsCa: '' })!;
    expect(loaded.validityProblem()).toBeUndefined();
    expect(loaded.validityProblem(Date.now() + 3 * 86_400_000)).toMatch(/^the certificate in TLSCertFile .* expired on \d{4}-.*: clients refuse it$/);
    expect(loaded.validityProblem(Date.now() - 86_400_000)).toMatch(/is not valid before/);
  });

  it('the metrics listener speaks TLS too', async () => {
    const { stdout } = await run('curl', ['-sS', '--cacert', ca.cert, `https://127.0.0.1:${metricsPort}/metrics`]);
    expect(stdout).toContain('blobstore_');
  });

  it('gRPC over TLS: grpcio health check; InternalService refuses a client without a certificate', async () => {
    const result = await python([
      'import sys, json, grpc',
      'target, ca, cert, key = sys.argv[1:5]',
      'root = open(ca, "rb").read()',
      'plain = grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=root))',
      'out = {"health": plain.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=10).hex()}',
      'md = [("x-blobstore-cluster-secret", "whatever-it-is-not-checked-first")]',
      'try:',
      '    plain.unary_unary("/blobstore.v1.InternalService/DeleteInternal")(b"", timeout=10, metadata=md); out["nocert"] = "OK"',
      'except grpc.RpcError as e: out["nocert"] = e.code().name',
      'mutual = grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=root, private_key=open(key, "rb").read(), certificate_chain=open(cert, "rb").read()))',
      'try:',
      '    mutual.unary_unary("/blobstore.v1.InternalService/DeleteInternal")(b"", timeout=10); out["cert"] = "OK"',
      'except grpc.RpcError as e: out["cert"] = e.code().name',
      'print(json.dumps(out))',
    ].join('\n'), `127.0.0.1:${grpcPort}`);
    expect(result.health).toBe('0801'); // SERVING
    expect(result.nocert).toBe('UNAUTHENTICATED');
    // A node alone has no cluster secret: with a certificate the call is let in (and the empty id refused).
    expect(result.cert).toBe('INVALID_ARGUMENT');
  });

  it('SIGHUP loads a new certificate into the API, metrics and gRPC listeners; a bad one is refused and the old kept', async () => {
    const apiPort = Number(new URL(node.url).port);
    expect(await servedSerial(apiPort)).toBe(serialOf(nodeCert.cert));
    const next = makeCert(dir, ca, 'next', { ips: ['127.0.0.1'] });
    copyFileSync(next.cert, cert.cert);
    copyFileSync(next.key, cert.key);
    node.child.kill('SIGHUP');
    const want = serialOf(next.cert);
    const presents = async (port: number, listener: string): Promise<void> => {
      try {
        await waitFor(async () => (await servedSerial(port).catch(() => '')) === want, { what: `the ${listener} listener presents the new certificate`, timeoutMs: 20_000 });
      } catch (err) {
        throw new Error(`${(err as Error).message}; the node's last lines:\n${node.output().split('\n').slice(-15).join('\n')}`);
      }
    };
    await presents(apiPort, 'API');
    await presents(metricsPort, 'metrics');
    await presents(grpcPort, 'gRPC');
    expect((await fetch(`${node.url}/healthz`)).status).toBe(200);
    // A key that is not the certificate's: the node says so and keeps serving the one it has.
    copyFileSync(nodeCert.key, cert.key);
    node.child.kill('SIGHUP');
    await waitFor(() => /is not the key of the certificate.*keeping the certificate loaded before/.test(node.output()), { what: 'the refusal is logged', timeoutMs: 20_000 });
    expect(await servedSerial(apiPort)).toBe(want);
  }, 90_000);
});

describe.skipIf(!haveOpenssl)('a TLS setting that cannot work stops the start (exit 2, a message naming the file)', () => {
  it.each([
    ['a missing key file', () => ['--tls-cert', nodeCert.cert, '--tls-key', join(dir, 'absent.key')], /TLSKeyFile .*absent\.key: cannot read it \(ENOENT\)/],
    ['a key that is not the certificate\'s', () => ['--tls-cert', nodeCert.cert, '--tls-key', ca.key], /TLSKeyFile .* is not the key of the certificate in TLSCertFile/],
    ['a certificate without its key', () => ['--tls-cert', nodeCert.cert], /TLSCertFile is set without TLSKeyFile/],
    ['a CA without a certificate', () => ['--tls-ca', ca.cert], /TLSCAFile needs TLSCertFile and TLSKeyFile/],
    ['a file that is not PEM', () => ['--tls-cert', join(dir, 'body.bin'), '--tls-key', nodeCert.key], /not a PEM file/],
  ])('%s', async (_what, args, message) => {
    writeFileSync(join(dir, 'body.bin'), 'not a certificate');
    const r = await runCli(['serve', '--data-dir', tempDir(), '--listen', '127.0.0.1:0', '--metrics-addr', '', '--grpc-addr', '', ...args()]);
    expect(r.code).toBe(2);
    expect(r.stdout + r.stderr).toMatch(message);
  }, 30_000);
});

describe.skipIf(!haveOpenssl)('three nodes that talk only TLS (mutual TLS and a cluster secret)', () => {
  let c: TestCluster;
  afterAll(async () => {
    await c?.stopAll();
  });

  it('form one cluster from SeedNodes = the others, and keep three copies of a REPLICA3 blob readable from every node', async () => {
    const certs = [1, 2, 3].map((i) => makeCert(dir, ca, `node-${i}`, { ips: ['127.0.0.1'] }));
    c = await TestCluster.start({
      size: 3, together: true, scheme: 'https',
      nodeArgs: (i) => ['--tls-cert', certs[i]!.cert, '--tls-key', certs[i]!.key, '--tls-ca', ca.cert, '--cluster-secret', SECRET],
    });
    await c.converged({ members: c.ids, timeoutMs: 60_000 });
    const blobs = new Map<string, Buffer>();
    for (const size of [3000, 300_000, 3 * 1024 * 1024]) {
      const bytes = patternBytes(size, size);
      const res = await putRaw(c.url(size % 3), bytes, { 'X-Blobstore-Policy': 'REPLICA3' });
      expect(res.status).toBe(201);
      blobs.set(((await res.json()) as { id: string }).id, bytes);
    }
    await waitFor(async () => {
      const copies = await copiesOf(c);
      return [...blobs.keys()].every((id) => copies.get(id)?.length === 3);
    }, { what: 'three copies of every blob', timeoutMs: 60_000 });
    await expectReadableEverywhere(c, blobs);
    // Node's own warnings (grpc-js names peers' TLS servers by address) go into the JSON log, not stderr as text.
    for (const n of c.nodes) expect(n!.output()).not.toContain('DeprecationWarning');
    // Nothing of it crossed in plain text: a plain-HTTP request to a node gets no answer.
    await expect(fetch(c.url(0).replace('https', 'http') + '/v1/cluster/state', { signal: AbortSignal.timeout(10_000) })).rejects.toThrow();
  }, 180_000);

  it('a node without a blob streams it whole from its holder over TLS to a client that reads slowly', async () => {
    // NONE stays on the node that took it (three nodes): the others fetch it from there as they answer.
    const bytes = patternBytes(20 * 1024 * 1024, 77);
    const res = await putRaw(c.url(1), bytes, { 'X-Blobstore-Policy': 'NONE' });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    for (const reader of [0, 2]) {
      const out = join(dir, `slow-${reader}.bin`);
      // 8 MiB/s: the holder's bytes come faster than the client takes them, so the fetch waits on it.
      const { stdout } = await run('curl', ['-sS', '--cacert', ca.cert, '--cert', nodeCert.cert, '--key', nodeCert.key, '--limit-rate', '8M', '-o', out, '-w', '%{http_code} %{size_download}', `${c.url(reader)}/v1/blobs/${id}`], { timeout: 60_000 })
        .catch((err: { stdout?: string; stderr?: string }) => ({ stdout: `${err.stdout ?? ''} ${err.stderr ?? ''}` }));
      expect(stdout, `read through node ${reader}`).toBe(`200 ${bytes.length}`);
      expect(readFileSync(out).equals(bytes), `bytes read through node ${reader}`).toBe(true);
    }
  }, 120_000);
});

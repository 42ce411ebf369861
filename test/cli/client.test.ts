/**
 * `blobstore put | get | stat | ls | rm` as a user runs them against a real node, and the
 * BlobClient library they stand on (`import { BlobClient } from 'blobstore'`): every id printed
 * once, downloads kept only once their bytes are the id's, clear messages and exit codes for bad
 * input (2: usage; 1: a node's refusal or failure), never a stack trace.
 */
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitBatch } from '../../src/blob/batch.js';
import { BlobClient, BlobIdMismatch } from '../../src/client/index.js';
import { expectedId, patternBytes } from '../helpers/blobs.js';
import { type NodeProcess, startNode, tempDir } from '../helpers/node-process.js';
import { BIN, ROOT, runAsync, type Sandbox, useSandboxes } from './helpers.js';

const fresh = useSandboxes();
let node: NodeProcess;
let box: Sandbox;
let dir: string;

/** The CLI against the node, as a user runs it (BLOBSTORE_URL set). */
const cli = (args: string[], input?: string) => runAsync(box, args, { BLOBSTORE_URL: node.url }, input);

beforeAll(async () => {
  node = await startNode();
  box = fresh();
  dir = tempDir('blobstore-client-');
});
afterAll(async () => {
  expect(await node.stop()).toBe(0);
});

const noStackTrace = (stderr: string): void => expect(stderr).not.toMatch(/\n\s+at /);

describe('put', () => {
  it('stores files and prints "<id>  <file>" once each, as they land', async () => {
    const files = [0, 1, 2].map((i) => {
      const path = join(dir, `f${i}.bin`);
      writeFileSync(path, patternBytes(1000 + i * 5000, 10 + i));
      return path;
    });
    const r = await cli(['put', ...files]);
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n').sort();
    const want = await Promise.all(files.map(async (f) => `${await expectedId(readFileSync(f))}  ${f}`));
    expect(lines).toStrictEqual(want.sort());
    for (const f of files) expect((await fetch(`${node.url}/v1/blobs/${await expectedId(readFileSync(f))}`)).status).toBe(200);
  });

  it('--jobs 16 of 200 files: every file stored, each id printed once; --output json', async () => {
    const many = join(dir, 'many');
    mkdirSync(many);
    for (let i = 0; i < 200; i++) writeFileSync(join(many, `m${i}`), patternBytes(4096, 5000 + i));
    const files = readdirSync(many).map((f) => join(many, f));
    const r = await cli(['put', '--jobs', '16', '--output', 'json', '--policy', 'NONE', '--labels', 'team=ingest', ...files]);
    expect(r.status, r.stderr).toBe(0);
    const answers = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { file: string; id: string; size: number; created: boolean });
    expect(answers.map((a) => a.file).sort()).toStrictEqual([...files].sort());
    for (const a of answers) {
      expect(a.id).toBe(await expectedId(readFileSync(a.file)));
      expect(a.size).toBe(4096);
    }
    const head = await fetch(`${node.url}/v1/blobs/${answers[0]!.id}`, { method: 'HEAD' });
    expect(head.headers.get('x-blobstore-policy')).toBe('1');
  });

  it('- streams standard input', async () => {
    const r = await cli(['put', '-'], 'from a pipe\n');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(`${await expectedId(Buffer.from('from a pipe\n'))}  -`);
  });

  it('a missing file exits 2 before anything is stored, naming it', async () => {
    const ok = join(dir, 'present.bin');
    writeFileSync(ok, 'present, but never sent');
    const r = await cli(['put', ok, join(dir, 'absent.bin')]);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`blobstore: ${join(dir, 'absent.bin')}: no such file\n`);
    expect((await fetch(`${node.url}/v1/blobs/${await expectedId(Buffer.from('present, but never sent'))}`, { method: 'HEAD' })).status).toBe(404);
  });

  it('a refusal of the node (a bad policy for one node: EC42 needs six) exits 1 with its message', async () => {
    const f = join(dir, 'ec.bin');
    writeFileSync(f, 'erasure-coded on one node');
    const r = await cli(['put', '--policy', 'EC42', f]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('412 not enough nodes for EC');
    noStackTrace(r.stderr);
  });
});

describe('small files go many to a request (POST /v1/blobs/batch)', () => {
  it('putMany stores blobs in batches and answers their ids in the order given', async () => {
    const client = new BlobClient({ urls: node.url });
    const blobs = Array.from({ length: 300 }, (_, i) => patternBytes(100 + i, 9000 + i));
    const progress: number[] = [];
    const results = await client.putMany(blobs, { policy: 'NONE', onProgress: (n) => progress.push(n) });
    await client.close();
    expect(results.map((r) => r.id)).toStrictEqual(await Promise.all(blobs.map((b) => expectedId(b))));
    expect(results.every((r) => r.created && r.url === node.url)).toBe(true);
    // 300 blobs: a batch of 256, then one of 44.
    expect(progress).toStrictEqual([blobs.slice(0, 256).reduce((a, b) => a + b.length, 0), blobs.reduce((a, b) => a + b.length, 0)]);
  });

  it('a node without the batch route (501) takes them one by one', async () => {
    const stored: string[] = [];
    const old = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => {
        if (req.url === '/v1/blobs/batch') {
          const refusal = '{"code":501,"error":"Not Implemented","message":"Method Not Allowed"}';
          res.writeHead(501, { 'content-type': 'application/json', 'content-length': refusal.length }).end(refusal);
          return;
        }
        const body = Buffer.concat(parts);
        stored.push(body.toString());
        void expectedId(body).then((id) => {
          const answer = JSON.stringify({ id, size: body.length });
          res.writeHead(201, { 'content-type': 'application/json', 'content-length': answer.length }).end(answer);
        });
      });
    });
    await new Promise<void>((resolve) => old.listen(0, '127.0.0.1', resolve));
    try {
      const client = new BlobClient({ urls: `http://127.0.0.1:${(old.address() as { port: number }).port}`, retries: 0 });
      const blobs = ['one', 'two', 'three'].map((t) => Buffer.from(t));
      const results = await client.putMany(blobs);
      await client.close();
      expect(results.map((r) => r.id)).toStrictEqual(await Promise.all(blobs.map((b) => expectedId(b))));
      expect(stored.sort()).toStrictEqual(['one', 'three', 'two']);
    } finally {
      await new Promise<void>((resolve) => old.close(() => resolve()));
    }
  });

  it('put sends small files as batches, --batch 1 a request per file; --batch beyond 256 or below 1 exits 2', async () => {
    // A "node" that records each request and answers stores and batches as a node does.
    const seen: string[] = [];
    const recorder = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', async () => {
        const body = Buffer.concat(parts);
        seen.push(req.url!);
        const blobs = req.url === '/v1/blobs/batch' ? (splitBatch(body, 1024) as Uint8Array[]) : [body];
        const answers = await Promise.all(blobs.map(async (b) => ({ id: await expectedId(b), size: b.length, created: true })));
        const answer = JSON.stringify(req.url === '/v1/blobs/batch' ? { blobs: answers } : answers[0]);
        res.writeHead(req.url === '/v1/blobs/batch' ? 200 : 201, { 'content-type': 'application/json', 'content-length': answer.length }).end(answer);
      });
    });
    await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(recorder.address() as { port: number }).port}`;
    try {
      const few = join(dir, 'few');
      mkdirSync(few);
      const files = [0, 1, 2].map((i) => {
        const f = join(few, `b${i}`);
        writeFileSync(f, patternBytes(512, 8100 + i));
        return f;
      });
      const batched = await runAsync(box, ['put', '--url', url, ...files]);
      expect(batched.status, batched.stderr).toBe(0);
      expect(seen.splice(0)).toStrictEqual(['/v1/blobs/batch']);
      const single = await runAsync(box, ['put', '--batch', '1', '--url', url, ...files]);
      expect(single.status, single.stderr).toBe(0);
      expect(seen.splice(0)).toStrictEqual(['/v1/blobs', '/v1/blobs', '/v1/blobs']);
      for (const out of [batched.stdout, single.stdout]) {
        expect(out.trim().split('\n').sort()).toStrictEqual((await Promise.all(files.map(async (f) => `${await expectedId(readFileSync(f))}  ${f}`))).sort());
      }
      for (const bad of ['0', '257']) {
        const refused = await runAsync(box, ['put', '--batch', bad, '--url', url, ...files]);
        expect(refused.status).toBe(2);
        expect(refused.stderr).toMatch(/--batch/);
      }
      expect(seen).toStrictEqual([]);
    } finally {
      await new Promise<void>((resolve) => recorder.close(() => resolve()));
    }
  });
});

describe('get, stat, ls, rm', () => {
  let id: string;
  const data = patternBytes(3 * 1024 * 1024 + 7, 77);
  beforeAll(async () => {
    const f = join(dir, 'big.bin');
    writeFileSync(f, data);
    const r = await cli(['put', f]);
    id = r.stdout.split(' ')[0]!;
  });

  it('get -o writes the file once its bytes are the id\'s; to stdout without -o', async () => {
    const out = join(dir, 'copy.bin');
    const r = await cli(['get', id, '-o', out]);
    expect(r.status, r.stderr).toBe(0);
    expect(readFileSync(out).equals(data)).toBe(true);
    expect(readdirSync(dir).filter((f) => f.includes('.blobstore-'))).toStrictEqual([]);
    const small = await cli(['get', await expectedId(Buffer.from('from a pipe\n'))]);
    expect(small.stdout).toBe('from a pipe\n');
  });

  it('stat prints size, creation time and policy; --output json', async () => {
    const r = await cli(['stat', id]);
    expect(r.stdout).toMatch(new RegExp(`^${id}  ${data.length} bytes \\(3\\.0 MiB\\)  created \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z  REPLICA3\\n$`));
    const j = JSON.parse((await cli(['stat', id, '--output', 'json'])).stdout) as { size: number; policy: number };
    expect(j).toMatchObject({ id, size: data.length, policy: 3 });
  });

  it('ls lists ids, --prefix narrows them', async () => {
    const all = (await cli(['ls'])).stdout.trim().split('\n');
    expect(all).toContain(id);
    const some = (await cli(['ls', '--prefix', id.slice(0, 4)])).stdout.trim().split('\n');
    expect(some).toContain(id);
    for (const x of some) expect(x.startsWith(id.slice(0, 4))).toBe(true);
  });

  it('bad ids exit 2 without a call; a missing blob exits 1 with the node\'s 404', async () => {
    for (const args of [['get', 'ABCDEF'], ['stat', id.toUpperCase()], ['rm', 'nope']]) {
      const r = await cli(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^blobstore: invalid blob ID/);
    }
    const missing = '0'.repeat(32);
    const get = await cli(['get', missing]);
    expect(get.status).toBe(1);
    expect(get.stderr).toContain(`404 blob ${missing} not found`);
    const stat = await cli(['stat', missing]);
    expect(stat.status).toBe(1);
    expect(stat.stderr).toBe(`blobstore: ${missing}: not found\n`);
  });

  it('rm deletes; stat then says not found', async () => {
    expect((await cli(['rm', id])).stdout).toBe(`deleted ${id}\n`);
    expect((await cli(['stat', id])).status).toBe(1);
  });

  it('every command has --help with an example', async () => {
    for (const cmd of ['put', 'get', 'stat', 'ls', 'rm']) {
      const r = await cli([cmd, '--help']);
      expect(r.status, cmd).toBe(0);
      expect(r.stdout, cmd).toMatch(/Examples?:\n {2}blobstore /);
    }
  });
});

describe('what a user gets wrong, or a pipe cuts short', () => {
  it('a closed standard output ends the command quietly (status 141, as SIGPIPE ends cat), no stack', async () => {
    const data = patternBytes(2 * 1024 * 1024, 141);
    const f = join(dir, 'piped.bin');
    writeFileSync(f, data);
    const id = (await cli(['put', f])).stdout.split(' ')[0]!;
    // `get` to a reader that takes one byte and goes; the exit status is the command's (pipefail).
    const r = spawnSync('bash', ['-c', `set -o pipefail; "${process.execPath}" "${BIN}" get ${id} | head -c 1 >/dev/null`], { env: { ...box.env, BLOBSTORE_URL: node.url }, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(141);
  });

  it('get -o into a directory, or where no file can be made, exits 2 before any byte is fetched', async () => {
    const id = (await cli(['put', '-'], 'kept\n')).stdout.split(' ')[0]!;
    const isDir = await cli(['get', id, '-o', dir]);
    expect(isDir.status).toBe(2);
    expect(isDir.stderr).toBe(`blobstore: -o ${dir}: is a directory\n`);
    const nowhere = await cli(['get', id, '-o', join(dir, 'absent', 'x.bin')]);
    expect(nowhere.status).toBe(2);
    expect(nowhere.stderr).toMatch(/^blobstore: -o .*absent\/x\.bin: cannot write there \(ENOENT\)\n$/);
  });

  it('rm checks every id before it deletes any; ls --prefix checks the prefix', async () => {
    const id = (await cli(['put', '-'], 'not deleted\n')).stdout.split(' ')[0]!;
    const r = await cli(['rm', id, 'NOTANID']);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect((await cli(['stat', id])).status).toBe(0);
    const ls = await cli(['ls', '--prefix', 'ZZ']);
    expect(ls.status).toBe(2);
    expect(ls.stderr).toMatch(/^blobstore: invalid prefix "ZZ"/);
  });

  it('a node URL with a path, another scheme or no URL at all exits 2, naming the form expected', async () => {
    for (const [url, message] of [
      [`${node.url}/store`, `a node's API is at its root; give ${node.url}`],
      ['ftp://127.0.0.1:1', 'ftp is not http or https'],
      ['http://[bad', 'not a URL'],
    ] as const) {
      const r = await runAsync(box, ['ls', '--url', url], {});
      expect(r.status, url).toBe(2);
      expect(r.stderr).toContain(message);
      noStackTrace(r.stderr);
    }
  });

  it('stat with no token on a node that wants one says why (a HEAD answer has no message)', async () => {
    const { tokenFile } = await import('../auth/helpers.js');
    const { path } = tokenFile();
    const guarded = await startNode({ args: ['--auth-tokens-file', path] });
    try {
      const r = await runAsync(box, ['stat', '0'.repeat(32), '--url', guarded.url], {});
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('401 missing or invalid bearer token');
    } finally {
      await guarded.stop();
    }
  });

  it('the library sends a stream given as such once (it cannot be read again), a failure not retried', async () => {
    const { Readable } = await import('node:stream');
    const client = new BlobClient({ urls: [node.url] });
    try {
      const bytes = patternBytes(300_000, 300);
      const put = await client.put(Readable.from([bytes.subarray(0, 1000), bytes.subarray(1000)]));
      expect(put.id).toBe(await expectedId(bytes));
    } finally {
      await client.close();
    }
  });
});

describe('downloads are checked against their id', () => {
  let liar: Server;
  let url: string;
  const real = Buffer.from('the real bytes');
  beforeAll(async () => {
    // A "node" that answers every GET with other bytes than the id's.
    liar = createServer((req, res) => res.end(req.method === 'GET' ? Buffer.from('other bytes!!!') : ''));
    await new Promise<void>((resolve) => liar.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(liar.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => liar.close(() => resolve())));

  it('the library rejects with BlobIdMismatch', async () => {
    const client = new BlobClient({ urls: url, retries: 0 });
    await expect(client.get(await expectedId(real))).rejects.toBeInstanceOf(BlobIdMismatch);
    await client.close();
  });

  it('get -o exits 1, says so, and leaves no file', async () => {
    const out = join(dir, 'lie.bin');
    const r = await runAsync(box, ['get', await expectedId(real), '-o', out, '--url', url]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/hash to [0-9a-f]{32}: not the blob/);
    expect(readdirSync(dir).filter((f) => f.includes('lie.bin'))).toStrictEqual([]);
  });
});

describe('the package', () => {
  it('exports BlobClient: `import { BlobClient } from "blobstore"` stores and reads back', async () => {
    const script = `import { BlobClient } from 'blobstore';
      const c = new BlobClient({ urls: process.env.URL });
      const put = await c.put(Buffer.from('through the package'));
      const back = await c.get(put.id);
      console.log(put.id, back.toString());
      await c.close();`;
    const r = await runAsync(box, ['--input-type=module', '-e', script], { URL: node.url }, undefined, { node: true, cwd: ROOT });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(`${await expectedId(Buffer.from('through the package'))} through the package`);
  });
});

/**
 * The 4 KiB GET of a cached blob allocates no object of ours per request, nor does one read from
 * its segment and checked (a blob the read cache does not hold) beyond the clock readings of its
 * read and verify stages. A node runs in a probe
 * process (test/helpers/get-alloc-probe.mjs) with a 64 MiB young generation, so that no collection
 * falls inside the measured window, and counts the young-generation bytes allocated while this
 * process sends it N pipelined GETs; a bare uWS server in the same probe process is measured the
 * same way, as the floor (uWS makes its own response and request objects per request). What the
 * probe allocates on its own in a window as long (timers, sweeps) is taken off first: on a loaded
 * machine the requests take longer, and those bytes are no request's.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idOfDigest } from '../src/blob/id.js';
import { blake3, initHashing } from '../src/hash/blake3.js';
import { patternBytes, putRaw } from './helpers/blobs.js';
import { REPO, tempDir } from './helpers/node-process.js';

const REQUESTS = 20_000;
const CONNECTIONS = 4;
const PIPELINE = 32;
/**
 * Bytes per request the node may allocate beyond bare uWS (measured: 48): the id string uWS hands
 * over from getParameter(0) (32 one-byte characters and a 12-byte header: 44-48 bytes). The
 * latency metric's clock readings are ticks (src/metrics/clock.ts: small integers; until
 * 2026-11-27 two performance.now() heap numbers, 32 bytes). Anything more of ours (an object or a
 * Buffer view, at least 16 bytes; a closure, 32; a header string) goes over; the long path (the
 * next test) allocates some 2.7 KiB.
 */
const TOLERANCE_BYTES = 64;
/**
 * What a GET that reads its blob from the segment may allocate beyond a cached one (measured: 0-10;
 * ~55 while its read and verify stages' clock readings were heap numbers): now and then a record the
 * doorkeeper mistakes for one seen before (its marks collide), kept in the cache: a record object
 * and, until the cache is full, a buffer (~20 averaged). Before 2026-11-26 this path allocated ~300
 * bytes more (a view per index read, per segment read, per DataView of the entry).
 */
const MISS_EXTRA_BYTES = 48;

let probe: ChildProcess;
let lines: AsyncIterator<string>;
let port = 0;
let barePort = 0;
const paths: string[] = [];

async function ask(command: string): Promise<string> {
  probe.stdin!.write(command + '\n');
  const next = await lines.next();
  if (next.done) throw new Error('probe exited');
  return next.value;
}

/** A request of the drive: GET of a path, or POST of a body. */
type Send = (connection: number, i: number) => string;

const getOf = (requestPaths: string[], headers = ''): Send => (c, i) =>
  `GET ${requestPaths[(c * 7 + i) % requestPaths.length]} HTTP/1.1\r\nHost: x\r\n${headers}\r\n`;

/** POSTs of 4 KiB bodies, each unlike any before (`nonce`): stores that write, not duplicates. */
const postOf = (path: string, nonce: string): Send => (c, i) => {
  const head = `${nonce}:${c}:${i}`.padEnd(40, ' ');
  return `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 4096\r\n\r\n${head}${'p'.repeat(4096 - 40)}`;
};

/** Sends `total` GETs of `paths` over keep-alive connections, PIPELINE at a time; checks each is a 200 with a body. */
async function drive(target: number, requestPaths: string[], total: number, headers = ''): Promise<void> {
  return driveWith(target, getOf(requestPaths, headers), total, /^HTTP\/1.1 200/);
}

/** Sends `total` requests made by `send` over keep-alive connections, PIPELINE at a time; checks each answer's status line. */
async function driveWith(target: number, send: Send, total: number, status: RegExp, connections = CONNECTIONS, pipeline = PIPELINE): Promise<void> {
  const perConnection = Math.ceil(total / connections);
  await Promise.all(
    Array.from({ length: connections }, (_, c) =>
      new Promise<void>((resolve, reject) => {
        const socket = connect(target, '127.0.0.1');
        let sent = 0;
        let answered = 0;
        let pending: Buffer = Buffer.alloc(0);
        const sendBatch = (): void => {
          let batch = '';
          for (let i = 0; i < pipeline && sent < perConnection; i++, sent++) batch += send(c, sent);
          socket.write(batch);
        };
        socket.on('connect', sendBatch);
        socket.on('error', reject);
        socket.on('data', (chunk: Buffer) => {
          pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
          for (;;) {
            const end = pending.indexOf('\r\n\r\n');
            if (end < 0) break;
            const head = pending.subarray(0, end).toString('latin1');
            const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
            if (pending.length < end + 4 + length) break;
            if (!status.test(head) || length === 0) return reject(new Error(`unexpected answer: ${head.split('\r\n')[0]}`));
            pending = pending.subarray(end + 4 + length);
            answered++;
            if (answered === perConnection) {
              socket.end();
              return resolve();
            }
            if (answered === sent) sendBatch();
          }
        });
      }),
    ),
  );
}

/** Young-generation bytes per request while `total` GETs are answered (undefined: a collection spoiled the window). */
async function bytesPerRequest(target: number, requestPaths: string[], headers = '', total = REQUESTS): Promise<number | undefined> {
  return bytesPerSend(target, getOf(requestPaths, headers), total, /^HTTP\/1.1 200/);
}

async function bytesPerSend(target: number, send: Send, total: number, status: RegExp, connections?: number, pipeline?: number): Promise<number | undefined> {
  const measured = await window(() => driveWith(target, send, total, status, connections, pipeline));
  // What the probe process allocates on its own in as long a window (timers, the node's sweeps):
  // on a loaded machine the requests take longer, and that would count against each of them.
  const idle = await window(() => new Promise((resolve) => setTimeout(resolve, measured.ms))); // time is the subject: a window as long
  // A collection inside a window would hide what was allocated before it: no figure from it.
  if (measured.gcs > 0 || idle.gcs > 0) return undefined;
  return Math.max(0, measured.bytes - idle.bytes) / total;
}

/**
 * The least of `runs` windows that no collection spoiled (at most twice as many tries): an
 * allocation of the process's own (a timer, a metrics tick) that lands in one window is not the
 * requests', and a collection V8 starts on its own (a loaded machine makes windows long) leaves no
 * figure; the limits stay as strict.
 */
async function least(measure: () => Promise<number | undefined>, runs = 3): Promise<number> {
  const clean: number[] = [];
  for (let tries = 0; clean.length < runs && tries < 2 * runs; tries++) {
    const bytes = await measure();
    if (bytes !== undefined) clean.push(bytes);
  }
  expect(clean.length, 'windows without a collection').toBeGreaterThan(0);
  return Math.min(...clean);
}

/** Young-generation bytes the probe allocates while `during` runs, how long it ran, and the collections meanwhile. */
async function window(during: () => Promise<unknown>): Promise<{ bytes: number; ms: number; gcs: number }> {
  expect(await ask('mark')).toBe('marked');
  const start = performance.now();
  await during();
  const ms = performance.now() - start;
  const { newSpaceBytes, gcs } = JSON.parse(await ask('read')) as { newSpaceBytes: number; gcs: number };
  return { bytes: newSpaceBytes, ms, gcs };
}

beforeAll(async () => {
  const dataDir = join(tempDir(), 'data');
  probe = spawn(process.execPath, ['--expose-gc', '--max-semi-space-size=64', '--min-semi-space-size=64', join(REPO, 'test/helpers/get-alloc-probe.mjs'), dataDir], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const rl: Interface = createInterface({ input: probe.stdout! });
  lines = rl[Symbol.asyncIterator]();
  ({ port, barePort } = JSON.parse((await lines.next()).value as string) as { port: number; barePort: number });
  for (let i = 0; i < 64; i++) {
    const res = await putRaw(`http://127.0.0.1:${port}`, patternBytes(4096, 1000 + i));
    expect(res.status).toBe(201);
    paths.push(`/v1/blobs/${((await res.json()) as { id: string }).id}`);
  }
  // Warm-up: the first GET of each blob reads and caches it; the rest let V8 optimize both servers.
  await drive(port, paths, REQUESTS);
  await drive(barePort, ['/4k'], REQUESTS);
});

afterAll(async () => {
  if (!probe || probe.exitCode !== null) return;
  probe.stdin!.write('stop\n');
  await new Promise((resolve) => probe.once('exit', resolve));
});

describe('GET of a cached 4 KiB blob', () => {
  it('allocates nothing of ours per request: bare uWS plus the id string', async () => {
    const bare = await least(() => bytesPerRequest(barePort, ['/4k']));
    const node = await least(() => bytesPerRequest(port, paths));
    console.log(`young-generation bytes per GET: bare uWS ${bare.toFixed(1)}, node ${node.toFixed(1)}`);
    expect(node).toBeLessThanOrEqual(bare + TOLERANCE_BYTES);
  });

  it('the measure sees allocations: the long path (a conditional GET that does not match) allocates', async () => {
    // A quarter of the requests: the long path's ~2.8 KB each would fill most of the probe's
    // 64 MiB young generation in a window of them all, and a collection spoils the window.
    const bare = await least(() => bytesPerRequest(barePort, ['/4k'], '', REQUESTS / 4), 1);
    const slow = await least(() => bytesPerRequest(port, paths, 'If-None-Match: "0"\r\n', REQUESTS / 4), 1);
    console.log(`young-generation bytes per GET: bare uWS ${bare.toFixed(1)}, node's long path ${slow.toFixed(1)}`);
    expect(slow).toBeGreaterThan(bare + 4 * TOLERANCE_BYTES);
  });
});

describe('GET of a 4 KiB blob the read cache does not hold', () => {
  /** Blobs stored for one window each: a blob's first read marks it, its second would keep it. */
  const WINDOW_BLOBS = 4000;
  const body = (nonce: string, c: number, i: number): Buffer => {
    const head = `${nonce}:${c}:${i}`.padEnd(40, ' ');
    return Buffer.from(`${head}${'p'.repeat(4096 - 40)}`, 'latin1');
  };

  it('allocates nothing of ours per request either: read from the segment, checked, answered', async () => {
    await initHashing();
    const nonce = `miss${Date.now()}`;
    const windows: string[][] = [];
    for (let w = 0; w < 6; w++) {
      const tag = `${nonce}w${w}`;
      await driveWith(port, postOf('/v1/blobs', tag), WINDOW_BLOBS, /^HTTP\/1.1 201/, PUT_CONNECTIONS, 1);
      // The ids of what postOf sent: each connection's bodies, numbered from 0.
      const perConnection = Math.ceil(WINDOW_BLOBS / PUT_CONNECTIONS);
      const ids: string[] = [];
      for (let c = 0; c < PUT_CONNECTIONS; c++) {
        for (let i = 0; i < perConnection; i++) ids.push(`/v1/blobs/${idOfDigest(blake3(body(tag, c, i))).toString('hex')}`);
      }
      windows.push(ids);
    }
    // Each window reads blobs never read before, each once: connection c reads its own run of them.
    // Not pipelined: a read whose pages are busy (writeback) goes to the thread pool and answers
    // later, and uWS drops a connection that pipelines behind such an answer.
    const once = (paths: string[]): Send => (c, i) => `GET ${paths[c * (WINDOW_BLOBS / PUT_CONNECTIONS) + i]} HTTP/1.1\r\nHost: x\r\n\r\n`;
    let next = 0;
    const ok = /^HTTP\/1.1 200/;
    const bare = await least(() => bytesPerSend(barePort, getOf(['/4k']), WINDOW_BLOBS, ok, PUT_CONNECTIONS, 1));
    const node = await least(() => bytesPerSend(port, once(windows[next++]!), WINDOW_BLOBS, ok, PUT_CONNECTIONS, 1));
    console.log(`young-generation bytes per GET read from a segment: bare uWS ${bare.toFixed(1)}, node ${node.toFixed(1)}`);
    expect(node).toBeLessThanOrEqual(bare + TOLERANCE_BYTES + MISS_EXTRA_BYTES);
  });
});

/**
 * A small raw store allocates nothing of ours per request either. It takes the fast path
 * (src/http/small-store.ts: a pooled SmallStore, no body buffer, closure or promise), its log
 * record is pooled and is its own index entry (src/engine/small-record.ts), its digest is hashed
 * into that record and its body copied into the log's arena straight from uWS's ArrayBuffer, and
 * batches, their write and their answer are reused or native (src/engine/log.ts,
 * native/src/binding_batch.c), its clock readings are ticks (src/metrics/clock.ts) and its CRCs
 * never leave their functions as numbers (a CRC above 2^30 is a heap number). The floor is the bare
 * /drain route (bench/node/echo-routes.mjs): uWS's own objects for a POST, handled as cheaply as
 * uWS allows. Each figure is the least of five windows of 4,000 stores (one-off events, a table
 * that grows, a commit's garbage, even out over them). Beyond the floor (measured: 40-60 bytes)
 * the node allocates no object per store; what is left comes once per batch or per index commit,
 * shared by the stores in it:
 *   - each index commit: lmdb-js's write instructions and msgpack encodings of the checkpoint,
 *     counters and segment space, the commit's promises and closures (~6-10 KB). The probe
 *     commits every 50 ms (test/helpers/get-alloc-probe.mjs; the default is 5, where this is
 *     ~60 bytes per store at ~35k stores/s: bench/node/alloc-profile.ts), so that a slow or busy
 *     machine, with fewer stores per commit, measures what a store allocates, not what a commit does;
 *   - each batch (a few stores at 32 connections): the checkpoint it stages (~6);
 *   - uWS's own for what the node reads and writes beyond /drain (three more headers, its answer's).
 * Before 2026-11-27 a store allocated ~1.3 KB more (its record, index entry, digest and id
 * Buffers, the body's view, clock readings, a batch's closures, promises and arrays).
 */
const PUTS = 4000;
const PUT_TOLERANCE_BYTES = 96;
/** Stores are answered after the disk, and uWS drops a connection that pipelines behind such an answer. */
const PUT_CONNECTIONS = 32;

describe('PUT of a 4 KiB blob', () => {
  it('allocates nothing of ours per store: bare uWS plus clock readings, the CRC and a batch\'s share', async () => {
    const nonce = `alloc${Date.now()}`;
    // Warm-up, so both are optimized.
    await driveWith(port, postOf('/v1/blobs', `${nonce}w`), PUTS, /^HTTP\/1.1 201/, PUT_CONNECTIONS, 1);
    await driveWith(barePort, postOf('/drain', `${nonce}w`), PUTS, /^HTTP\/1.1 200/, PUT_CONNECTIONS, 1);
    let round = 0;
    // Each window sends bodies of its own: a store of bytes sent before answers 200 without writing.
    const perStore = (target: number, path: string, status: RegExp): Promise<number> =>
      least(() => bytesPerSend(target, postOf(path, `${nonce}r${round++}`), PUTS, status, PUT_CONNECTIONS, 1), 5);
    const bare = await perStore(barePort, '/drain', /^HTTP\/1.1 200/);
    const node = await perStore(port, '/v1/blobs', /^HTTP\/1.1 201/);
    console.log(`young-generation bytes per 4 KiB PUT: bare uWS ${bare.toFixed(1)}, node ${node.toFixed(1)}`);
    expect(node).toBeLessThanOrEqual(bare + PUT_TOLERANCE_BYTES);
  });

  it('the measure sees a store\'s allocations: the general path (a JSON body) allocates', async () => {
    const nonce = `json${Date.now()}`;
    // Each window (a retry too) sends bodies of its own: a store of bytes sent before answers 200.
    let round = 0;
    const json = (): Send => {
      const r = round++;
      return (c, i) => {
        const body = `{"data":"${Buffer.from(`${nonce}:${r}:${c}:${i}`.padEnd(3072, 'q')).toString('base64')}"}`;
        return `POST /v1/blobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      };
    };
    const bare = await least(() => bytesPerSend(barePort, postOf('/drain', `${nonce}b`), PUTS / 16, /^HTTP\/1.1 200/, PUT_CONNECTIONS, 1), 1);
    const slow = await least(() => bytesPerSend(port, json(), PUTS / 16, /^HTTP\/1.1 201/, PUT_CONNECTIONS, 1), 1);
    console.log(`young-generation bytes per 4 KiB PUT: bare uWS ${bare.toFixed(1)}, node's JSON path ${slow.toFixed(1)}`);
    expect(slow).toBeGreaterThan(bare + 4 * PUT_TOLERANCE_BYTES);
  });
});

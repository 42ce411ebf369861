/**
 * The node as an operator runs it: configuration sources and validation, data dir refusals,
 * graceful shutdown, and corrupt large blobs over HTTP.
 */
import { readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { grpcUnreachable } from '../src/cluster/addresses.js';
import { loadConfig, ConfigError } from '../src/config/load.js';
import { flipByte, patternBytes, putRaw } from './helpers/blobs.js';
import { runCli, startNode, tempDir } from './helpers/node-process.js';
import { logLines } from './helpers/log.js';
import { waitFor } from './helpers/wait.js';

describe('configuration', () => {
  const file = (content: unknown): string => {
    const path = join(tempDir(), 'config.json');
    writeFileSync(path, JSON.stringify(content));
    return path;
  };

  it('takes defaults < config file < BLOBSTORE_* env < flags', () => {
    const path = file({ node: { listen: '127.0.0.1:1111', listMaxLimit: 300, region: 'file' } });
    const config = loadConfig({ file: path, env: { BLOBSTORE_LIST_MAX_LIMIT: '400', BLOBSTORE_REGION: 'env' }, flags: { region: 'flag' } });
    expect(config.listen).toBe('127.0.0.1:1111');
    expect(config.listMaxLimit).toBe(400);
    expect(config.region).toBe('flag');
    expect(config.listDefaultLimit).toBe(100);
    expect(config.maxBlobBytes).toBe(5 * 1024 ** 3);
  });

  it('accepts the spec setting names as written there', () => {
    const config = loadConfig({
      file: file({ NodeID: 'from-file', node: { SeedNodes: ['a:1', 'b:2'] } }),
      env: { HeartbeatInterval: '2s', MetricsAddr: 'same' },
    });
    expect(config.nodeId).toBe('from-file');
    expect(config.seedNodes).toEqual(['a:1', 'b:2']);
    expect(config.heartbeatIntervalMs).toBe(2000);
    expect(config.metricsAddr).toBe('same');
    expect(loadConfig({ file: '/nonexistent', env: {}, flags: { metricsAddr: '' } }).metricsAddr).toBe('');
  });

  it('names the setting and the source of a bad value', () => {
    expect(() => loadConfig({ file: '/nonexistent', env: { BLOBSTORE_MAX_BLOB_BYTES: 'lots' } })).toThrow(
      /setting maxBlobBytes \(from env BLOBSTORE_MAX_BLOB_BYTES\)/,
    );
    expect(() => loadConfig({ file: file({ node: { listen: 'nowhere' } }), env: {} })).toThrow(ConfigError);
    expect(() => loadConfig({ file: '/nonexistent', env: {}, flags: { compactionLiveRatio: '150' } })).toThrow(/at most 99/);
    expect(() => loadConfig({ file: '/nonexistent', env: { BLOBSTORE_INDEX_PAGE_BYTES: '12KiB' } })).toThrow(/indexPageBytes .*a power of two/);
    expect(() => loadConfig({ file: '/nonexistent', env: {}, flags: { indexPageBytes: '2KiB' } })).toThrow(/at least 4096 bytes/);
    expect(loadConfig({ file: '/nonexistent', env: { BLOBSTORE_INDEX_PAGE_BYTES: '64KiB' } }).indexPageBytes).toBe(65536);
  });

  it('refuses a config file with a setting under two spellings that disagree, or a key of the node section it does not know', () => {
    expect(loadConfig({ file: file({ node: { nodeId: 'a', NodeID: 'a' } }), env: {} }).nodeId).toBe('a');
    expect(() => loadConfig({ file: file({ node: { nodeId: 'old', NodeID: 'new' } }), env: {} })).toThrow(
      /node\.nodeId and node\.NodeID are the same setting with different values \("old", "new"\); keep one/,
    );
    expect(() => loadConfig({ file: file({ MetricsAddr: ':1', node: { metricsAddr: ':2' } }), env: {} })).toThrow(/node\.metricsAddr and MetricsAddr are the same setting/);
    expect(() => loadConfig({ file: file({ node: { listMaxLimt: 5 } }), env: {} })).toThrow(/unknown setting node\.listMaxLimt; `blobstore config list --all` lists them/);
    expect(() => loadConfig({ file: file({ node: { nodeid: 'x' } }), env: {} })).toThrow(/unknown setting node\.nodeid \(did you mean node\.nodeId\?\)/);
    expect(() => loadConfig({ file: '/nonexistent', env: {}, flags: { dataDir: '' } })).toThrow(/setting dataDir must not be empty/);
  });

  it('listens for gRPC on the API host when GrpcAddr is not set, so peers on other hosts reach it', () => {
    const grpcOf = (listen: string, grpc?: string): string =>
      loadConfig({ file: '/nonexistent', env: {}, flags: { listen, ...(grpc === undefined ? {} : { grpcAddr: grpc }) } }).grpcAddr;
    expect(grpcOf('127.0.0.1:8080')).toBe('127.0.0.1:50051');
    expect(grpcOf('198.18.0.1:8080')).toBe('198.18.0.1:50051');
    expect(grpcOf('0.0.0.0:8080')).toBe('0.0.0.0:50051');
    expect(grpcOf('[fd00::1]:8080')).toBe('[fd00::1]:50051');
    expect(grpcOf('198.18.0.1:8080', '127.0.0.1:7000')).toBe('127.0.0.1:7000');
    expect(loadConfig({ file: '/nonexistent', env: { GrpcAddr: '' }, flags: { listen: '198.18.0.1:8080' } }).grpcAddr).toBe('');
    // Set by hand to loopback beside an address peers reach: said at start (the peers' heartbeats cannot arrive).
    expect(grpcUnreachable('198.18.0.1:8080', '127.0.0.1:50051')).toMatch(/peers on other hosts cannot send it heartbeats/);
    expect(grpcUnreachable('198.18.0.1:8080', '198.18.0.1:50051')).toBeUndefined();
    expect(grpcUnreachable('127.0.0.1:8080', '127.0.0.1:50051')).toBeUndefined();
  });

  it('serve exits 2 with a clear message on a bad value; --help documents chunked large bodies', async () => {
    const bad = await runCli(['serve', '--listen', 'nope', '--data-dir', tempDir()]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/invalid value "nope" for setting listen/);
    const help = await runCli(['serve', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--data-dir/);
    expect(help.stdout).toMatch(/chunked transfer encoding/);
    expect(help.stdout).toMatch(/--NodeID/);
  });
});

describe('data dir', () => {
  it('a second node on a data dir in use is refused with exit 2', async () => {
    const node = await startNode();
    const second = await runCli(['serve', '--data-dir', node.dataDir, '--listen', '127.0.0.1:0', '--metrics-addr', '', '--grpc-addr', '', '--node-id', 'test-node']);
    expect(second.code).toBe(2);
    // Logged at fatal in the node's log format (JSON here: stdout is not a terminal).
    expect(logLines(second.stdout).find((l) => l.level === 'fatal')?.msg).toMatch(/in use by another blobstore process/);
    expect(await node.stop()).toBe(0);
  });

  it('a lock left by a killed node does not block the restart', async () => {
    const node = await startNode();
    await node.kill();
    const again = await startNode({ dataDir: node.dataDir });
    expect((await fetch(`${again.url}/healthz`)).status).toBe(200);
    expect(await again.stop()).toBe(0);
  });

  it('an index whose meta pages are damaged stops the start with one line saying what to do; done, every blob is back', async () => {
    const node = await startNode();
    const blobs = new Map<string, Buffer>();
    for (let i = 0; i < 30; i++) {
      const bytes = patternBytes(100 + i * 37, 900 + i);
      const res = await fetch(`${node.url}/v1/blobs`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: bytes });
      blobs.set(((await res.json()) as { id: string }).id, bytes);
    }
    expect(await node.stop()).toBe(0);
    const index = join(node.dataDir, 'index');
    const pageSize = readFileSync(join(index, 'data.mdb')).readUInt32LE(48);
    for (const at of [16, pageSize + 16]) {
      // One meta page at a time: LMDB reads both, and either garbled ended the process with SIGSEGV.
      const file = readFileSync(join(index, 'data.mdb'));
      const kept = Buffer.from(file.subarray(at, at + 64));
      for (let i = 0; i < 64; i++) file[at + i]! ^= 0x5a;
      writeFileSync(join(index, 'data.mdb'), file);
      const refused = await runCli(['serve', '--data-dir', node.dataDir, '--listen', '127.0.0.1:0', '--metrics-addr', '', '--grpc-addr', '', '--node-id', 'test-node']);
      expect(refused.code, `meta page at ${at}`).toBe(1);
      const lines = (refused.stdout + refused.stderr).trim().split('\n');
      expect(lines, refused.stdout + refused.stderr).toHaveLength(1);
      expect(JSON.parse(lines[0]!).msg).toMatch(new RegExp(`the index .*data\\.mdb is damaged .*move ${index.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} aside and start again`));
      kept.copy(file, at);
      writeFileSync(join(index, 'data.mdb'), file);
    }
    // As the message says: the index moved aside, the node rebuilds it from its log.
    writeFileSync(join(index, 'data.mdb'), Buffer.alloc(64, 0x5a), { flag: 'r+' });
    renameSync(index, `${index}.damaged`);
    const again = await startNode({ dataDir: node.dataDir });
    try {
      for (const [id, bytes] of blobs) expect(Buffer.from(await (await fetch(`${again.url}/v1/blobs/${id}`)).arrayBuffer()).equals(bytes)).toBe(true);
    } finally {
      expect(await again.stop()).toBe(0);
    }
  });

  it('stray upload temp files are removed at start', async () => {
    const dataDir = tempDir();
    const node = await startNode({ dataDir });
    await node.stop();
    writeFileSync(join(dataDir, 'tmp', 'left-over.part'), 'half an upload');
    const again = await startNode({ dataDir });
    expect(readdirSync(join(dataDir, 'tmp'))).toEqual([]);
    await again.stop();
  });
});

describe('listeners', () => {
  it('a second node on an API or metrics port in use fails to start instead of sharing the port, saying why in one line', async () => {
    const node = await startNode();
    try {
      const second = await runCli(['serve', '--data-dir', tempDir(), '--listen', `127.0.0.1:${node.port}`, '--metrics-addr', '', '--grpc-addr', '']);
      expect(second.code).toBe(1);
      // One log line saying why, as an operator needs it; no stack (it is not a bug).
      const lines = (second.stdout + second.stderr).trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'fatal', msg: `cannot start: cannot listen on 127.0.0.1:${node.port}: address in use (EADDRINUSE)` });
      expect(JSON.parse(lines[0]!)).not.toHaveProperty('err');
      const metrics = await runCli(['serve', '--data-dir', tempDir(), '--listen', '127.0.0.1:0', '--metrics-addr', `127.0.0.1:${node.port}`, '--grpc-addr', '']);
      expect(metrics.code).toBe(1);
      expect(metrics.stdout + metrics.stderr).toContain(`cannot listen for metrics on 127.0.0.1:${node.port}: address in use (EADDRINUSE)`);
      // A data dir that cannot be made: the errno and the path, one line.
      const file = join(tempDir(), 'file');
      writeFileSync(file, '');
      const notDir = await runCli(['serve', '--data-dir', join(file, 'sub'), '--listen', '127.0.0.1:0', '--metrics-addr', '', '--grpc-addr', '']);
      expect(notDir.code).toBe(1);
      expect((notDir.stdout + notDir.stderr).trim().split('\n')).toHaveLength(1);
      expect(notDir.stdout + notDir.stderr).toContain('ENOTDIR: not a directory');
      expect((await fetch(`${node.url}/healthz`)).status).toBe(200);
    } finally {
      await node.stop();
    }
  });
});

describe('graceful shutdown', () => {
  it('SIGTERM lets an upload in progress finish, then exits 0 and keeps the blob', async () => {
    const node = await startNode();
    const data = patternBytes(3 * 1024 * 1024, 11);
    const socket = connect(node.port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    let response = '';
    socket.on('data', (d: Buffer) => (response += d.toString()));
    socket.write(`POST /v1/blobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${data.length}\r\n\r\n`);
    socket.write(data.subarray(0, 1024 * 1024));
    // The upload is under way (its temp file exists) before the signal, and the signal is taken
    // (the node logged it) before the rest of the body: fixed pauses were too short on a loaded machine.
    await waitFor(() => readdirSync(join(node.dataDir, 'tmp')).some((f) => f.endsWith('.part')), { what: 'the upload under way' });
    const exit = node.stop();
    await waitFor(() => node.output().includes('SIGTERM: shutting down'), { what: 'SIGTERM taken' });
    socket.write(data.subarray(1024 * 1024));
    expect(await exit).toBe(0);
    expect(response).toMatch(/^HTTP\/1.1 201/);
    socket.destroy();
    const again = await startNode({ dataDir: node.dataDir });
    const id = /"id":"([0-9a-f]{32})"/.exec(response)![1];
    const got = Buffer.from(await (await fetch(`${again.url}/v1/blobs/${id}`)).arrayBuffer());
    expect(got.equals(data)).toBe(true);
    await again.stop();
  });
});

describe('corrupt large blobs over HTTP', () => {
  it.each(['inline', 'pool'])('a bad first chunk answers 500; a bad later chunk cuts the body short; never wrong bytes (digests %s)', async (digests) => {
    const node = await startNode({ args: ['--small-blob-max-bytes', '64KiB', '--chunk-digests', digests] });
    const data = patternBytes(3 * 1024 * 1024 + 5, 21);
    const { id } = (await (await putRaw(node.url, data)).json()) as { id: string };
    const path = join(node.dataDir, 'blobs', id.slice(0, 2), id);

    flipByte(path, 2 * 1024 * 1024 + 10);
    const res = await fetch(`${node.url}/v1/blobs/${id}`);
    expect(res.status).toBe(200);
    const body = await res.arrayBuffer().then((b) => Buffer.from(b), () => undefined);
    if (body) {
      expect(body.length).toBeLessThan(data.length);
      expect(body.equals(data.subarray(0, body.length))).toBe(true);
    }

    flipByte(path, 10);
    const first = await fetch(`${node.url}/v1/blobs/${id}`);
    expect(first.status).toBe(500);
    expect(((await first.json()) as { code: number }).code).toBe(500);
    expect((await fetch(`${node.url}/healthz`)).status).toBe(200);
    await node.stop();
  });
});


/**
 * The standard gRPC services on a real node: grpc.health.v1 (what Kubernetes gRPC probes and
 * grpc_health_probe call) and server reflection (what grpcurl list/describe use), with two real
 * clients: Debian's python3-grpcio (C core) with stubs generated from the packages' .proto files,
 * and grpc-js for Watch through a shutdown.
 */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/node-process.js';
import { logLines } from '../helpers/log.js';
import { type GrpcNode, healthClient, healthStatus, startGrpcNode } from './helpers.js';

const run = promisify(execFile);
const PYTHON = '/usr/bin/python3';
const REPO = new URL('../..', import.meta.url).pathname;
const require = createRequire(import.meta.url);
const HEALTH_PROTOS = join(dirname(require.resolve('grpc-health-check/package.json')), 'proto');
const REFLECTION_PROTOS = join(dirname(require.resolve('@grpc/reflection/package.json')), 'build/proto');

let generated: string;

beforeAll(async () => {
  generated = tempDir('blobstore-pystubs-std-');
  await run(PYTHON, ['-m', 'grpc_tools.protoc', '-I', HEALTH_PROTOS, '-I', REFLECTION_PROTOS, `--python_out=${generated}`, `--grpc_python_out=${generated}`,
    join(HEALTH_PROTOS, 'health/v1/health.proto'), join(REFLECTION_PROTOS, 'grpc/reflection/v1/reflection.proto'),
    join(REFLECTION_PROTOS, 'grpc/reflection/v1alpha/reflection.proto')]);
});

afterAll(() => {
  if (generated) rmSync(generated, { recursive: true, force: true });
});

interface Probe {
  health: Record<string, string>;
  services_v1: string[];
  services_v1alpha: string[];
  blob_service_methods: string[];
  pool: Record<string, string>;
  labels_entry?: string;
}

async function probe(target: string): Promise<Probe> {
  const { stdout } = await run(PYTHON, [join(REPO, 'test/grpc/probe.py'), generated, target], { timeout: 30_000 }).catch((err: { stdout?: string; stderr?: string }) => {
    throw new Error(`probe.py failed:\n${err.stdout ?? ''}\n${err.stderr ?? ''}`);
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Probe;
}

describe('Python grpcio client (grpc_health_probe and grpcurl list, by hand)', () => {
  let n: GrpcNode;
  beforeAll(async () => {
    n = await startGrpcNode();
  });
  afterAll(async () => {
    await n?.stop();
  });

  it('health: "", BlobService, and the ClusterService and InternalService a serving node implements are SERVING', async () => {
    const p = await probe(n.target);
    expect(p.health).toStrictEqual({
      '': 'SERVING', 'blobstore.v1.BlobService': 'SERVING', 'blobstore.v1.ClusterService': 'SERVING', 'blobstore.v1.InternalService': 'SERVING',
    });
  });

  it('reflection (v1 and v1alpha) lists the blobstore services and health; BlobService is described from its descriptor', async () => {
    const p = await probe(n.target);
    const expected = ['blobstore.v1.BlobService', 'blobstore.v1.ClusterService', 'blobstore.v1.InternalService', 'grpc.health.v1.Health'];
    expect(p.services_v1).toStrictEqual(expected);
    expect(p.services_v1alpha).toStrictEqual(expected);
    expect(p.blob_service_methods).toStrictEqual([
      'Put(.blobstore.v1.PutRequest) returns (.blobstore.v1.PutResponse)',
      'Get(.blobstore.v1.GetRequest) returns (.blobstore.v1.GetResponse)',
      'Stat(.blobstore.v1.StatRequest) returns (.blobstore.v1.StatResponse)',
      'Delete(.blobstore.v1.DeleteRequest) returns (.blobstore.v1.DeleteResponse)',
      'List(.blobstore.v1.ListRequest) returns (.blobstore.v1.ListResponse)',
      'PutStream(stream .blobstore.v1.PutChunk) returns (.blobstore.v1.PutResponse)',
      'GetStream(.blobstore.v1.GetStreamRequest) returns (stream .blobstore.v1.GetChunk)',
    ]);
  });

  it('reflection\'s files build in a descriptor pool, as grpcurl and Python clients build them (map entries named <Field>Entry)', async () => {
    const p = await probe(n.target);
    expect(p.pool).toStrictEqual({ 'blobstore.v1.BlobService': 'ok', 'grpc.health.v1.Health': 'ok' });
    expect(p.labels_entry).toBe('LabelsEntry');
  });
});

describe('grpc-js client', () => {
  it('Watch sees SERVING, then NOT_SERVING when shutdown begins; the stream ends and does not hold the shutdown', async () => {
    const n = await startGrpcNode({ args: ['--shutdown-timeout-ms', '20000'] });
    const client = healthClient(n.target);
    try {
      const seen: string[] = [];
      const call = client.Watch({ service: '' });
      call.on('data', (m: { status: string }) => seen.push(m.status));
      const ended = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
      call.on('error', () => undefined);
      await expect.poll(() => seen).toStrictEqual(['SERVING']);
      const started = Date.now();
      expect(await n.stop()).toBe(0);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(seen).toStrictEqual(['SERVING', 'NOT_SERVING']);
      expect((await ended).code).toBe(grpc.status.OK);
      expect(logLines(n.node.output()).filter((l) => l.level === 'warn')).toStrictEqual([]);
    } finally {
      client.close();
    }
  });

  it('health and reflection stay open when bearer auth is on (probes carry no token)', async () => {
    const { tokenFile } = await import('../auth/helpers.js');
    const { dir, path } = tokenFile();
    const n = await startGrpcNode({ args: ['--auth-tokens-file', path] });
    const client = healthClient(n.target);
    try {
      expect(await healthStatus(client, 'blobstore.v1.BlobService')).toBe('SERVING');
      const p = await probe(n.target);
      expect(p.health['']).toBe('SERVING');
      expect(p.services_v1).toContain('blobstore.v1.BlobService');
      // While BlobService itself still wants a token.
      const denied = await new Promise<number>((resolve) => n.blobs.List({}, (err: grpc.ServiceError | null) => resolve(err?.code ?? 0)));
      expect(denied).toBe(grpc.status.UNAUTHENTICATED);
    } finally {
      client.close();
      await n.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

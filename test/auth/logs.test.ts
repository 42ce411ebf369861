import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO } from '../helpers/node-process.js';
import { TOKENS, sha256Hex, standardEntries, writeTokenFile } from './helpers.js';
import { type AuthNode, CREDS, authorization, call, expectNoTokenIn, required, startAuthNode } from './node.js';
import { logLines } from '../helpers/log.js';
import { waitFor } from '../helpers/wait.js';

/**
 * One node with every listener (API, metrics, gRPC), its whole stdout and stderr captured from
 * start to exit, through requests with every credential on every transport, malformed headers,
 * tokens where they do not belong (path, query, labels, bodies), SIGHUP reloads good and bad:
 * no token, no part of one and no token digest may appear in it.
 */

let n: AuthNode | undefined;
afterAll(async () => {
  await n?.stop();
});

const pkg = grpc.loadPackageDefinition(loadSync(['blobstore/v1/blob.proto', 'blobstore/v1/cluster.proto'], {
  includeDirs: [join(REPO, 'src/proto')], keepCase: true, longs: String, defaults: false,
})) as unknown as { blobstore: { v1: Record<string, grpc.ServiceClientConstructor> } };

function grpcCall(client: grpc.Client, method: string, request: unknown, value: string | undefined): Promise<void> {
  const md = new grpc.Metadata();
  if (value !== undefined) md.set('authorization', value);
  return new Promise((resolve) => (client as unknown as Record<string, (...a: unknown[]) => void>)[method]!(request, md, () => resolve()));
}

async function hangup(node: AuthNode, count: number): Promise<void> {
  node.node.child.kill('SIGHUP');
  const reloads = (): number => logLines(node.node.output()).filter((l) => l.component === 'auth' && l.signal === 'SIGHUP').length;
  await waitFor(() => reloads() >= count, { what: `${count} reload lines after SIGHUP`, timeoutMs: 10_000, pollMs: 25 });
  expect(reloads()).toBe(count);
}

describe('the node\'s output', () => {
  it('holds no token, part of a token or token digest after a session on every transport', async () => {
    n = await startAuthNode({ metrics: true, grpc: true });
    const node = n;
    const api = node.node.url;
    const metricsUrl = required(node.metricsUrl, 'metrics listener', node.node);
    const target = `127.0.0.1:${required(node.grpcPort, 'gRPC listener', node.node)}`;
    const blobs = new pkg.blobstore.v1.BlobService!(target, grpc.credentials.createInsecure());
    const cluster = new pkg.blobstore.v1.ClusterService!(target, grpc.credentials.createInsecure());
    try {
      const headerValues = [
        ...CREDS.map((c) => authorization(c).authorization),
        ...Object.values(TOKENS).flatMap((t) => [t, `Basic ${t}`, `Bearer ${t} ${t}`, `Bearer  ${t}`, `bearer ${sha256Hex(t)}`]),
      ];
      for (const value of headerValues) {
        const headers: Record<string, string> = value === undefined ? {} : { authorization: value };
        await Promise.all([
          call(`${api}/v1/blobs`, 'POST', { ...headers, 'content-type': 'application/octet-stream', 'x-blobstore-labels': JSON.stringify({ t: TOKENS.write }) }, `payload ${TOKENS.write}`),
          call(`${api}/v1/blobs`, 'PUT', { ...headers, 'content-type': 'application/json' }, `{"data": "${TOKENS.admin}", "labels": {"${TOKENS.admin}": 1}}`),
          call(`${api}/v1/blobs/${TOKENS.read}`, 'GET', headers),
          call(`${api}/v1/blobs?cursor=${TOKENS.read}&prefix=${TOKENS.read}`, 'GET', headers),
          call(`${api}/v1/blobs/stream`, 'POST', { ...headers, 'content-type': 'application/x-ndjson' }, `{"data": "${TOKENS.plain}"}\n{"id": "${TOKENS.plain}"}\n`),
          call(`${api}/v1/cluster/join`, 'POST', { ...headers, 'content-type': 'application/json' }, `{"node_id": "${TOKENS.admin}"}`),
          call(`${api}/${TOKENS.wrong}`, 'GET', headers),
          call(`${metricsUrl}/metrics`, 'GET', headers),
          call(`${metricsUrl}/api/v1/metrics`, 'GET', headers),
          call(`${metricsUrl}/metrics`, 'POST', headers, TOKENS.read),
          grpcCall(blobs, 'Put', { data: Buffer.from(TOKENS.write), labels: { [TOKENS.write]: TOKENS.write } }, value),
          grpcCall(blobs, 'Get', { id: { id: Buffer.from(TOKENS.read) } }, value),
          grpcCall(blobs, 'List', { cursor: Buffer.from(TOKENS.read), prefix: TOKENS.read }, value),
          grpcCall(cluster, 'Join', { node_id: TOKENS.admin, address: TOKENS.admin }, value),
        ]);
      }
      // Reloads: a good file with plain tokens (readable by others: the warning), then a malformed one.
      writeFileSync(node.tokensPath, JSON.stringify({ tokens: standardEntries() }));
      chmodSync(node.tokensPath, 0o644);
      await hangup(node, 1);
      writeFileSync(node.tokensPath, `{"tokens": [{"name": "x", "token": "${TOKENS.wrong}", "scopes": ["read", "${TOKENS.wrong}"]}]}`);
      await hangup(node, 2);
      writeTokenFile(node.tokensPath, [{ name: 'x', token: TOKENS.wrong, scopes: ['read'] }, { name: 'y', token: TOKENS.wrong, scopes: ['read'] }]);
      await hangup(node, 3);
    } finally {
      blobs.close();
      cluster.close();
    }
    expect(await node.node.stop()).toBe(0);
    const output = node.node.output();
    const lines = logLines(output);
    // Every line the node wrote is a JSON log line (none bypasses the logger) with time, level and node.
    expect(output.trimEnd().split('\n')).toHaveLength(lines.length);
    for (const line of lines) expect(line).toMatchObject({ name: 'blobstore', node: 'test-node', time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    const messages = lines.map((l) => `${l.level}: ${l.msg}`);
    expect(messages.some((m) => m.startsWith('info: bearer tokens required; 5 tokens loaded from'))).toBe(true);
    expect(messages.some((m) => m.startsWith('error: SIGHUP: AuthTokensFile') && m.endsWith('keeping the 5 tokens loaded before'))).toBe(true);
    expect(messages.some((m) => m.startsWith('warn: ') && m.includes('holds 1 plain token(s) and is readable by group or others (mode 644)'))).toBe(true);
    expectNoTokenIn(output);
  });
});

/**
 * Node-to-node calls are never open when the node is reachable by others or guards its API with
 * tokens (src/auth/cluster-secret.ts): a node that founds a cluster makes a secret in its data
 * dir, a node with seeds and no secret refuses to start and says why, and peers that share the
 * founder's secret form a cluster with tokens on.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { secretNeededBecause } from '../../src/auth/cluster-secret.js';
import { TestCluster } from '../helpers/cluster.js';
import { runCli, tempDir } from '../helpers/node-process.js';
import { waitFor } from '../helpers/wait.js';
import { tokenFile } from './helpers.js';
import { authorization } from './node.js';

describe('when node-to-node calls need a secret', () => {
  const none = { authTokensFile: '', listen: '127.0.0.1:8080', grpcAddr: '127.0.0.1:50051' };
  it.each([
    ['loopback listeners, no tokens', none, undefined],
    ['an IPv6 loopback listener', { ...none, listen: '[::1]:8080' }, undefined],
    ['an AuthTokensFile', { ...none, authTokensFile: '/etc/tokens.json' }, /AuthTokensFile/],
    ['the API on every interface', { ...none, listen: ':8080' }, /Listen :8080 is reachable beyond loopback/],
    ['the API on a host address', { ...none, listen: '198.18.0.1:8080' }, /Listen/],
    ['gRPC on every interface', { ...none, grpcAddr: '0.0.0.0:50051' }, /GrpcAddr/],
  ])('%s', (_what, config, reason) => {
    const because = secretNeededBecause(config);
    if (reason === undefined) expect(because).toBeUndefined();
    else expect(because).toMatch(reason);
  });
});

describe('start-up', () => {
  it('a node with tokens and seeds but no secret refuses to start (exit 2) and says what to set', async () => {
    const { path } = tokenFile();
    const r = await runCli(['serve', '--data-dir', join(tempDir(), 'data'), '--listen', '127.0.0.1:0', '--metrics-addr', '', '--grpc-addr', '127.0.0.1:0',
      '--auth-tokens-file', path, '--seed-nodes', '127.0.0.1:9']);
    expect(r.code).toBe(2);
    expect(r.stdout + r.stderr).toMatch(/node-to-node calls need a cluster secret: it has an AuthTokensFile.*ClusterSecret or ClusterSecretFile/);
  });

  it('a secret shorter than 16 characters is refused (exit 2)', async () => {
    const r = await runCli(['serve', '--data-dir', join(tempDir(), 'data'), '--listen', '127.0.0.1:0', '--metrics-addr', '', '--grpc-addr', '127.0.0.1:0', '--cluster-secret', 'short']);
    expect(r.code).toBe(2);
    expect(r.stdout + r.stderr).toMatch(/ClusterSecret must be 16 to 1024 printable ASCII characters/);
  });
});

describe('a cluster with tokens: the founder makes the secret, a peer joins with a copy', () => {
  let c: TestCluster;
  const { path } = tokenFile();
  afterAll(async () => {
    await c?.stopAll();
  });

  it('forms, the secret file is private and survives a restart, and user tokens do not open the data path', async () => {
    c = await TestCluster.start({
      size: 2,
      args: ['--auth-tokens-file', path],
      nodeArgs: (i, cluster) => (i === 0 ? [] : ['--cluster-secret-file', join(cluster.dataDirs[0]!, 'cluster-secret')]),
    });
    const file = join(c.dataDirs[0]!, 'cluster-secret');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const secret = readFileSync(file, 'utf8').trim();
    expect(secret.length).toBeGreaterThanOrEqual(32);
    expect(c.node(0).output()).toContain(`--cluster-secret-file`);

    const state = async (): Promise<string[]> => {
      const res = await fetch(`${c.url(0)}/v1/cluster/state`, { headers: authorization('admin') });
      const body = (await res.json()) as { nodes: { node_id: string; state: string }[] };
      return body.nodes.filter((n) => n.state === 'active').map((n) => n.node_id).sort();
    };
    await waitFor(async () => (await state()).length >= 2, { what: 'both nodes active on node-1', timeoutMs: 30_000, pollMs: 100 });
    expect(await state()).toStrictEqual(['node-1', 'node-2']);

    // A replica pushed with a user token (even admin) is refused; with the secret it is taken.
    const body = Buffer.from('x');
    for (const cred of ['read', 'write', 'admin'] as const) {
      const res = await fetch(`${c.url(1)}/internal/v1/replicas/${'3'.repeat(32)}`, { method: 'PUT', headers: { ...authorization(cred), 'x-blobstore-size': '1' }, body });
      expect(res.status, cred).toBe(401);
    }

    await c.stop(0);
    await c.startNode(0);
    expect(readFileSync(file, 'utf8').trim()).toBe(secret);
  });
});

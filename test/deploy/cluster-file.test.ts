/**
 * The cluster description (src/apps/hosts/cluster.ts) and `blobstore deploy --target`: a bad
 * description is a usage error (exit 2) that names the field; a good one renders each target's
 * files, or prints them with --dry-run and writes nothing.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type ClusterDescription, parseCluster, readClusterFile } from '../../src/apps/hosts/cluster.js';
import { ClusterFileError } from '../../src/apps/hosts/fields.js';
import { REPO, cli, loopbackDescription, tempDir, writeDescription } from './helpers.js';

const EXAMPLE = join(REPO, 'deploy/cluster.example.json');

const minimal = (): Record<string, unknown> => ({
  name: 'prod',
  secrets: { clusterSecretFile: '/etc/blobstore/cluster-secret' },
  nodes: [
    { id: 'a', host: '10.1.0.1', region: 'us-east-1', dataDir: '/var/lib/blobstore/a' },
    { id: 'b', host: '10.1.0.2', region: 'us-east-1', dataDir: '/var/lib/blobstore/b' },
  ],
});

const parseError = (description: unknown): string => {
  try {
    parseCluster(description);
  } catch (err) {
    expect(err).toBeInstanceOf(ClusterFileError);
    return (err as Error).message;
  }
  throw new Error('the description was accepted');
};

describe('the cluster description', () => {
  it('deploy/cluster.example.json is valid: 3 nodes in us-east-1 with secrets and TLS by file', () => {
    const cluster = readClusterFile(EXAMPLE);
    expect(cluster.name).toBe('prod');
    expect(cluster.nodes.map((n) => n.id)).toEqual(['blob-1', 'blob-2', 'blob-3']);
    expect(cluster.clusterSecretFile).toBe('/etc/blobstore/cluster-secret');
    expect(cluster.nodes.every((n) => n.tls?.certFile === '/etc/blobstore/tls/node.crt')).toBe(true);
  });

  it('fills defaults: ports 8080/50051/9090, bind 0.0.0.0, /usr/local/bin/blobstore, user blobstore, /etc/blobstore', () => {
    const cluster: ClusterDescription = parseCluster(minimal());
    expect(cluster.nodes[0]!.ports).toEqual({ api: 8080, grpc: 50051, metrics: 9090 });
    expect(cluster.nodes[0]!.bind).toBe('0.0.0.0');
    expect(cluster.command).toEqual(['/usr/local/bin/blobstore']);
    expect([cluster.user, cluster.group, cluster.configDir]).toEqual(['blobstore', 'blobstore', '/etc/blobstore']);
    expect(cluster.kubernetes.namespace).toBe('prod');
  });

  it('a node inherits the shared ports, TLS files and settings, and may override each', () => {
    const d = minimal();
    d.ports = { api: 9000, grpc: 9001, metrics: 9002 };
    d.tls = { certFile: '/etc/t/shared.crt', keyFile: '/etc/t/shared.key' };
    d.settings = { replicationAcks: 1, repairIntervalMs: '2m' };
    (d.nodes as Record<string, unknown>[])[1]!.ports = { api: 9100, grpc: 9101, metrics: 9102 };
    (d.nodes as Record<string, unknown>[])[1]!.tls = { certFile: '/etc/t/b.crt', keyFile: '/etc/t/b.key', caFile: '/etc/t/ca.crt' };
    (d.nodes as Record<string, unknown>[])[1]!.settings = { replicationAcks: 2 };
    const [a, b] = parseCluster(d).nodes;
    expect(a!.ports.api).toBe(9000);
    expect(b!.ports.api).toBe(9100);
    expect(a!.tls?.certFile).toBe('/etc/t/shared.crt');
    expect(b!.tls).toEqual({ certFile: '/etc/t/b.crt', keyFile: '/etc/t/b.key', caFile: '/etc/t/ca.crt' });
    expect(Object.fromEntries(a!.settings)).toEqual({ replicationAcks: '1', repairIntervalMs: '2m' });
    expect(Object.fromEntries(b!.settings)).toEqual({ replicationAcks: '2', repairIntervalMs: '2m' });
  });

  it('a node\'s tls names what it has of its own: one shared CA beside each node\'s certificate and key', () => {
    const d = minimal();
    d.tls = { caFile: '/etc/t/ca.crt' };
    (d.nodes as Record<string, unknown>[])[0]!.tls = { certFile: '/etc/t/a.crt', keyFile: '/etc/t/a.key' };
    (d.nodes as Record<string, unknown>[])[1]!.tls = { certFile: '/etc/t/b.crt', keyFile: '/etc/t/b.key', caFile: '/etc/t/other-ca.crt' };
    const cluster = parseCluster(d);
    expect(cluster.nodes[0]!.tls).toEqual({ certFile: '/etc/t/a.crt', keyFile: '/etc/t/a.key', caFile: '/etc/t/ca.crt' });
    expect(cluster.nodes[1]!.tls).toEqual({ certFile: '/etc/t/b.crt', keyFile: '/etc/t/b.key', caFile: '/etc/t/other-ca.crt' });
    expect(cluster.tls).toBeUndefined();
    // A node left with a CA and no certificate of its own or shared: named.
    delete (d.nodes as Record<string, unknown>[])[1]!.tls;
    expect(parseError(d)).toMatch(/^nodes\[1\]\.tls\.certFile must be an absolute path, in the node's tls or the shared one \(it is missing\)/);
  });

  it.each([
    ['no name', (d: Record<string, any>) => delete d.name, /^name must be a DNS label .*\(it is missing\)/],
    ['an upper-case name', (d: Record<string, any>) => (d.name = 'Prod'), /^name must be a DNS label/],
    ['no nodes', (d: Record<string, any>) => (d.nodes = []), /^nodes must be a non-empty array/],
    ['a misspelt field', (d: Record<string, any>) => (d.nodes[0].dataDri = '/x'), /^nodes\[0\]\.dataDri is not a field here; the fields are .*dataDir/],
    ['a relative data dir', (d: Record<string, any>) => (d.nodes[1].dataDir = 'data/b'), /^nodes\[1\]\.dataDir must be an absolute path/],
    ['/ as a data dir (the installation gives it to the node\'s user)', (d: Record<string, any>) => (d.nodes[0].dataDir = '/'), /^nodes\[0\]\.dataDir \/: a data dir is a directory of its own, at least two levels deep/],
    ['a data dir one level deep', (d: Record<string, any>) => (d.nodes[0].dataDir = '/var'), /^nodes\[0\]\.dataDir \/var: a data dir is a directory of its own/],
    ['a data dir in a system directory', (d: Record<string, any>) => (d.nodes[0].dataDir = '/usr/local/data'), /^nodes\[0\]\.dataDir \/usr\/local\/data: it lies in \/usr, a directory of the system/],
    ['a data dir around the config dir', (d: Record<string, any>) => ((d.configDir = '/srv/blobstore/etc'), (d.nodes[0].dataDir = '/srv/blobstore')), /^nodes\[0\]\.dataDir \/srv\/blobstore: it is or holds configDir/],
    ['the config dir as a data dir', (d: Record<string, any>) => ((d.configDir = '/srv/blobstore/etc'), (d.nodes[0].dataDir = '/srv/blobstore/etc')), /^nodes\[0\]\.dataDir \/srv\/blobstore\/etc: it is or holds configDir/],
    ['a data dir inside another on one host', (d: Record<string, any>) => ((d.nodes[1].host = d.nodes[0].host), (d.nodes[1].ports = { api: 9001, grpc: 9002, metrics: 9003 }), (d.nodes[1].dataDir = `${d.nodes[0].dataDir}/inner`)), /^nodes\[1\]\.dataDir .*\/inner: it lies in nodes\[0\]\.dataDir/],
    ['an unknown region', (d: Record<string, any>) => (d.nodes[0].region = 'mars-1'), /^nodes\[0\]\.region must be one of us-east-1, us-west-2, eu-central-1, not "mars-1"/],
    ['two nodes with one id', (d: Record<string, any>) => (d.nodes[1].id = 'a'), /^nodes\[1\] has the same id \(a\) as nodes\[0\]/],
    ['two nodes on one host and port', (d: Record<string, any>) => (d.nodes[1].host = '10.1.0.1'), /^nodes\[1\] has the same host and port \(10\.1\.0\.1:8080, api\) as nodes\[0\]/],
    ['a port out of range', (d: Record<string, any>) => (d.ports = { api: 70000 }), /^ports\.api must be an integer from 1 to 65535/],
    ['no cluster secret beyond loopback', (d: Record<string, any>) => delete d.secrets, /^secrets\.clusterSecretFile is required/],
    ['a secret by value', (d: Record<string, any>) => (d.settings = { clusterSecret: 's3cret' }), /^settings\.clusterSecret is set by the description's secrets\.clusterSecretFile/],
    ['a setting the description owns', (d: Record<string, any>) => (d.nodes[0].settings = { listen: '1.2.3.4:1' }), /^nodes\[0\]\.settings\.listen is set by the description's bind and ports/],
    ['a bad setting value', (d: Record<string, any>) => (d.settings = { replicationAcks: 9 }), /setting replicationAcks \(from settings\.replicationAcks\): expected at most 2/],
    ['an unknown setting', (d: Record<string, any>) => (d.settings = { replicationAckz: 1 }), /^settings\.replicationAckz is not a field here; settings take the keys of src\/config\/settings\.ts/],
    ['a relative command', (d: Record<string, any>) => (d.command = ['blobstore']), /^command must be an array whose first word is an absolute path/],
    ['a bad storage size', (d: Record<string, any>) => (d.kubernetes = { storageSize: 'lots' }), /^kubernetes\.storageSize must be a Kubernetes quantity/],
  ])('refuses %s, naming the field', (_what, change, message) => {
    const d = minimal();
    change(d);
    expect(parseError(d)).toMatch(message);
  });

  it('needs no cluster secret when every node is on loopback', () => {
    const d = minimal();
    delete d.secrets;
    d.bind = '127.0.0.1';
    for (const [i, n] of (d.nodes as Record<string, unknown>[]).entries()) n.host = `127.0.0.${i + 1}`;
    expect(parseCluster(d).clusterSecretFile).toBeUndefined();
  });
});

describe('deploy --target', () => {
  it('writes the systemd files of the region\'s nodes into --out and lists them', () => {
    const out = tempDir('blobstore-render-');
    const r = cli(['deploy', 'prod', '--region', 'us-east-1', '--target', 'systemd', '--cluster', EXAMPLE, '--out', out]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const files = ['blob-1.env', 'blob-2.env', 'blob-3.env', 'blobstore-blob-1.service', 'blobstore-blob-2.service', 'blobstore-blob-3.service'];
    expect(readdirSync(out).sort()).toEqual(files);
    for (const f of files) expect(r.stdout).toContain(`  ${f}\n`);
  });

  it('writes the container env files and executable run scripts', () => {
    const out = tempDir('blobstore-render-');
    expect(cli(['deploy', 'prod', '--region', 'us-east-1', '--target', 'container', '--cluster', EXAMPLE, '--out', out]).status).toBe(0);
    expect(readdirSync(out).sort()).toEqual(['blob-1.env', 'blob-2.env', 'blob-3.env', 'run-blob-1.sh', 'run-blob-2.sh', 'run-blob-3.sh']);
    expect(statSync(join(out, 'run-blob-1.sh')).mode & 0o777).toBe(0o755);
  });

  it('--dry-run prints every file it would write and writes none', () => {
    const out = join(tempDir('blobstore-render-'), 'out');
    const r = cli(['deploy', 'prod', '--region', 'us-east-1', '--target', 'kubernetes', '--cluster', EXAMPLE, '--out', out, '--dry-run']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^deploy prod to us-east-1 --target kubernetes: dry run, would write 1 file into /);
    expect(r.stdout).toContain('=== blobstore.yaml (mode 644)\n');
    expect(r.stdout).toContain('kind: StatefulSet');
    expect(existsSync(out)).toBe(false);
  });

  it('renders only the nodes of --region, with every node of the cluster as seeds', async () => {
    const d = await loopbackDescription(3);
    (d.nodes as Record<string, unknown>[])[2]!.region = 'eu-central-1';
    const out = tempDir('blobstore-render-');
    expect(cli(['deploy', 'local', '--region', 'eu-central-1', '--target', 'systemd', '--cluster', writeDescription(d), '--out', out]).status).toBe(0);
    expect(readdirSync(out).sort()).toEqual(['blobstore-node-3.service', 'node-3.env']);
    const seeds = /^BLOBSTORE_SEED_NODES=(.*)$/m.exec(readFileSync(join(out, 'node-3.env'), 'utf8'))![1]!.split(',');
    expect(seeds).toHaveLength(3);
  });

  it.each([
    [['--target', 'systemd', '--out', '/tmp/x'], /^blobstore: --target systemd needs --cluster FILE/],
    [['--target', 'systemd', '--cluster', EXAMPLE], /^blobstore: --target systemd needs --out DIR/],
    [['--cluster', EXAMPLE, '--out', '/tmp/x'], /^blobstore: --cluster and --out go with --target/],
    [['--target', 'ansible', '--cluster', EXAMPLE], /argument 'ansible' is invalid. Allowed choices are local, systemd, container, kubernetes/],
    [['--target', 'systemd', '--cluster', '/nonexistent/cluster.json', '--out', '/tmp/x'], /^blobstore: cannot read cluster file \/nonexistent\/cluster.json: ENOENT/],
  ])('deploy prod --region us-east-1 %j is a usage error (exit 2)', (args, message) => {
    const r = cli(['deploy', 'prod', '--region', 'us-east-1', ...args]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it('a description of another cluster, or without nodes in the region, is a usage error', () => {
    let r = cli(['deploy', 'staging', '--region', 'us-east-1', '--target', 'systemd', '--cluster', EXAMPLE, '--dry-run']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('describes cluster "prod", not "staging"');
    r = cli(['deploy', 'prod', '--region', 'us-west-2', '--target', 'systemd', '--cluster', EXAMPLE, '--dry-run']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('blobstore: cluster prod has no node in us-west-2; its regions: us-east-1\n');
  });

  it('a bad description names the file and the field (exit 2)', () => {
    const d = minimal();
    (d.nodes as Record<string, unknown>[])[0]!.dataDir = 'relative';
    const file = writeDescription(d);
    const r = cli(['deploy', 'prod', '--region', 'us-east-1', '--target', 'systemd', '--cluster', file, '--dry-run']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`blobstore: cluster file ${file}: nodes[0].dataDir must be an absolute path without spaces or quotes, not "relative"\n`);
  });

  it('without --target, deploy --dry-run is the local plan, as before', () => {
    const r = cli(['deploy', 'dev', '--region', 'us-east-1', '--dry-run']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^deploy dev to us-east-1: dry run, nothing is started, stopped or written\nSERVICE/);
  });
});

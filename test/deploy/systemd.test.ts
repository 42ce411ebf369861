/**
 * The systemd target: hardened units that systemd's own checker accepts (`systemd-analyze verify`
 * and its offline security review, Debian's systemd), env files in the BLOBSTORE_* names, and
 * nodes started exactly as their units say forming one cluster.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseCluster, readClusterFile } from '../../src/apps/hosts/cluster.js';
import { renderSystemd, renderedUnitCommand, unitCommand } from '../../src/apps/hosts/systemd.js';
import { SETTINGS, envName } from '../../src/config/settings.js';
import { MAIN, REPO, type Started, allHealthy, loopbackDescription, oneCluster, startProcess, tempDir } from './helpers.js';
import { waitFor } from '../helpers/wait.js';

const SYSTEMD_ANALYZE = '/usr/bin/systemd-analyze';
const hasSystemdAnalyze = existsSync(SYSTEMD_ANALYZE);
if (!hasSystemdAnalyze) console.warn(`systemd unit checks skipped: ${SYSTEMD_ANALYZE} is missing (apt-get install systemd)`);

/** The example description with an ExecStart that exists here (verify checks the program). */
function exampleCluster() {
  const raw = JSON.parse(readFileSync(join(REPO, 'deploy/cluster.example.json'), 'utf8')) as Record<string, unknown>;
  return parseCluster({ ...raw, command: [process.execPath, MAIN] });
}

function renderInto(files: { path: string; text: string }[]): string {
  const dir = tempDir('blobstore-units-');
  for (const f of files) writeFileSync(join(dir, f.path), f.text);
  return dir;
}

/** Key=value lines of a unit, by key (a key given twice keeps both). */
function unitKeys(text: string): Map<string, string[]> {
  const keys = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (m) keys.set(m[1]!, [...(keys.get(m[1]!) ?? []), m[2]!]);
  }
  return keys;
}

describe('systemd units', () => {
  const cluster = exampleCluster();
  const files = renderSystemd(cluster, cluster.nodes);
  const dir = renderInto(files);

  it('are one unit and one env file per node', () => {
    expect(files.map((f) => f.path)).toEqual(['blobstore-blob-1.service', 'blob-1.env', 'blobstore-blob-2.service', 'blob-2.env', 'blobstore-blob-3.service', 'blob-3.env']);
  });

  it.skipIf(!hasSystemdAnalyze)('pass systemd-analyze verify with no warning', () => {
    for (const unit of files.filter((f) => f.path.endsWith('.service'))) {
      const r = spawnSync(SYSTEMD_ANALYZE, ['verify', join(dir, unit.path)], { encoding: 'utf8' });
      expect(r.stderr, unit.path).toBe('');
      expect(r.status, unit.path).toBe(0);
    }
  });

  it.skipIf(!hasSystemdAnalyze)('rate "OK" in systemd-analyze security --offline (exposure at most 2.0 of 10)', () => {
    const r = spawnSync(SYSTEMD_ANALYZE, ['security', '--offline=true', '--no-pager', join(dir, 'blobstore-blob-1.service')], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const m = /Overall exposure level for blobstore-blob-1\.service: ([\d.]+) (\w+)/.exec(r.stdout);
    expect(m, r.stdout).not.toBeNull();
    expect(Number(m![1]), r.stdout).toBeLessThanOrEqual(2.0);
    expect(m![2]).toBe('OK');
  });

  it('are hardened: dedicated user, read-only system but the data dir, no new privileges, restart on failure', () => {
    const keys = unitKeys(files[0]!.text);
    const one = (key: string): string | undefined => keys.get(key)?.[0];
    expect(one('Type')).toBe('simple');
    expect([one('User'), one('Group')]).toEqual(['blobstore', 'blobstore']);
    expect(one('ProtectSystem')).toBe('strict');
    expect(one('ReadWritePaths')).toBe('/var/lib/blobstore/blob-1');
    expect(one('StateDirectory')).toBe('blobstore/blob-1');
    for (const key of ['NoNewPrivileges', 'PrivateTmp', 'ProtectHome', 'PrivateDevices']) expect(one(key), key).toBe('yes');
    expect(one('CapabilityBoundingSet')).toBe('');
    expect(one('LimitNOFILE')).toBe('1048576');
    expect(one('Restart')).toBe('on-failure');
    expect(one('EnvironmentFile')).toBe('/etc/blobstore/blob-1.env');
    expect(one('ExecStart')).toBe(`${process.execPath} ${MAIN} serve`);
    expect(one('ExecStartPost')).toBe(`${process.execPath} ${MAIN} healthcheck --up --wait 60`);
    expect(one('WantedBy')).toBe('multi-user.target');
  });

  it("wait longer to stop than the node's shutdownTimeoutMs", () => {
    const d = JSON.parse(readFileSync(join(REPO, 'deploy/cluster.example.json'), 'utf8')) as Record<string, unknown>;
    for (const [setting, seconds] of [['10s', 30], ['45s', 65], [90_000, 110]] as const) {
      const c = parseCluster({ ...d, settings: { shutdownTimeoutMs: setting } });
      expect(unitKeys(renderSystemd(c, c.nodes)[0]!.text).get('TimeoutStopSec')).toEqual([`${seconds}s`]);
    }
    expect(SETTINGS.shutdownTimeoutMs.default()).toBe(10_000);
  });

  it('take CAP_NET_BIND_SERVICE only when a node listens below port 1024', () => {
    const d = JSON.parse(readFileSync(join(REPO, 'deploy/cluster.example.json'), 'utf8')) as Record<string, unknown>;
    const c = parseCluster({ ...d, ports: { api: 443, grpc: 50051, metrics: 9090 } });
    const keys = unitKeys(renderSystemd(c, c.nodes)[0]!.text);
    expect(keys.get('CapabilityBoundingSet')).toEqual(['CAP_NET_BIND_SERVICE']);
    expect(keys.get('AmbientCapabilities')).toEqual(['CAP_NET_BIND_SERVICE']);
  });

  it("env files hold each node's settings under their BLOBSTORE_* names, secrets and TLS by path only", () => {
    const env = unitCommand(files[0]!.text, () => files[1]!.text).env;
    expect(env).toEqual({
      [envName('nodeId')]: 'blob-1',
      [envName('region')]: 'us-east-1',
      [envName('dataDir')]: '/var/lib/blobstore/blob-1',
      [envName('listen')]: '0.0.0.0:8080',
      [envName('advertiseAddr')]: 'blob-1.example.internal:8080',
      [envName('grpcAddr')]: '0.0.0.0:50051',
      [envName('metricsAddr')]: '0.0.0.0:9090',
      [envName('seedNodes')]: 'blob-1.example.internal:8080,blob-2.example.internal:8080,blob-3.example.internal:8080',
      [envName('clusterSecretFile')]: '/etc/blobstore/cluster-secret',
      [envName('authTokensFile')]: '/etc/blobstore/tokens.json',
      [envName('tlsCert')]: '/etc/blobstore/tls/node.crt',
      [envName('tlsKey')]: '/etc/blobstore/tls/node.key',
      [envName('tlsCa')]: '/etc/blobstore/tls/ca.crt',
      [envName('logFormat')]: 'json',
      [envName('replicationAcks')]: '1',
      [envName('shutdownTimeoutMs')]: '10s',
      BLOBSTORE_CONFIG: '/etc/blobstore/config.json',
    });
    expect(Object.keys(env).every((k) => k.startsWith('BLOBSTORE_'))).toBe(true);
  });
});

describe('unitCommand: how a unit starts its node', () => {
  it('splits ExecStart into words with systemd quoting and reads the EnvironmentFile', () => {
    const unit = [
      '[Unit]', 'Description=x', 'ExecStart=/not/this', '', '[Service]', 'Environment="A=one two" B=2',
      'EnvironmentFile=/etc/x/n.env', 'EnvironmentFile=-/etc/x/missing.env',
      `ExecStart=-/usr/bin/node "/opt/my app/main.js" 'single quoted' serve \\`, '  --flag=${B} $WORDS',
    ].join('\n');
    const read = (path: string): string => {
      if (path === '/etc/x/n.env') return '# comment\n\nC="quoted \\"value\\""\nWORDS=x y\nD=\'raw $x\'\n';
      throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
    };
    expect(unitCommand(unit, read)).toEqual({
      argv: ['/usr/bin/node', '/opt/my app/main.js', 'single quoted', 'serve', '--flag=2', 'x', 'y'],
      env: { A: 'one two', B: '2', C: 'quoted "value"', WORDS: 'x y', D: 'raw $x' },
    });
  });

  it('fails on a missing EnvironmentFile without "-", and on a unit without ExecStart', () => {
    const missing = (): string => {
      throw new Error('ENOENT: /etc/x/n.env');
    };
    expect(() => unitCommand('[Service]\nEnvironmentFile=/etc/x/n.env\nExecStart=/bin/true\n', missing)).toThrow(/ENOENT/);
    expect(() => unitCommand('[Service]\nType=simple\n', missing)).toThrow(/exactly one ExecStart=, it has 0/);
  });

  it('reads back a rendered unit: the command line and the env file as written', () => {
    const cluster = exampleCluster();
    const dir = renderInto(renderSystemd(cluster, cluster.nodes));
    const started = renderedUnitCommand(dir, 'blob-2');
    expect(started.argv).toEqual([process.execPath, MAIN, 'serve']);
    expect(started.env[envName('nodeId')]).toBe('blob-2');
  });
});

describe('nodes started as their units say', () => {
  const nodes: Started[] = [];
  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
  });

  it('form one cluster, every /healthz answering 200', async () => {
    const description = await loopbackDescription(3);
    const cluster = parseCluster(description);
    const dir = renderInto(renderSystemd(cluster, cluster.nodes));
    for (const node of cluster.nodes) {
      mkdirSync(node.dataDir, { recursive: true }); // systemd's StateDirectory= or the operator makes it
      const { argv, env } = renderedUnitCommand(dir, node.id);
      nodes.push(startProcess(argv, env));
    }
    const urls = cluster.nodes.map((n) => `http://${n.host}:${n.ports.api}`);
    const ids = cluster.nodes.map((n) => n.id);
    try {
      await waitFor(async () => (await allHealthy(urls)) && oneCluster(urls, ids), { what: 'three healthy nodes in one cluster', timeoutMs: 45_000 });
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${nodes.map((n) => n.output().slice(-2000)).join('\n---\n')}`);
    }
  });
});

describe('the example description', () => {
  it('renders for systemd from deploy/cluster.example.json', () => {
    const cluster = readClusterFile(join(REPO, 'deploy/cluster.example.json'));
    expect(renderSystemd(cluster, cluster.nodes)[0]!.text).toContain('ExecStart=/usr/local/bin/blobstore serve\n');
  });
});

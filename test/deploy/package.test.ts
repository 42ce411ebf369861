/**
 * Installing on a host without the repository: `npm pack` gives a package that holds the built
 * code, the .proto files and the native addon and nothing else; `npm install --global` of it, with
 * no network (a loopback stand-in for the registry, every tarball from npm's cache), gives a
 * `blobstore` command that serves. Then the image: deploy/Containerfile built with podman from
 * that installed package on a base assembled from this host's node, and a 3-node cluster started
 * from it exactly as the container target's run scripts say. Where podman is missing or cannot
 * run containers here, those tests say why and skip.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCluster } from '../../src/apps/hosts/cluster.js';
import { containerName, podmanRunArgs, renderContainer } from '../../src/apps/hosts/container.js';
import { DATA_DIR, IMAGE_PREFIX, IMAGE_UID } from '../../src/apps/hosts/image.js';
import { freePort } from '../helpers/cluster.js';
import { REPO, allHealthy, loopbackDescription, oneCluster, startProcess, statusOf, tempDir } from './helpers.js';
import { type Registry, startRegistry } from './npm-registry.js';
import { waitFor } from '../helpers/wait.js';

const VERSION = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
const run = (cmd: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeout?: number } = {}) =>
  spawnSync(cmd, args, { encoding: 'utf8', timeout: options.timeout ?? 120_000, cwd: options.cwd, env: options.env ?? process.env, maxBuffer: 64 * 1024 * 1024 });

function runAsync(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** The installed package: <prefix>/bin/blobstore and <prefix>/lib/node_modules/blobstore. */
let prefix: string | undefined;
let tarball: string;

describe('npm pack', () => {
  let registry: Registry;
  beforeAll(async () => {
    const dir = tempDir('blobstore-pack-');
    const r = run('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: REPO });
    expect(r.status, r.stderr).toBe(0);
    tarball = join(dir, r.stdout.trim().split('\n').pop()!);
    registry = await startRegistry(REPO);
  });
  afterAll(() => registry?.close());

  it('holds dist/src, the .proto files, the native addon and package.json: no tests, sources, maps or data', () => {
    const files = run('tar', ['tzf', tarball]).stdout.trim().split('\n').map((f) => f.replace(/^package\//, ''));
    expect(files).toContain('package.json');
    expect(files).toContain('dist/src/main.js');
    expect(files).toContain('native/build/Release/blobstore_ec.node');
    expect(files).toContain('src/proto/blobstore/v1/blob.proto');
    const unexpected = files.filter((f) => !/^(package\.json|README\.md|dist\/src\/.*\.(js|d\.ts)|src\/proto\/.*\.proto|native\/build\/Release\/blobstore_ec\.node)$/.test(f));
    expect(unexpected).toEqual([]);
  });

  it('installs the blobstore command with npm install --global, without network', async () => {
    const into = tempDir('blobstore-prefix-');
    // Proxies at a closed loopback port: a request meant for the internet fails instead of leaving.
    const env = {
      ...process.env, npm_config_proxy: 'http://127.0.0.1:9', npm_config_https_proxy: 'http://127.0.0.1:9', npm_config_noproxy: '127.0.0.1',
      npm_config_registry: registry.url, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false',
    };
    // Not spawnSync: the registry answers from this process' event loop.
    const r = await runAsync('npm', ['install', '--global', '--prefer-offline', '--prefix', into, tarball], env, 240_000);
    expect(registry.missing, 'packages the lockfile does not name').toEqual([]);
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(existsSync(join(into, 'bin', 'blobstore'))).toBe(true);
    prefix = into;
  }, 300_000);

  it('blobstore --version names the version and Node', () => {
    expect(prefix, 'the install test ran').toBeDefined();
    const r = run(join(prefix!, 'bin', 'blobstore'), ['--version']);
    expect(r.stdout).toBe(`blobstore ${VERSION} (Node.js ${process.version})\n`);
  });

  it('the shipped native addon loads from the installed package', () => {
    const addon = join(prefix!, 'lib/node_modules/blobstore/native/build/Release/blobstore_ec.node');
    const r = run(process.execPath, ['-e', `console.log(typeof require(${JSON.stringify(addon)}).encode)`]);
    expect(r.stdout.trim(), r.stderr).toBe('function');
  });

  it('blobstore serve answers /healthz 200, and blobstore healthcheck says so', async () => {
    const port = await freePort();
    const home = tempDir('blobstore-home-');
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('BLOBSTORE_'))) as Record<string, string>;
    const env = { ...clean, HOME: home, XDG_CONFIG_HOME: join(home, 'config'), XDG_DATA_HOME: join(home, 'data') };
    const node = startProcess([join(prefix!, 'bin', 'blobstore'), 'serve', '--data-dir', join(home, 'data'), '--listen', `127.0.0.1:${port}`, '--metrics-addr', '', '--grpc-addr', ''], env);
    try {
      await waitFor(async () => (await statusOf(`http://127.0.0.1:${port}/healthz`)) === 200, { what: '/healthz 200', timeoutMs: 30_000 });
      const r = run(join(prefix!, 'bin', 'blobstore'), ['healthcheck'], { env: { ...env, BLOBSTORE_LISTEN: `127.0.0.1:${port}` } });
      expect(r.stdout).toBe(`http://127.0.0.1:${port}/healthz answered 200\n`);
      expect(r.status).toBe(0);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${node.output()}`);
    } finally {
      await node.stop();
    }
  });
});

const CONTAINERFILE = readFileSync(join(REPO, 'deploy/Containerfile'), 'utf8');

describe('deploy/Containerfile', () => {
  const lines = CONTAINERFILE.split('\n').filter((l) => !l.startsWith('#'));
  const finalStage = lines.slice(lines.findLastIndex((l) => l.startsWith('FROM '))).join('\n');

  it('runs as the non-root user the targets expect, with the data dir a volume', () => {
    expect(finalStage).toContain(`USER ${IMAGE_UID}:${IMAGE_UID}\n`);
    expect(finalStage).toContain(`VOLUME ["${DATA_DIR}"]\n`);
    expect(finalStage).toContain(`--chown=${IMAGE_UID}:${IMAGE_UID} /out/var/lib/blobstore ${DATA_DIR}\n`);
    expect(finalStage).toContain(`BLOBSTORE_DATA_DIR=${DATA_DIR}`);
  });

  it('checks its health on /healthz (blobstore healthcheck) and exposes the API, metrics and gRPC ports', () => {
    expect(finalStage).toMatch(/HEALTHCHECK .*\\\n\s+CMD \["node", ".*\/main\.js", "healthcheck"\]/);
    expect(finalStage).toContain('EXPOSE 8080 9090 50051\n');
    expect(finalStage).toContain(`ENTRYPOINT ["node", "${IMAGE_PREFIX}/lib/node_modules/blobstore/dist/src/main.js"]`);
  });

  it('builds in stages: from source by default, or from an installed package', () => {
    expect(lines.filter((l) => l.startsWith('FROM ')).map((l) => l.replace(/\s+/g, ' '))).toEqual([
      'FROM ${BUILDER_IMAGE} AS source', 'FROM scratch AS prebuilt', 'FROM ${INSTALL_FROM} AS installed', 'FROM ${RUNTIME_IMAGE}',
    ]);
  });
});

/**
 * Whether podman can build and run here, and how: the OCI runtime that works (crun refuses a
 * host with cgroups v1 and v2 mounted side by side, runc copes), and the ulimits it may set (a
 * sandbox without CAP_SYS_RESOURCE cannot raise limits to podman's defaults).
 */
interface Podman {
  readonly reason?: string;
  readonly global: string[];
  readonly limits: string[];
  readonly base: string;
}

function probePodman(): Podman {
  const none = (reason: string): Podman => ({ reason, global: [], limits: [], base: '' });
  if (run('podman', ['--version']).status !== 0) return none('podman is not installed (apt-get install podman runc)');
  if (process.getuid?.() !== 0) return none('the image test runs rootful podman: it needs root');
  const base = 'localhost/blobstore-test-base:node20';
  const importError = importBase(base);
  if (importError) return none(`cannot import a base image: ${importError}`);
  const nofile = run('sh', ['-c', 'ulimit -n']).stdout.trim();
  const limits = ['--ulimit', `nofile=${nofile}:${nofile}`, '--ulimit', 'nproc=4096:4096'];
  let last = '';
  for (const global of [[], ['--runtime', 'runc']]) {
    if (global.length > 0 && run('sh', ['-c', 'command -v runc']).status !== 0) continue;
    const r = run('podman', [...global, 'run', '--rm', ...limits, base, 'node', '-e', 'process.stdout.write("ok")'], { timeout: 60_000 });
    if (r.stdout === 'ok') return { global, limits, base };
    last = r.stderr.trim().split('\n').pop() ?? '';
  }
  return none(`podman cannot run a container here: ${last}`);
}

/**
 * A base image without a registry: this host's node and the shared libraries it and the
 * package's native addons need (ldd), node at /usr/local/bin as in the node images.
 */
function importBase(tag: string): string | undefined {
  const root = tempDir('blobstore-base-');
  mkdirSync(join(root, 'usr/local/bin'), { recursive: true });
  mkdirSync(join(root, 'tmp'), { mode: 0o1777 });
  cpSync(process.execPath, join(root, 'usr/local/bin/node'));
  const addons = run('find', [REPO + '/node_modules', REPO + '/native/build/Release', '-name', '*.node']).stdout.trim().split('\n').filter(Boolean);
  const libs = new Set<string>();
  for (const file of [process.execPath, ...addons]) {
    for (const m of run('ldd', [file]).stdout.matchAll(/(\/[^\s:]+\.so[.\d]*)/g)) libs.add(m[1]!);
  }
  for (const lib of libs) {
    if (!existsSync(lib)) continue;
    mkdirSync(join(root, dirname(lib)), { recursive: true });
    cpSync(lib, join(root, lib), { dereference: true });
  }
  const tar = join(tempDir('blobstore-base-tar-'), 'base.tar');
  const t = run('tar', ['-C', root, '-cf', tar, '.']);
  if (t.status !== 0) return t.stderr;
  const r = run('podman', ['import', tar, tag]);
  return r.status === 0 ? undefined : r.stderr.trim();
}

/** A port below 1024 nothing listens on (the test runs as root, so it may probe one). */
async function freeLowPort(): Promise<number> {
  for (let port = 1023; port >= 600; port--) {
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer().once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port between 600 and 1023');
}

const podman = probePodman();
if (podman.reason) console.warn(`container image tests skipped: ${podman.reason}`);

describe('the container image', () => {
  const tag = `localhost/blobstore-test:${process.pid}`;
  const started: string[] = [];
  /** Images of the build's stages (the prebuilt one holds the package): removed with the image. */
  const stages: string[] = [];
  afterAll(() => {
    if (started.length > 0) run('podman', [...podman.global, 'rm', '--force', '--time', '5', ...started]);
    if (podman.reason === undefined) run('podman', ['rmi', '--force', '--ignore', tag, podman.base, ...stages]);
  });

  it.skipIf(podman.reason !== undefined)('builds from the installed package with podman (INSTALL_FROM=prebuilt)', (ctx) => {
    if (!prefix) return ctx.skip();
    const context = tempDir('blobstore-image-context-');
    cpSync(prefix, join(context, 'out', 'opt', 'blobstore'), { recursive: true, verbatimSymlinks: true });
    mkdirSync(join(context, 'out', 'var', 'lib', 'blobstore'), { recursive: true });
    const r = run('podman', [
      ...podman.global, 'build', '--format', 'docker', '--build-arg', 'INSTALL_FROM=prebuilt', '--build-arg', `RUNTIME_IMAGE=${podman.base}`,
      '-f', join(REPO, 'deploy/Containerfile'), '-t', tag, context,
    ], { timeout: 300_000 });
    stages.push(...[...`${r.stdout}\n${r.stderr}`.matchAll(/^--> ([0-9a-f]{10,64})$/gm)].map((m) => m[1]!));
    expect(r.status, r.stderr.slice(-3000)).toBe(0);
    type Inspected = { Config: { User: string; Volumes: Record<string, unknown> }; Healthcheck?: { Test: string[] } };
    const [image] = JSON.parse(run('podman', ['image', 'inspect', tag]).stdout) as Inspected[];
    expect(image!.Config.User).toBe(`${IMAGE_UID}:${IMAGE_UID}`);
    expect(Object.keys(image!.Config.Volumes)).toEqual([DATA_DIR]);
    expect(image!.Healthcheck?.Test.at(-1), 'HEALTHCHECK kept (--format docker)').toBe('healthcheck');
  }, 320_000);

  it.skipIf(podman.reason !== undefined)('runs a 3-node cluster as the container target renders it, healthy as non-root', async (ctx) => {
    if (run('podman', ['image', 'exists', tag]).status !== 0) return ctx.skip();
    const suffix = String(process.pid);
    const description = await loopbackDescription(3, { name: 'img', image: tag });
    for (const [i, n] of (description.nodes as Record<string, unknown>[]).entries()) n.id = `img${suffix}-${i + 1}`;
    // The first node serves its metrics below port 1024, which the image's user may not bind by itself.
    const lowPort = await freeLowPort();
    ((description.nodes as Record<string, Record<string, number>>[])[0]!.ports!).metrics = lowPort;
    const cluster = parseCluster(description);
    const dir = tempDir('blobstore-container-');
    for (const f of renderContainer(cluster, cluster.nodes)) writeFileSync(join(dir, f.path), f.text, { mode: f.mode });
    expect(readdirSync(dir)).toHaveLength(6);
    for (const node of cluster.nodes) {
      mkdirSync(node.dataDir, { recursive: true });
      chownSync(node.dataDir, IMAGE_UID, IMAGE_UID); // what run-<id>.sh does with install -d
      const [verb, ...rest] = podmanRunArgs(cluster, node, join(dir, `${node.id}.env`));
      const r = run('podman', [...podman.global, verb!, ...podman.limits, ...rest], { timeout: 60_000 });
      expect(r.status, r.stderr).toBe(0);
      started.push(containerName(node));
    }
    const urls = cluster.nodes.map((n) => `http://127.0.0.1:${n.ports.api}`);
    const ids = cluster.nodes.map((n) => n.id);
    try {
      await waitFor(async () => (await allHealthy(urls)) && oneCluster(urls, ids), { what: 'three healthy containers in one cluster', timeoutMs: 60_000 });
    } catch (err) {
      const out = started.map((name) => {
        const logs = run('podman', [...podman.global, 'logs', '--tail', '20', name]);
        return `${name}:\n${logs.stdout}${logs.stderr}`;
      });
      throw new Error(`${(err as Error).message}\n${out.join('\n---\n')}`);
    }
    const uid = run('podman', [...podman.global, 'exec', started[0]!, 'node', '-e', 'process.stdout.write(String(process.getuid()))']);
    expect(uid.stdout).toBe(String(IMAGE_UID));
    const health = run('podman', [...podman.global, 'healthcheck', 'run', started[0]!]);
    expect(health.status, `${health.stdout}${health.stderr}`).toBe(0);
    expect(await statusOf(`http://127.0.0.1:${lowPort}/metrics`)).toBe(200);
  }, 180_000);
});

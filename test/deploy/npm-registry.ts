/**
 * A stand-in for the npm registry on loopback, for installing the packed blobstore with no
 * network: it answers each package's metadata (a packument) with the versions package-lock.json
 * names, and points their tarballs at the registry addresses `npm ci` fetched them from, which
 * npm's cache holds. So `npm install --global` resolves the package's dependencies the ordinary
 * way and takes every tarball from the cache.
 *
 * Why not `npm install --offline` alone: a global install resolves the dependencies' version
 * ranges through their packuments, and `npm ci` (which installs from the lockfile) caches
 * tarballs only, so that fails with ENOTCACHED on the first dependency.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import { join } from 'node:path';

interface LockEntry {
  name?: string;
  version: string;
  resolved?: string;
  integrity?: string;
  link?: boolean;
  [field: string]: unknown;
}

/** Fields of a lockfile entry that the version's metadata carries over. */
const CARRIED = ['dependencies', 'optionalDependencies', 'peerDependencies', 'peerDependenciesMeta', 'os', 'cpu', 'libc', 'engines', 'bin', 'hasInstallScript'];
/** Where `npm ci` fetched the tarballs from: the registry npm is configured with. */
function configuredRegistry(): string {
  const r = spawnSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8' });
  return (r.status === 0 && r.stdout.trim() ? r.stdout.trim() : 'https://registry.npmjs.org/').replace(/\/+$/, '');
}

export function packuments(repo: string): Map<string, Record<string, unknown>> {
  const lock = JSON.parse(readFileSync(join(repo, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const docs = new Map<string, { name: string; 'dist-tags': Record<string, string>; versions: Record<string, unknown> }>();
  const registry = configuredRegistry();
  for (const [path, entry] of Object.entries(lock.packages)) {
    const at = path.lastIndexOf('node_modules/');
    if (at < 0 || entry.link) continue;
    const name = entry.name ?? path.slice(at + 'node_modules/'.length);
    const tarball = entry.resolved ?? `${registry}/${name}/-/${name.split('/').pop()}-${entry.version}.tgz`;
    const version: Record<string, unknown> = { name, version: entry.version, dist: { tarball, integrity: entry.integrity } };
    for (const field of CARRIED) if (entry[field] !== undefined) version[field] = entry[field];
    const doc = docs.get(name) ?? { name, 'dist-tags': {}, versions: {} };
    doc.versions[entry.version] = version;
    doc['dist-tags'].latest = entry.version;
    docs.set(name, doc);
  }
  return docs as Map<string, Record<string, unknown>>;
}

export interface Registry {
  readonly url: string;
  /** The packages asked for that it does not know. */
  readonly missing: string[];
  close(): Promise<void>;
}

export async function startRegistry(repo: string): Promise<Registry> {
  const docs = packuments(repo);
  const missing: string[] = [];
  const server: Server = createServer((req, res) => {
    const name = decodeURIComponent((req.url ?? '/').slice(1).split('?')[0]!);
    const doc = docs.get(name);
    if (!doc) missing.push(name);
    res.writeHead(doc ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(doc ?? { error: 'not found' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/`, missing, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

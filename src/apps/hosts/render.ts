import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Region } from '../stack/settings.js';
import { usageError } from '../../cli/errors.js';
import { print } from '../../cli/output.js';
import { packageVersion } from '../../version.js';
import { type ClusterDescription, nodesIn, readClusterFile } from './cluster.js';
import { renderContainer } from './container.js';
import { ClusterFileError } from './fields.js';
import { renderKubernetes } from './kubernetes.js';
import type { RenderedFile } from './rendered.js';
import { renderSystemd } from './systemd.js';

/**
 * `blobstore deploy <stack> --region <r> --target <t> --cluster <file> --out <dir> [--dry-run]`:
 * renders what installing the cluster's nodes of that region takes, from the description in
 * <file>, whose name must be <stack>. It writes files and nothing else: installing them is the
 * operator's step (docs/install.md).
 */

export const TARGETS = ['local', 'systemd', 'container', 'kubernetes'] as const;
export type Target = (typeof TARGETS)[number];
export type RenderTarget = Exclude<Target, 'local'>;

export function renderTarget(target: RenderTarget, cluster: ClusterDescription, region: Region): RenderedFile[] {
  const nodes = nodesIn(cluster, region);
  switch (target) {
    case 'systemd':
      return renderSystemd(cluster, nodes);
    case 'container':
      return renderContainer(cluster, nodes);
    case 'kubernetes':
      return renderKubernetes(cluster, region, nodes);
  }
}

export interface RenderOptions {
  readonly cluster?: string;
  readonly out?: string;
  readonly dryRun?: boolean;
}

/** Loads the description (a bad one is exit 2), renders, and writes or, with --dry-run, prints. */
export function deployTarget(stack: string, region: Region, target: RenderTarget, options: RenderOptions): void {
  if (!options.cluster) throw usageError(`--target ${target} needs --cluster FILE: the cluster description to render (deploy/cluster.example.json is one)`);
  if (!options.out && !options.dryRun) throw usageError(`--target ${target} needs --out DIR: where the rendered files go (or --dry-run to print them)`);
  let cluster: ClusterDescription;
  let files: RenderedFile[];
  try {
    cluster = readClusterFile(options.cluster, packageVersion());
    if (cluster.name !== stack) {
      throw new ClusterFileError(`cluster file ${options.cluster} describes cluster "${cluster.name}", not "${stack}": run deploy ${cluster.name}, or rename the cluster`);
    }
    files = renderTarget(target, cluster, region);
  } catch (err) {
    if (err instanceof ClusterFileError) throw usageError(err.message);
    throw err;
  }
  if (options.dryRun) {
    print(`deploy ${stack} to ${region} --target ${target}: dry run, would write ${plural(files.length)}${options.out ? ` into ${options.out}` : ''}:`);
    for (const f of files) print(`\n=== ${f.path} (mode ${f.mode.toString(8)})\n${f.text}`);
    return;
  }
  const out = options.out!;
  mkdirSync(out, { recursive: true });
  for (const f of files) {
    const path = join(out, f.path);
    writeFileSync(path, f.text, { mode: f.mode });
    chmodSync(path, f.mode);
  }
  print(`rendered ${plural(files.length)} of cluster ${stack} (${region}, ${target}) into ${out}:`);
  for (const f of files) print(`  ${f.path}`);
  print(`next: docs/install.md (${target === 'container' ? 'Container' : target === 'kubernetes' ? 'Kubernetes' : 'systemd'})`);
}

const plural = (n: number): string => `${n} file${n === 1 ? '' : 's'}`;

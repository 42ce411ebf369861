/**
 * `blobstore put | get | stat | ls | rm`: the blob API from a shell, through BlobClient
 * (src/client): stores spread over the nodes given, retried on another node, downloads checked
 * against their id before they are kept. Exit status: 0 done, 1 a node refused or failed (its
 * message on stderr), 2 a usage error (bad arguments, a missing file, an id that is no id).
 */
import { closeSync, createReadStream, createWriteStream, promises as fs, openSync, readFileSync, readSync, statSync, type WriteStream } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { type Command, Option } from 'commander';
import type { BlobClient, PutResult } from '../client/index.js';
import { POLICIES } from '../blob/policy.js';
import { failure, usageError } from './errors.js';
import { print, printError } from './output.js';
import { Progress } from './progress.js';

interface ConnectionOptions {
  url?: string[];
  token?: string;
  cacert?: string;
  retries: string;
  timeout: string;
  output: 'text' | 'json';
}

/**
 * Files up to this are read whole, synchronously (one read, retried from memory); larger ones
 * stream from disk. A small file read through fs.promises (open, fstat, read, close: four pool
 * round trips and a FileHandle) cost more CPU than its store: 10,000 files of 4 KiB took 4.7 s.
 */
const READ_WHOLE_MAX_BYTES = 8 * 1024 * 1024;

function withConnection(cmd: Command): Command {
  return cmd
    .option('--url <url>', 'node base URL; repeat it or comma-separate (stores spread over them, calls fail over); default $BLOBSTORE_URL, else http://127.0.0.1:8080',
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value])
    .option('--token <token>', 'bearer token (default $BLOBSTORE_TOKEN)')
    .option('--cacert <file>', 'PEM file of the CA that signs the nodes\' certificates (https URLs)')
    .option('--retries <n>', 'attempts after the first, over the nodes, on 503/507/timeouts/connection errors', '5')
    .option('--timeout <ms>', 'a call without progress for this long fails (and is retried)', '30000')
    .addOption(new Option('--output <format>', 'text, or json (one JSON object a line)').choices(['text', 'json']).default('text'));
}

/** The client, loaded when a command runs (it brings undici and the hashing addon: 0.1 s of start). */
async function clientOf(opts: ConnectionOptions): Promise<BlobClient> {
  const { BlobClient } = await import('../client/index.js');
  const urls = (opts.url ?? [process.env.BLOBSTORE_URL || 'http://127.0.0.1:8080']).flatMap((u) => u.split(',')).filter((u) => u.trim() !== '');
  const retries = intOption(opts.retries, '--retries', 0);
  const timeoutMs = intOption(opts.timeout, '--timeout', 1);
  let ca: Buffer | undefined;
  if (opts.cacert) {
    try {
      ca = readFileSync(opts.cacert);
    } catch (err) {
      throw usageError(`--cacert ${opts.cacert}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  try {
    return new BlobClient({ urls, token: opts.token ?? process.env.BLOBSTORE_TOKEN, retries, timeoutMs, ca });
  } catch (err) {
    throw asCliError(err);
  }
}

function intOption(text: string, name: string, min: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) throw usageError(`${name} ${JSON.stringify(text)}: expected an integer of at least ${min}`);
  return n;
}

/** A client error (BlobClientError: it has a `kind`) as the CLI reports it: usage errors exit 2, the rest 1. */
function asCliError(err: unknown): Error {
  const kind = (err as { kind?: unknown } | null)?.kind;
  if (typeof kind === 'string' && err instanceof Error) return kind === 'usage' ? usageError(err.message) : failure(err.message, err);
  return err instanceof Error ? err : new Error(String(err));
}

/** `--labels`: a JSON object, or k=v pairs separated by commas. */
function parseLabels(text: string | undefined): Record<string, string> | undefined {
  if (text === undefined) return undefined;
  if (text.trim().startsWith('{')) {
    try {
      const value = JSON.parse(text) as unknown;
      if (value && typeof value === 'object' && !Array.isArray(value) && Object.values(value).every((v) => typeof v === 'string')) return value as Record<string, string>;
    } catch {
      // reported below
    }
    throw usageError(`--labels ${JSON.stringify(text.slice(0, 80))}: expected a JSON object of strings, or k=v,k=v`);
  }
  const labels: Record<string, string> = {};
  for (const pair of text.split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) throw usageError(`--labels: ${JSON.stringify(pair)} is not k=v`);
    labels[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return labels;
}

function parsePolicyOption(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const upper = text.toUpperCase();
  const ok = /^[0-5]$/.test(text) || POLICIES.some((p) => p === upper || p === `REPLICATION_POLICY_${upper}`);
  if (!ok) throw usageError(`--policy ${JSON.stringify(text)}: expected 0-5 or one of NONE, REPLICA2, REPLICA3, EC42, EC82`);
  return text;
}

const humanBytes = (n: number): string =>
  n < 1024 ? `${n} B` : n < 1024 ** 2 ? `${(n / 1024).toFixed(1)} KiB` : n < 1024 ** 3 ? `${(n / 1024 ** 2).toFixed(1)} MiB` : `${(n / 1024 ** 3).toFixed(2)} GiB`;

/** A small file whole, with the size its stat gave (open, one read, close: no fstat, no FileHandle). */
function readWhole(file: string, size: number): Buffer {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(size);
    let at = 0;
    while (at < size) {
      const n = readSync(fd, buf, at, size - at, at);
      if (n === 0) throw new Error(`${file} shrank while it was read (${at} of ${size} bytes)`);
      at += n;
    }
    return buf;
  } finally {
    closeSync(fd);
  }
}

/**
 * Output lines of stores that landed, written together once per turn of the event loop (a write
 * per line was a tenth of the command's CPU with 10,000 small files).
 */
class LineBatch {
  private pending = '';
  private scheduled = false;

  constructor(private readonly progress: Progress | undefined) {}

  add(line: string): void {
    this.pending += `${line}\n`;
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  flush(): void {
    this.scheduled = false;
    if (this.pending === '') return;
    this.progress?.clear();
    print(this.pending);
    this.pending = '';
    this.progress?.draw();
  }
}

interface PutOptionsCli extends ConnectionOptions {
  policy?: string;
  labels?: string;
  jobs: string;
}

async function putCommand(files: string[], opts: PutOptionsCli): Promise<void> {
  const policy = parsePolicyOption(opts.policy);
  const labels = parseLabels(opts.labels);
  const jobs = intOption(opts.jobs, '--jobs', 1);
  if (files.filter((f) => f === '-').length > 1) throw usageError('"-" (standard input) may be given once');
  // Every file is there before anything is sent: a typo fails the command, not its 900th upload.
  const sizes = new Map<string, number>();
  for (const file of files) {
    if (file === '-') continue;
    try {
      const st = statSync(file);
      if (!st.isFile()) throw usageError(`${file}: not a regular file`);
      sizes.set(file, st.size);
    } catch (err) {
      if ((err as { exitCode?: number }).exitCode) throw err;
      throw usageError(`${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
    }
  }
  const client = await clientOf(opts);
  const total = [...sizes.values()].reduce((a, b) => a + b, 0);
  const progress = Progress.onTerminal(total, files.length);
  let failed = 0;
  let next = 0;
  const lines = new LineBatch(progress);
  const one = async (file: string): Promise<void> => {
    let result: PutResult;
    let previous = 0;
    const onProgress = (bytes: number): void => {
      progress?.bytes(bytes - previous);
      previous = bytes;
    };
    try {
      if (file === '-') {
        result = await client.put(() => process.stdin, { policy, labels, onProgress });
      } else {
        const size = sizes.get(file)!;
        const body = size <= READ_WHOLE_MAX_BYTES ? readWhole(file, size) : () => createReadStream(file, { highWaterMark: 1024 * 1024 });
        result = await client.put(body, { policy, labels, size, onProgress });
      }
    } catch (err) {
      failed++;
      lines.flush();
      progress?.clear();
      printError(`${file === '-' ? 'standard input' : file}: ${(err as Error).message}`);
      return;
    }
    progress?.file();
    lines.add(opts.output === 'json'
      ? JSON.stringify({ file: file === '-' ? null : file, id: result.id, size: result.size, created: result.created })
      : `${result.id}  ${file}`);
  };
  try {
    await Promise.all(Array.from({ length: Math.min(jobs, files.length) }, async () => {
      while (next < files.length) await one(files[next++]!);
    }));
  } finally {
    lines.flush();
    progress?.clear();
    await client.close();
  }
  if (failed > 0) throw failure(`${failed} of ${files.length} ${files.length === 1 ? 'store' : 'stores'} failed`);
}

async function getCommand(id: string, opts: ConnectionOptions & { out?: string }): Promise<void> {
  const client = await clientOf(opts);
  const target = opts.out;
  // A download is kept only once its bytes are the id's: written beside the file, renamed at the end.
  const temp = target && target !== '-' ? join(dirname(target), `.${basename(target)}.blobstore-${process.pid}`) : undefined;
  let out: WriteStream | NodeJS.WriteStream = process.stdout;
  let writeError: Error | undefined;
  if (temp) {
    out = createWriteStream(temp, { flags: 'wx' });
    // Reported where the download fails (below), not as an unhandled event.
    out.on('error', (err) => (writeError ??= err));
  }
  const progress = temp ? Progress.onTerminal(undefined, 1) : undefined;
  const write = (chunk: Buffer): Promise<void> | void => {
    if (writeError) throw writeError;
    if (out.write(chunk)) return;
    return new Promise((resolve) => out.once('drain', () => resolve()));
  };
  try {
    const { size } = await client.read(id, write, (bytes, total) => progress?.at(bytes, total));
    if (temp) {
      await new Promise<void>((resolve, reject) => (out as WriteStream).end((err?: Error | null) => (err ? reject(err) : resolve())));
      await fs.rename(temp, target!);
      progress?.clear();
      if (opts.output === 'json') print(JSON.stringify({ id, size, file: target }));
    }
  } catch (err) {
    progress?.clear();
    if (temp) {
      const file = out as WriteStream;
      if (!file.closed) await new Promise<void>((resolve) => file.once('close', () => resolve()).destroy());
      await fs.rm(temp, { force: true });
    }
    throw asCliError(err);
  } finally {
    await client.close();
  }
}

async function statCommand(id: string, opts: ConnectionOptions): Promise<void> {
  const client = await clientOf(opts);
  try {
    const stat = await client.stat(id);
    if (!stat) throw failure(`${id}: not found`);
    const created = new Date(Number(stat.createdAtNs / 1_000_000n)).toISOString();
    const policy = POLICIES[stat.policy]?.replace('REPLICATION_POLICY_', '') ?? String(stat.policy);
    print(opts.output === 'json'
      ? JSON.stringify({ id, size: stat.size, created_at: stat.createdAtNs.toString(), policy: stat.policy })
      : `${id}  ${stat.size} bytes (${humanBytes(stat.size)})  created ${created}  ${policy}`);
  } catch (err) {
    throw asCliError(err);
  } finally {
    await client.close();
  }
}

async function lsCommand(opts: ConnectionOptions & { prefix?: string }): Promise<void> {
  const client = await clientOf(opts);
  try {
    for await (const id of client.list({ prefix: opts.prefix, pageSize: 1000 })) print(opts.output === 'json' ? JSON.stringify({ id }) : id);
  } catch (err) {
    throw asCliError(err);
  } finally {
    await client.close();
  }
}

async function rmCommand(ids: string[], opts: ConnectionOptions): Promise<void> {
  const client = await clientOf(opts);
  try {
    for (const id of ids) {
      await client.delete(id);
      print(opts.output === 'json' ? JSON.stringify({ id, deleted: true }) : `deleted ${id}`);
    }
  } catch (err) {
    throw asCliError(err);
  } finally {
    await client.close();
  }
}

export function registerBlobCommands(program: Command): void {
  withConnection(program.command('put').description('store files (or standard input, -) as blobs; prints each id as it lands'))
    .argument('<file...>', 'files to store; - reads standard input (streamed, not retried)')
    .option('--policy <policy>', 'replication policy: 0-5 or NONE, REPLICA2, REPLICA3 (the default), EC42, EC82')
    .option('--labels <labels>', 'labels: a JSON object or k=v,k=v')
    .option('--jobs <n>', 'stores in flight at once', '8')
    .addHelpText('after', `
Examples:
  blobstore put photo.jpg                               # 3f0c...  photo.jpg
  blobstore put --jobs 64 --url n1:8080,n2:8080 shots/*  # many files over two nodes
  tar c dir | blobstore put - --policy EC42
  blobstore put --output json --labels team=ingest a.bin b.bin`)
    .action((files: string[], opts: PutOptionsCli) => putCommand(files, opts));

  withConnection(program.command('get').description('read a blob, checked against its id'))
    .argument('<id>', 'blob id (32 lower-case hex characters)')
    .option('-o, --out <file>', 'write to this file (kept only once the bytes match the id); default: standard output')
    .addHelpText('after', `
Examples:
  blobstore get 3f0c... -o photo.jpg
  blobstore get 3f0c... --url n2:8080 > photo.jpg`)
    .action((id: string, opts: ConnectionOptions & { out?: string }) => getCommand(id, opts));

  withConnection(program.command('stat').description('a blob\'s size, creation time and policy'))
    .argument('<id>', 'blob id')
    .addHelpText('after', `
Example:
  blobstore stat 3f0c...     # 3f0c...  48213 bytes (47.1 KiB)  created <ISO time>  REPLICA3`)
    .action((id: string, opts: ConnectionOptions) => statCommand(id, opts));

  withConnection(program.command('ls').description('the ids a node holds (the first --url), page by page'))
    .option('--prefix <hex>', 'only ids that start with these lower-case hex characters')
    .addHelpText('after', `
Example:
  blobstore ls --prefix 3f`)
    .action((opts: ConnectionOptions & { prefix?: string }) => lsCommand(opts));

  withConnection(program.command('rm').description('delete blobs on every --url node (a delete is local to a node)'))
    .argument('<id...>', 'blob ids')
    .addHelpText('after', `
Example:
  blobstore rm 3f0c... --url n1:8080,n2:8080,n3:8080`)
    .action((ids: string[], opts: ConnectionOptions) => rmCommand(ids, opts));
}

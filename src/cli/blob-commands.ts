/**
 * `blobstore put | get | stat | ls | rm`: the blob API from a shell, through BlobClient
 * (src/client): stores spread over the nodes given, retried on another node, downloads checked
 * against their id before they are kept. Exit status: 0 done, 1 a node refused or failed (its
 * message on stderr), 2 a usage error (bad arguments, a missing file, an id that is no id).
 */
import { createReadStream, promises as fs, readFileSync, statSync, type WriteStream } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { type Command, Option } from 'commander';
import type { BlobClient, PutResult } from '../client/index.js';
import { BATCH_MAX_BLOBS } from '../client/limits.js';
import { POLICIES } from '../blob/policy.js';
import { failure, usageError } from './errors.js';
import { readWhole } from './file-read.js';
import { FileReader } from './file-reader.js';
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

/** Files up to this are read whole (file-read.ts; retried from memory); larger ones stream from disk. */
const READ_WHOLE_MAX_BYTES = 8 * 1024 * 1024;

function withConnection(cmd: Command): Command {
  return cmd
    .option('--url <url>', 'node base URL; repeat it or comma-separate (stores spread over them, calls fail over); default $BLOBSTORE_URL, else http://127.0.0.1:8080',
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value])
    .option('--token <token>', 'bearer token (default $BLOBSTORE_TOKEN)')
    .option('--cacert <file>', 'PEM file of the CA that signs the nodes\' certificates (https URLs); default $BLOBSTORE_CACERT')
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
  const cacert = opts.cacert ?? (process.env.BLOBSTORE_CACERT || undefined);
  if (cacert) {
    try {
      ca = readFileSync(cacert);
    } catch (err) {
      throw usageError(`--cacert ${cacert}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    if (!ca.includes('-----BEGIN CERTIFICATE-----')) throw usageError(`--cacert ${cacert}: not a PEM certificate`);
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

/** Files up to this go many to a request (POST /v1/blobs/batch); larger ones one by one. */
const BATCH_FILE_MAX_BYTES = 1024 * 1024;

/** The command's work: small files `batch` to a request, the rest (and standard input) one by one. */
function planUnits(files: readonly string[], sizes: ReadonlyMap<string, number>, batch: number): (string | string[])[] {
  const units: (string | string[])[] = [];
  let open: string[] = [];
  for (const file of files) {
    const size = sizes.get(file);
    if (batch === 1 || size === undefined || size > BATCH_FILE_MAX_BYTES) {
      units.push(file);
      continue;
    }
    open.push(file);
    if (open.length === batch) {
      units.push(open);
      open = [];
    }
  }
  if (open.length > 0) units.push(open.length === 1 ? open[0]! : open);
  return units;
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
  batch: string;
}

interface PutSettings {
  policy: ReturnType<typeof parsePolicyOption>;
  labels: ReturnType<typeof parseLabels>;
  jobs: number;
  batch: number;
}

async function putCommand(files: string[], opts: PutOptionsCli): Promise<void> {
  const settings: PutSettings = {
    policy: parsePolicyOption(opts.policy), labels: parseLabels(opts.labels), jobs: intOption(opts.jobs, '--jobs', 1), batch: intOption(opts.batch, '--batch', 1),
  };
  const { batch } = settings;
  if (batch > BATCH_MAX_BLOBS) throw usageError(`--batch ${batch}: at most ${BATCH_MAX_BLOBS}`);
  if (files.filter((f) => f === '-').length > 1) throw usageError('"-" (standard input) may be given once');
  // Small files go many to a request (BlobClient.putFramed), read into their batch body when it
  // leaves: on a thread of their own when there may be more than one batch (started now, so that
  // its start overlaps the checks below).
  const reader = new FileReader(batch > 1 && files.length > batch);
  try {
    await putFiles(files, opts, settings, reader);
  } finally {
    await reader.close();
  }
}

async function putFiles(files: string[], opts: PutOptionsCli, settings: PutSettings, reader: FileReader): Promise<void> {
  const { policy, labels, jobs, batch } = settings;
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
  const lines = new LineBatch(progress);
  const landed = (file: string, result: PutResult): void => {
    progress?.file();
    lines.add(opts.output === 'json'
      ? JSON.stringify({ file: file === '-' ? null : file, id: result.id, size: result.size, created: result.created })
      : `${result.id}  ${file}`);
  };
  const failedOn = (names: readonly string[], err: unknown): void => {
    failed += names.length;
    lines.flush();
    progress?.clear();
    for (const file of names) printError(`${file === '-' ? 'standard input' : file}: ${(err as Error).message}`);
  };
  // One file on its own: standard input, or a file too large for a batch (streamed from disk).
  const one = async (file: string): Promise<void> => {
    let previous = 0;
    const onProgress = (bytes: number): void => {
      progress?.bytes(bytes - previous);
      previous = bytes;
    };
    try {
      const size = sizes.get(file);
      // Standard input can be read once: given as the stream itself, it is sent once, never retried.
      const body = file === '-' ? process.stdin : size! <= READ_WHOLE_MAX_BYTES ? readWhole(file, size!) : () => createReadStream(file, { highWaterMark: 1024 * 1024 });
      landed(file, await client.put(body, { policy, labels, size, onProgress }));
    } catch (err) {
      failedOn([file], err);
    }
  };
  const units = planUnits(files, sizes, batch);
  const many = async (names: readonly string[]): Promise<void> => {
    const batch = await reader.read(names, names.map((file) => sizes.get(file)!));
    const read = names.filter((file, i) => {
      const error = batch.errors[i];
      if (error !== undefined) failedOn([file], new Error(error));
      return error === undefined;
    });
    if (read.length === 0) return batch.release();
    try {
      const results = await client.putFramed(batch.body, batch.count, { policy, labels });
      batch.release();
      for (let i = 0; i < read.length; i++) {
        progress?.bytes(results[i]!.size);
        landed(read[i]!, results[i]!);
      }
    } catch (err) {
      // Not released: a request that failed may still be writing from it.
      failedOn(read, err);
    }
  };
  let next = 0;
  try {
    await Promise.all(Array.from({ length: Math.min(jobs, units.length) }, async () => {
      while (next < units.length) {
        const unit = units[next++]!;
        await (typeof unit === 'string' ? one(unit) : many(unit));
      }
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
    // A place the download cannot be kept is the caller's mistake, said before any byte is fetched.
    if ((await fs.stat(target!).catch(() => undefined))?.isDirectory()) {
      await client.close();
      throw usageError(`-o ${target}: is a directory`);
    }
    const file = await fs.open(temp, 'wx').catch(async (err: NodeJS.ErrnoException) => {
      await client.close();
      throw usageError(`-o ${target}: cannot write there (${err.code ?? err.message})`);
    });
    out = file.createWriteStream();
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
  // Every id is checked before the first delete: a typo in the list deletes nothing.
  const bad = ids.find((id) => !/^[0-9a-f]{32}$/.test(id));
  if (bad !== undefined) throw usageError(`invalid blob ID ${JSON.stringify(bad.slice(0, 80))}: expected 32 lower-case hex characters`);
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

/** The commands registerBlobCommands adds (main.ts runs them without loading the others). */
export const BLOB_COMMANDS: readonly string[] = ['put', 'get', 'stat', 'ls', 'rm'];

export function registerBlobCommands(program: Command): void {
  withConnection(program.command('put').description('store files (or standard input, -) as blobs; prints each id as it lands'))
    .argument('<file...>', 'files to store; - reads standard input (streamed, not retried)')
    .option('--policy <policy>', 'replication policy: 0-5 or NONE, REPLICA2, REPLICA3 (the default), EC42, EC82')
    .option('--labels <labels>', 'labels: a JSON object or k=v,k=v')
    .option('--jobs <n>', 'requests in flight at once', '8')
    .option('--batch <n>', 'files up to 1 MiB go this many to a request (one group commit on the node); 1: a request per file', '64')
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

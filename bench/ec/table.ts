/**
 * Summarises the JSON lines of harness.c (ec-kernel) and node.bench.ts (ec-node): one ratio line
 * per shape (JSON, bench "ec-ratio"), one line per shape for the update beside encode (JSON, bench
 * "ec-update") and human tables (lines starting with "#").
 *
 *   node dist/bench/ec/table.js results.jsonl
 */
import { readFileSync } from 'node:fs';

interface Line {
  readonly bench: string;
  readonly impl: string;
  readonly op: string;
  readonly k: number;
  readonly m: number;
  readonly shardBytes: number;
  readonly gbps: number;
  readonly ratioIsal?: number;
  readonly ratioRonomon?: number;
  readonly peer?: string;
  readonly ratioPeer?: number;
  /** update lines of our paths: median of per-repetition (update / our encode), same path. */
  readonly ratioEncode?: number;
}

const PATHS = ['portable', 'ssse3', 'avx2', 'gfni256', 'gfni512'];

const lines: Line[] = readFileSync(process.argv[2], 'utf8')
  .split('\n')
  .filter((l) => l.startsWith('{'))
  .map((l) => JSON.parse(l) as Line);

const size = (b: number): string => (b >= 1 << 20 ? `${b / (1 << 20)}MiB` : `${b / 1024}KiB`);
const num = (x: number | null | undefined, digits = 1): string => (x === null || x === undefined ? '-' : x.toFixed(digits));
const find = (bench: string, impl: string, key: Line): Line | undefined =>
  lines.find((l) => l.bench === bench && l.impl === impl && l.op === key.op && l.k === key.k && l.m === key.m && l.shardBytes === key.shardBytes);

const COLUMNS = ['shape', 'shard', 'op', 'isal', ...PATHS, 'node-auto', 'async', 'ronomon', 'auto/isal', 'node/ronomon'];
const WIDTHS = [5, 6, 11, ...COLUMNS.slice(3).map((c) => Math.max(8, c.length))];
const row = (cells: string[]): string => `# ${cells.map((c, i) => (i < 3 ? c.padEnd(WIDTHS[i]) : c.padStart(WIDTHS[i]))).join(' ')}`;

const table = [
  '# EC, GB/s of data per core (medians). C harness: isal and each of our paths. Node API: node-auto (the path',
  '# dispatch picks), async (Piscina, one task at a time) and ronomon. Ratios: medians of per-repetition ratios (auto = the widest path here).',
  row(COLUMNS),
];
for (const key of lines.filter((l) => l.bench === 'ec-kernel' && l.impl === 'isal')) {
  const ours = PATHS.map((p) => find('ec-kernel', p, key));
  const auto = [...PATHS].reverse().find((p) => find('ec-kernel', p, key)) ?? 'portable';
  const kernelAuto = find('ec-kernel', auto, key);
  const nodeAuto = find('ec-node', `blobstore-${auto}`, key);
  const ronomon = find('ec-node', 'ronomon', key);
  const asyncForm = find('ec-node', 'blobstore-async', key);
  const ratio = {
    bench: 'ec-ratio',
    op: key.op,
    k: key.k,
    m: key.m,
    shardBytes: key.shardBytes,
    path: auto,
    gbps: kernelAuto?.gbps ?? null,
    isalGbps: key.gbps,
    ratioIsal: kernelAuto?.ratioIsal ?? null,
    portableGbps: ours[0]?.gbps ?? null,
    nodeGbps: nodeAuto?.gbps ?? null,
    asyncGbps: asyncForm?.gbps ?? null,
    ronomonGbps: ronomon?.gbps ?? null,
    ratioRonomon: nodeAuto?.ratioRonomon ?? null,
  };
  console.log(JSON.stringify(ratio));
  table.push(row([`${key.k}+${key.m}`, size(key.shardBytes), key.op, num(key.gbps), ...ours.map((x) => num(x?.gbps)), num(ratio.nodeGbps), num(ratio.asyncGbps), num(ratio.ronomonGbps),
    `${num(ratio.ratioIsal, 2)}x`, `${num(ratio.ratioRonomon)}x`]));
}

// Each path beside the ISA-L version of about the same instruction set (base, sse, avx2, avx512).
const peers = ['# Each path / its ISA-L peer (portable/base, ssse3/sse, avx2/avx2, gfni*/avx512), medians of per-repetition ratios',
  row(['shape', 'shard', 'op', '', ...PATHS.map((p) => `${p}`)]).trimEnd()];
for (const key of lines.filter((l) => l.bench === 'ec-kernel' && l.impl === 'isal')) {
  peers.push(row([`${key.k}+${key.m}`, size(key.shardBytes), key.op, '', ...PATHS.map((p) => `${num(find('ec-kernel', p, key)?.ratioPeer, 2)}x`)]));
}
// The update (parity built one data shard at a time) beside encode on each path, per data byte.
const updates = ['# Update (rs_encode_update over the k data shards) beside encode, GB/s of data per core; upd/enc and upd/peer: medians of per-repetition ratios',
  row(['shape', 'shard', 'path', 'encode', 'update', 'upd/enc', 'isal-peer', 'upd/peer'])];
for (const key of lines.filter((l) => l.bench === 'ec-kernel' && l.impl === 'isal' && l.op === 'update')) {
  const encodeKey = { ...key, op: 'encode' };
  const ran = PATHS.filter((p) => find('ec-kernel', p, key));
  for (const path of ran) {
    const update = find('ec-kernel', path, key);
    const encode = find('ec-kernel', path, encodeKey);
    const peer = update?.peer === undefined ? undefined : find('ec-kernel', update.peer, key);
    updates.push(row([`${key.k}+${key.m}`, size(key.shardBytes), path, num(encode?.gbps), num(update?.gbps), `${num(update?.ratioEncode, 2)}x`,
      `${num(peer?.gbps)}`, `${num(update?.ratioPeer, 2)}x`]));
  }
  const auto = ran[ran.length - 1] ?? 'portable';
  const update = find('ec-kernel', auto, key);
  console.log(JSON.stringify({
    bench: 'ec-update',
    k: key.k,
    m: key.m,
    shardBytes: key.shardBytes,
    path: auto,
    updateGbps: update?.gbps ?? null,
    encodeGbps: find('ec-kernel', auto, encodeKey)?.gbps ?? null,
    ratioEncode: update?.ratioEncode ?? null,
    isalUpdateGbps: key.gbps,
    ratioIsal: update?.ratioIsal ?? null,
  }));
}
console.log([...table, ...peers, ...updates].join('\n'));

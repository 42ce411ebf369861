/**
 * Writes docs/benchmarks.md from bench/results: the figures that carry a target, one row each,
 * with the command that measures it and the CPU it ran on (bench/run.sh keeps a step's CPU in
 * bench/results/<step>.cpu). Nobody types these figures. The page keeps a figure's latest row per
 * CPU: a step run here replaces its rows of this CPU and leaves those measured on another (the
 * targets must hold on an AVX2-only CPU too, whichever machine ran last), and a step not run since
 * (results are not kept in git), or a figure a step run in part did not measure, keeps the rows
 * the page had. `bash bench/run.sh` runs it last;
 * `node dist/bench/benchmarks-doc.js` alone rewrites the page.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, type Result as Line } from './node/lib.js';

interface Row {
  figure: string;
  /** bench/run.sh step. */
  step: string;
  /** The figure and its reference (metric names; a name ending in `*` takes the first metric that starts with it). */
  value: string;
  reference?: string;
  /** The reference's unit, when it is a field of a line (which has none of its own). */
  referenceUnit?: string;
  /** The ratio metric, when the target is one. */
  ratio?: string;
  target: string;
  /** Whether the ratio (or the value) meets the target; none for a figure given for reference (its Met is '-'). */
  meets?: (x: number) => boolean;
}

const ROWS: Row[] = [
  { figure: '4 KiB durable PUT / uWS echo POST', step: 'http-4KiB', value: 'put_rps', reference: 'echo_post_rps', ratio: 'put_vs_echo_post', target: '>= 0.50', meets: (x) => x >= 0.5 },
  { figure: '4 KiB GET, hot set / uWS GET', step: 'http-4KiB', value: 'get_rps', reference: 'echo_get_rps', ratio: 'get_vs_echo_get', target: '>= 0.85', meets: (x) => x >= 0.85 },
  { figure: '4 KiB GET, set larger than the cache / uWS GET', step: 'http-4KiB', value: 'get_large_rps', reference: 'echo_get_rps', ratio: 'get_large_vs_echo_get', target: '>= 0.70', meets: (x) => x >= 0.7 },
  { figure: '1 GiB PUT / write + fsync', step: 'http-stream-1GiB', value: 'put_chunked*', reference: 'plain_write_fsync', ratio: 'put_vs_write_fsync*', target: '>= 0.85', meets: (x) => x >= 0.85 },
  { figure: '1 GiB GET, cold cache / plain read', step: 'http-stream-1GiB', value: 'get*', reference: 'plain_read', ratio: 'get_vs_read*', target: '>= 0.85', meets: (x) => x >= 0.85 },
  { figure: 'Bare uWS sending the file, cold / plain read (the most any HTTP server reaches here)', step: 'http-stream-1GiB', value: 'uws_file_get', reference: 'plain_read', ratio: 'uws_file_vs_read', target: '(ceiling)' },
  { figure: '1 GiB GET, cold cache / bare uWS sending the file cold', step: 'http-stream-1GiB', value: 'get*', reference: 'uws_file_get', ratio: 'get_vs_uws_file*', target: '(ceiling)' },
  { figure: 'Peak RSS growth during a 1 GiB PUT', step: 'http-stream-1GiB', value: 'put_peak_rss_growth', target: '<= 64 MiB', meets: (x) => x <= 64 },
  { figure: '`blobstore put --jobs 64` of 10,000 files of 4 KiB / wrk POST', step: 'client-put', value: 'cli_put_4KiB', reference: 'cli_put_4KiB:wrk_put_per_s', referenceUnit: 'req/s', ratio: 'cli_put_4KiB:ratio_to_wrk', target: '>= 0.70', meets: (x) => x >= 0.7 },
  { figure: 'REPLICA3 4 KiB PUT on node 1 of 3 / NONE alone', step: 'cluster-replicate', value: 'replica3_4KiB_put_rps', reference: 'alone_4KiB_put_rps', ratio: 'replica3_vs_alone_4KiB_put', target: '>= 0.45', meets: (x) => x >= 0.45 },
  { figure: 'NONE 4 KiB PUT on 3 nodes / NONE alone', step: 'cluster-replicate', value: 'none_cluster_4KiB_put_rps', reference: 'alone_4KiB_put_rps', ratio: 'none_cluster_vs_alone_4KiB_put', target: '>= 0.90', meets: (x) => x >= 0.9 },
  { figure: 'EC42 1 GiB PUT / NONE alone', step: 'cluster-ec', value: 'ec42_1GiB_put_mib_s', reference: 'none_1GiB_put_mib_s', ratio: 'ec42_vs_none_1GiB_put', target: '>= 0.60', meets: (x) => x >= 0.6 },
  { figure: 'Peak RSS growth of the receiving node during a 1 GiB EC42 PUT', step: 'cluster-ec', value: 'ec42_1GiB_put_rss_growth_mib', target: '<= 64 MiB', meets: (x) => x <= 64 },
  { figure: 'EC42 1 GiB GET / NONE alone', step: 'cluster-ec', value: 'ec42_1GiB_get_mib_s', reference: 'none_1GiB_get_mib_s', ratio: 'ec42_vs_none_1GiB_get', target: '>= 0.70', meets: (x) => x >= 0.7 },
  { figure: 'Bare relay of EC42 columns, no check, same hops / NONE alone (the hops\' floor)', step: 'cluster-ec', value: 'ec42_1GiB_get_floor_mib_s', reference: 'none_1GiB_get_mib_s', ratio: 'floor_vs_none_1GiB_get', target: '(floor)' },
  { figure: 'EC42 1 GiB GET / bare relay of its columns', step: 'cluster-ec', value: 'ec42_1GiB_get_mib_s', reference: 'ec42_1GiB_get_floor_mib_s', ratio: 'ec42_vs_floor_1GiB_get', target: '(floor)' },
  { figure: 'EC42 1 GiB GET from the disk / NONE alone from the disk', step: 'cluster-ec', value: 'ec42_1GiB_get_cold_mib_s', reference: 'none_1GiB_get_cold_mib_s', ratio: 'ec42_vs_none_1GiB_get_cold', target: '>= 0.70', meets: (x) => x >= 0.7 },
  { figure: 'EC42 64 MiB PUT / Swift EC 4+2, same run', step: 'cluster-ec', value: 'ec42_64MiB_put_mib_s', reference: 'swift_ec42_64MiB_put_mib_s', ratio: 'ec42_64MiB_put_vs_swift', target: '>= 3', meets: (x) => x >= 3 },
  { figure: 'EC42 64 MiB GET / Swift EC 4+2, same run', step: 'cluster-ec', value: 'ec42_64MiB_get_mib_s', reference: 'swift_ec42_64MiB_get_mib_s', ratio: 'ec42_64MiB_get_vs_swift', target: '>= 3', meets: (x) => x >= 3 },
  { figure: 'EC42 256 KiB GET p50, first read on a node / read again (holders known)', step: 'cluster-ec', value: 'ec42_256KiB_first_get_p50_ms', reference: 'ec42_256KiB_again_get_p50_ms', ratio: 'ec42_256KiB_first_vs_again_get', target: '<= 1.25', meets: (x) => x <= 1.25 },
  { figure: 'EC42 degraded GET (holders of 2 data columns down) / healthy', step: 'cluster-ec', value: 'ec42_degraded_1GiB_get_mib_s', reference: 'ec42_healthy_1GiB_get_mib_s', ratio: 'ec42_degraded_vs_healthy_get', target: '>= 0.70', meets: (x) => x >= 0.7 },
  { figure: 'EC42 256 KiB PUT / NONE, same cluster and node', step: 'cluster-ec', value: 'ec42_256KiB_put_rps', reference: 'none_cluster_256KiB_put_rps', ratio: 'ec42_vs_none_256KiB_put', target: '(cost of EC)' },
  { figure: 'EC42 2 MiB PUT / NONE, same cluster and node', step: 'cluster-ec', value: 'ec42_2MiB_put_rps', reference: 'none_cluster_2MiB_put_rps', ratio: 'ec42_vs_none_2MiB_put', target: '(cost of EC)' },
  { figure: 'TCP connections opened per EC42 2 MiB PUT (columns on kept connections)', step: 'cluster-ec', value: 'ec42_2MiB_put_connects', target: '<= 0.5', meets: (x) => x <= 0.5 },
  { figure: '4 KiB PUT, TLS / plain', step: 'tls', value: '4KiB-put-tls', reference: '4KiB-put-plain', ratio: '4KiB-put-tls:ratio_to_plain', target: '(cost of TLS)' },
  { figure: 'Start-up to /healthz 200 with 1M blobs', step: 'startup', value: 'ready_ms', target: '<= 1000 ms', meets: (x) => x <= 1000 },
];

const RESULTS = join(ROOT, 'bench/results');
const PAGE = join(ROOT, 'docs/benchmarks.md');
const WORK_HEADING = '## Work per request against its reference';
/** The heading the section had before it took REPLICA3's row: its rows are kept as this one's. */
const WORK_HEADING_BEFORE = '## Work per request against the bare server';

type Kept = Map<string, { cpu: string; line: string }[]>;

/** The page as it stands: its measured rows by figure, and its work-per-request rows by request, each with its CPU. */
function pageBefore(): { rows: Kept; work: Kept } {
  const rows: Kept = new Map();
  const work: Kept = new Map();
  if (!existsSync(PAGE)) return { rows, work };
  const text = readFileSync(PAGE, 'utf8').split('\n');
  const at = Math.max(text.indexOf(WORK_HEADING), text.indexOf(WORK_HEADING_BEFORE));
  for (const [i, line] of text.entries()) {
    const cells = line.split(' | ');
    const inWork = at >= 0 && i > at;
    if (!line.startsWith('| ') || cells.length !== (inWork ? 7 : 8) || cells[1] === 'not measured since this page began' || cells[1]!.startsWith('CPU us')) continue;
    const key = cells[0]!.slice(2);
    const cpu = cells[6]!.replace(/ \|$/, '').replace(/, \d{4}-\d{2}-\d{2}$/, '');
    const kept = inWork ? work : rows;
    kept.set(key, [...(kept.get(key) ?? []), { cpu, line }]);
  }
  return { rows, work };
}
const before = pageBefore();

function linesOf(step: string): Line[] {
  const file = join(RESULTS, `${step}.jsonl`);
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Line);
}

/** `metric`, `metric*` (a prefix) or `metric:field` (a field of that line). */
function pick(lines: Line[], spec: string | undefined): number | undefined {
  if (spec === undefined) return undefined;
  const [name, field] = spec.split(':') as [string, string | undefined];
  const line = name.endsWith('*') ? lines.find((l) => l.metric.startsWith(name.slice(0, -1))) : lines.find((l) => l.metric === name);
  const v = field ? line?.[field] : line?.value;
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

const unitOf = (lines: Line[], spec: string): string => {
  const name = spec.split(':')[0]!;
  const line = name.endsWith('*') ? lines.find((l) => l.metric.startsWith(name.slice(0, -1))) : lines.find((l) => l.metric === name);
  return spec.includes(':') ? '' : line?.unit ?? '';
};

/**
 * Work per request against its reference, from the steps that count it: the 4 KiB requests
 * against the bare uWS server (http-4KiB), a REPLICA3 PUT's three nodes against NONE on a node
 * alone (cluster-replicate). A request's latest row per CPU, as the figures above.
 */
const WORK: { label: string; step: string; key: string }[] = [
  { label: '4 KiB PUT', step: 'http-4KiB', key: 'put' },
  { label: '4 KiB GET, hot set', step: 'http-4KiB', key: 'get' },
  { label: '4 KiB GET, larger set', step: 'http-4KiB', key: 'get_large' },
  { label: 'REPLICA3 4 KiB PUT, all 3 nodes (reference: NONE, node alone)', step: 'cluster-replicate', key: 'replica3_put' },
];

function workPerRequest(out: string[]): void {
  out.push('', WORK_HEADING, '');
  const measured = (step: string): boolean => linesOf(step).some((l) => l.metric.startsWith('cpu_us_per_'));
  if (!WORK.some((w) => measured(w.step)) && before.work.size === 0) {
    out.push('Not measured since this page began (`BENCH_ONLY=http-4KiB bash bench/run.sh`).');
    return;
  }
  out.push(
    'CPU of the answering processes (all threads; kernel part in brackets) and the system calls they',
    'enter, per request, at the load of the timed rounds. The reference answers the same wrk script:',
    'the bare uWS server for the 4 KiB requests, NONE on a node alone for REPLICA3.',
    '',
    '| Request | CPU us, ours | CPU us, reference | Syscalls, ours | Syscalls, reference | Our syscalls by name | CPU |',
    '|---|---:|---:|---:|---:|---|---|',
  );
  for (const { label, step, key } of WORK) {
    const kept = before.work.get(label) ?? [];
    if (!measured(step)) {
      out.push(...kept.map((k) => k.line));
      continue;
    }
    const lines = linesOf(step);
    const find = (metric: string): Line | undefined => lines.find((l) => l.metric === metric);
    const cpuFile = join(RESULTS, `${step}.cpu`);
    const cpu = existsSync(cpuFile) ? readFileSync(cpuFile, 'utf8').trim() : 'unknown CPU';
    const when = statSync(join(RESULTS, `${step}.jsonl`)).mtime.toISOString().slice(0, 10);
    const ours = find(`cpu_us_per_${key}`);
    const bare = find(`cpu_us_per_${String(ours?.reference)}`);
    const sc = find(`syscalls_per_${key}`);
    const scBare = find(`syscalls_per_${String(sc?.reference)}`);
    const us = (l: Line | undefined): string => (l ? `${fmt(l.value ?? undefined, 1)} (${fmt(l.kernel_us as number | undefined, 1)})` : '-');
    const names = sc?.by_name ? Object.entries(sc.by_name as Record<string, number>).map(([n, c]) => `${n} ${c}`).join(', ') : '-';
    out.push(`| ${label} | ${us(ours)} | ${us(bare)} | ${fmt(sc?.value ?? undefined, 2)} | ${fmt(scBare?.value ?? undefined, 2)} | ${names} | ${cpu}, ${when} |`);
    out.push(...kept.filter((k) => k.cpu !== cpu).map((k) => k.line));
  }
}

const fmt = (n: number | undefined, digits = 0): string => (n === undefined ? '-' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));

const out: string[] = [
  '# Benchmarks',
  '',
  'Written by `bench/benchmarks-doc.ts` from `bench/results/` at the end of `make bench` (or',
  '`BENCH_ONLY=<step> bash bench/run.sh` for one step): every ratio is against its reference in the',
  'same run, on the CPU named in its row. A figure keeps its latest row per CPU. A target counts',
  'as met only where it holds on an AVX2-only CPU too. Progress and per-round figures are in',
  '`bench/results/<step>.log`.',
  '',
  '| Figure | Value | Reference | Ratio | Target | Met | CPU, date | Command |',
  '|---|---:|---:|---:|---|---|---|---|',
];
for (const row of ROWS) {
  const lines = linesOf(row.step);
  const command = `\`BENCH_ONLY=${row.step} bash bench/run.sh\``;
  const kept = before.rows.get(row.figure) ?? [];
  const value = pick(lines, row.value);
  // A step not run, or run in part (BENCH_EC_ONLY): a figure it did not measure keeps its rows.
  if (lines.length === 0 || (value === undefined && kept.length > 0)) {
    if (kept.length === 0) out.push(`| ${row.figure} | not measured since this page began | | | ${row.target} | | | ${command} |`);
    out.push(...kept.map((k) => k.line));
    continue;
  }
  const reference = pick(lines, row.reference);
  const ratio = row.ratio ? pick(lines, row.ratio) : undefined;
  const judged = row.ratio ? ratio : value;
  const met = judged === undefined || !row.meets ? '-' : row.meets(judged) ? 'yes' : '**no**';
  const cpuFile = join(RESULTS, `${row.step}.cpu`);
  const cpu = existsSync(cpuFile) ? readFileSync(cpuFile, 'utf8').trim() : 'unknown CPU';
  const when = statSync(join(RESULTS, `${row.step}.jsonl`)).mtime.toISOString().slice(0, 10);
  const unit = unitOf(lines, row.value);
  out.push(`| ${row.figure} | ${fmt(value, value !== undefined && value < 100 ? 1 : 0)} ${unit} | ${row.reference ? `${fmt(reference)} ${row.referenceUnit ?? unitOf(lines, row.reference)}` : '-'} | ${fmt(ratio, 3)} | ${row.target} | ${met} | ${cpu}, ${when} | ${command} |`);
  out.push(...kept.filter((k) => k.cpu !== cpu).map((k) => k.line));
}
workPerRequest(out);
writeFileSync(PAGE, out.join('\n') + '\n');
process.stderr.write(`docs/benchmarks.md: ${ROWS.length} rows\n`);

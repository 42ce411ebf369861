/**
 * The markdown summary of a `make bench` run: reads bench/results/*.jsonl, prints the table the
 * README carries (figure, value, reference, ratio, target, pass) and writes bench/results/summary.md.
 * Missing figures show as "-" (their step did not run or failed; see bench/results/<step>.log).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, type Result as Line } from './lib.js';

const RESULTS = join(ROOT, 'bench/results');
const OWN = ['hash', 'segment-append', 'lmdb-index-put', 'http-4KiB', 'http-stream-1GiB', 'startup', 'scale', 'profile'];
/** Steps of bench/run.sh whose output it collects (others' timestamped files are theirs). */
const STEPS = [...OWN, 'http-ndjson-1GiB', 'grpc', 'metrics-recorder', 'metrics-overhead', 'auth-gate', 'auth-http', 'ec', 'orders'];

function load(): Map<string, Line[]> {
  const files = new Map<string, Line[]>();
  if (!existsSync(RESULTS)) return files;
  for (const f of STEPS.map((s) => `${s}.jsonl`).filter((n) => existsSync(join(RESULTS, n)))) {
    const lines: Line[] = [];
    for (const raw of readFileSync(join(RESULTS, f), 'utf8').split('\n')) {
      if (!raw.startsWith('{')) continue;
      try {
        const l = JSON.parse(raw) as Line;
        if (typeof l.bench === 'string') lines.push(l);
      } catch {
        /* not one of ours */
      }
    }
    files.set(f.replace(/\.jsonl$/, ''), lines);
  }
  return files;
}

const files = load();
const all = [...files.values()].flat();
const find = (bench: string, metric: string, where?: (l: Line) => boolean): Line | undefined =>
  all.find((l) => l.bench === bench && l.metric === metric && (!where || where(l)));

function num(n: number | null | undefined, digits = 0): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '-';
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}
const fig = (l: Line | undefined, digits = 0): string => (l ? `${num(l.value, digits)} ${l.unit}` : '-');
const pct = (l: Line | undefined): string => (l && l.value !== null ? `${num(l.value * 100, 0)}%` : '-');
const pass = (l: Line | undefined): string => (l === undefined || l.pass === undefined ? '-' : l.pass ? 'pass' : '**MISS**');

const out: string[] = [];
const row = (cells: string[]): number => out.push(`| ${cells.join(' | ')} |`);

const put4k = find('http-4KiB', 'put_rps');
const conns = put4k ? `${String(put4k.connections)} conn, wrk -t${String(put4k.wrk_threads)}, median of ${String(put4k.repeats)} x ${String(put4k.seconds)} s` : '';
out.push(`### Node figures (${new Date().toISOString().slice(0, 10)}, 2 cores, loopback; ${conns})`, '');
row(['Figure', 'Node', 'Reference (same run)', 'Ratio', 'Target', 'Result']);
row(['---', '---:', '---:', '---:', '---', '---']);
{
  const r = find('http-4KiB', 'put_vs_echo_post');
  row(['4 KiB durable PUT', fig(put4k), `uWS echo POST ${fig(find('http-4KiB', 'echo_post_rps'))}`, pct(r), '>= 50%', pass(r)]);
  const g = find('http-4KiB', 'get_vs_echo_get');
  row(['4 KiB GET, hot set (read cache)', fig(find('http-4KiB', 'get_rps')), `uWS 4 KiB GET ${fig(find('http-4KiB', 'echo_get_rps'))}`, pct(g), '>= 70%', pass(g)]);
  const gl = find('http-4KiB', 'get_large_vs_echo_get');
  if (gl) row(['4 KiB GET, working set larger than the read cache', fig(find('http-4KiB', 'get_large_rps')), `uWS 4 KiB GET ${fig(find('http-4KiB', 'echo_get_rps'))}`, pct(gl), '>= 70%', pass(gl)]);
}
{
  const r = find('http-stream-1GiB', 'put_vs_write_fsync');
  row(['1 GiB PUT (chunked)', fig(find('http-stream-1GiB', 'put_chunked'), 0), `write+fsync ${fig(find('http-stream-1GiB', 'plain_write_fsync'), 0)}`, pct(r), '>= 85%', pass(r)]);
  const sink = find('http-stream-1GiB', 'put_vs_uws_sink');
  if (sink) row(['1 GiB PUT vs same client into a bare uWS sink', fig(find('http-stream-1GiB', 'put_chunked'), 0), `uWS sink ${fig(find('http-stream-1GiB', 'uws_sink_chunked'), 0)}`, pct(sink), '(reference)', '-']);
  const g = find('http-stream-1GiB', 'get_vs_read');
  row(['1 GiB GET (cold cache, curl)', fig(find('http-stream-1GiB', 'get'), 0), `read ${fig(find('http-stream-1GiB', 'plain_read'), 0)}`, pct(g), '>= 85%', pass(g)]);
  const w = find('http-stream-1GiB', 'get_vs_read_warm');
  row(['1 GiB GET (warm cache, curl)', fig(find('http-stream-1GiB', 'get_warm'), 0), `read ${fig(find('http-stream-1GiB', 'plain_read_warm'), 0)}`, pct(w), '(reference)', '-']);
  const rss = find('http-stream-1GiB', 'put_peak_rss_growth');
  row(['Peak RSS growth during 1 GiB PUT', fig(rss, 1), '-', '-', '<= 64 MiB', pass(rss)]);
}
{
  const put = find('http-ndjson-1GiB', 'put_ndjson_vs_raw');
  row(['1 GiB NDJSON put stream', fig(find('http-ndjson-1GiB', 'put_ndjson'), 0), `raw chunked PUT ${fig(find('http-ndjson-1GiB', 'put_raw'), 0)}`, pct(put), '>= 70%', pass(put)]);
  const get = find('http-ndjson-1GiB', 'get_ndjson_vs_raw');
  row(['1 GiB NDJSON get stream (warm, curl)', fig(find('http-ndjson-1GiB', 'get_ndjson_warm'), 0), `raw GET ${fig(find('http-ndjson-1GiB', 'get_raw_warm'), 0)}`, pct(get), '>= 70%', pass(get)]);
  const gput = find('grpc', 'put_stream_vs_raw');
  row(['1 GiB gRPC PutStream', fig(find('grpc', 'put_stream_grpc'), 0), `raw chunked PUT ${fig(find('grpc', 'put_raw'), 0)}`, pct(gput), '>= 70%', pass(gput)]);
  const gget = find('grpc', 'get_stream_vs_raw');
  row(['1 GiB gRPC GetStream (warm)', fig(find('grpc', 'get_stream_grpc_warm'), 0), `raw GET ${fig(find('grpc', 'get_raw_warm'), 0)}`, pct(gget), '>= 70%', pass(gget)]);
  const unary = find('grpc', 'grpc_unary_vs_http_raw');
  row(['4 KiB gRPC unary Put', fig(find('grpc', 'grpc_unary_put_4KiB')), `HTTP raw PUT ${fig(find('grpc', 'http_raw_put_4KiB'))}`, pct(unary), '>= 60%', pass(unary)]);
  for (const op of ['put', 'get']) {
    const r = find('metrics-auth-overhead', `${op}_metrics_auth_vs_off`);
    row([`4 KiB ${op.toUpperCase()}, metrics + auth on`, fig(find('metrics-auth-overhead', `${op}_metrics_auth_rps`)), `both off ${fig(find('metrics-auth-overhead', `${op}_off_rps`))}`, pct(r), '>= 95%', pass(r)]);
  }
}
{
  const s = find('startup', 'ready_ms');
  const blobs = s ? num(s.blobs as number) : '1M';
  row([`Start-up to /healthz 200, ${blobs} blobs`, fig(s), `empty data dir ${fig(find('startup', 'ready_ms_empty'))}`, '-', '<= 1000 ms', pass(s)]);
}
{
  const r = find('scale', 'tiny_put_n_vs_0');
  const n = find('scale', 'tiny_put_rps_at_n');
  const blobs = n ? num(n.blobs as number) : 'N';
  row([`100 B PUT at ${blobs} blobs`, fig(n), `at 0 blobs ${fig(find('scale', 'tiny_put_rps_at_0'))}`, pct(r), '>= 90%', pass(r)]);
  const l = find('scale', 'list_1000_ms_worst_prefix');
  const ready = find('scale', 'ready_ms_at_n');
  row([`List 1000 ids at ${blobs} blobs (worst prefix median)`, fig(l, 2), `start-up at ${blobs}: ${fig(ready)}`, '-', '<= 5 ms', pass(l)]);
}

const micro: string[][] = [];
for (const size of ['4KiB', '1MiB']) {
  const inl = find('hash-blake3', `inline_${size}`);
  const ser = find('hash-blake3', `pool_serial_copy_${size}`);
  const pip = find('hash-blake3', `pool_x64_copy_${size}`);
  const sh = find('hash-blake3', `pool_x64_shared_${size}`);
  micro.push([`BLAKE3 ${size}: inline / pool serial / pool x64 copy / pool x64 shared`, [inl, ser, pip, sh].map((l) => num(l?.value, 1)).join(' / ') + ' µs/op']);
}
{
  const pool = find('hash-blake3', 'pool_serial_shared_64B');
  const never = (l: Line | undefined): string => (l === undefined ? '-' : l.value === null ? 'never' : `${num(l.value)} B`);
  const be = find('hash-blake3', 'break_even_pool_x64_copy');
  const bes = find('hash-blake3', 'break_even_pool_x64_shared');
  const mt = find('hash-blake3', 'break_even_main_thread_copy');
  const mts = find('hash-blake3', 'break_even_main_thread_shared');
  const busy = (mode: string, size: string): string => num(find('hash-blake3', `pool_x64_${mode}_${size}_main_thread`)?.value, 1);
  micro.push(['Pool round trip (64 B, serial, shared buffer)', `${num(pool?.value, 1)} µs`]);
  micro.push(['Event-loop time per pool task, x64 copy 4KiB / 1MiB, shared 4KiB / 1MiB', `${busy('copy', '4KiB')} / ${busy('copy', '1MiB')}, ${busy('shared', '4KiB')} / ${busy('shared', '1MiB')} µs`]);
  micro.push(['Break-even size, event-loop time: pool vs inline (copy / shared)', `${never(mt)} / ${never(mts)}`]);
  micro.push(['Break-even size, wall time per op: pool x64 vs inline (copy / shared)', `${never(be)} / ${never(bes)}`]);
}
{
  const c = [1, 16, 256].map((k) => find('segment-append', `put_inline_4KiB_c${k}`));
  micro.push(['Segment append + group commit, 4 KiB putInline at 1 / 16 / 256 in flight', c.map((l) => num(l?.value)).join(' / ') + ' ops/s (durable)']);
}
{
  const m = ['batched_async', 'batched_async_flushed', 'awaited_single', 'awaited_single_flushed', 'putSync'].map((k) => find('lmdb-index-put', k));
  micro.push(['LMDB put: batched async / batched + flushed / awaited single / awaited + flushed / putSync', m.map((l) => num(l?.value)).join(' / ') + ' puts/s']);
}
{
  const b = ['buffer_toString_write', 'native_portable', 'native_avx2', 'native_avx512vbmi'].map((k) => find('http-ndjson-1GiB', `base64_1MiB_${k}`));
  micro.push(['base64 of 1 MiB into a buffer, median: Buffer toString + write / native portable / avx2 / avx512vbmi', b.map((l) => num(l?.p50_us as number | undefined, 1)).join(' / ') + ' µs']);
}
out.push('', '### Micro-benchmarks (tinybench)', '');
row(['Benchmark', 'Result']);
row(['---', '---']);
for (const m of micro) row(m);

for (const name of ['put-4KiB', 'get-4KiB', 'put-1GiB']) {
  const bench = `profile-${name}`;
  const prof = all.filter((l) => l.bench === bench && l.metric === 'self_time').slice(0, 10);
  if (!prof.length) continue;
  const info = find(bench, 'load_under_profiler');
  const rate = info?.rps !== undefined ? `${num(info.rps as number)} req/s` : info?.mbps !== undefined ? `${num(info.mbps as number)} MB/s` : '-';
  out.push('', `### Node main thread, ${name} (--cpu-prof, ${rate} under the profiler): top self time`, '');
  row(['Function', 'Where', 'Self time']);
  row(['---', '---', '---:']);
  for (const p of prof) row([String(p.fn), String(p.where || '-'), `${num(p.value, 1)}%`]);
}

for (const [name, lines] of files) {
  if (OWN.includes(name)) continue;
  const tablePath = join(RESULTS, `${name}.table`);
  const table = existsSync(tablePath) ? readFileSync(tablePath, 'utf8').trim() : '';
  if (lines.length === 0 && !table) continue;
  out.push('', `### ${name} (from bench/${name}/run.sh)`, '');
  if (table) {
    out.push('```', table, '```');
    continue;
  }
  row(['Bench', 'Figure']);
  row(['---', '---']);
  for (const l of lines.slice(0, 60)) {
    const { bench, metric, value, unit, ...rest } = l;
    const head = typeof metric === 'string' ? `${metric} = ${num(value, Number.isInteger(value) ? 0 : 2)} ${unit ?? ''}` : '';
    const tail = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === 'number' ? num(v, Number.isInteger(v) ? 0 : 3) : JSON.stringify(v)}`).join(', ');
    row([bench, [head, tail].filter(Boolean).join('; ')]);
  }
  if (lines.length > 60) out.push(`(${lines.length - 60} more lines in bench/results/${name}.jsonl)`);
}

const text = out.join('\n') + '\n';
writeFileSync(join(RESULTS, 'summary.md'), text);
process.stdout.write(text);

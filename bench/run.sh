#!/usr/bin/env bash
# `make bench` (after `make build`): the node benches (bench/node), then bench/ec/run.sh and
# bench/orders/run.sh when they exist. Each step's JSON lines go to bench/results/<step>.jsonl
# (and to stdout), its progress to bench/results/<step>.log; a failed step is reported and the
# others still run. Ends with the markdown table (also bench/results/summary.md).
#
#   make bench                                  # everything, scale step at 10M blobs
#   BENCH_SCALE_BLOBS=1000000 make bench        # quicker scale step
#   BENCH_ONLY=http-4KiB,profile bash bench/run.sh
# Knobs: BENCH_RUN_SECONDS (10), BENCH_REPEATS (3), BENCH_CONNECTIONS (64), BENCH_WRK_THREADS (2),
# BENCH_STARTUP_BLOBS (1M), BENCH_SCALE_BLOBS (10M), BENCH_SCALE_TIME_LIMIT_S (1800),
# BENCH_STREAM_BYTES (1 GiB), BENCH_MICRO_MS (1000), CRASH_CYCLES (100).
set -uo pipefail
cd "$(dirname "$0")/.."

RESULTS=bench/results
mkdir -p "$RESULTS"
export BENCH_SCALE_BLOBS="${BENCH_SCALE_BLOBS:-10000000}"
ONLY=",${BENCH_ONLY:-},"

# wrk from Debian is the one load client of every HTTP figure.
if ! command -v wrk >/dev/null; then
  echo "installing wrk" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq wrk; } >&2 || echo "wrk could not be installed: HTTP steps will fail" >&2
fi
[ -f dist/bench/node/lib.js ] || npm run --silent build

failed=()
wanted() { [ "$ONLY" = ",," ] || [[ "$ONLY" == *",$1,"* ]]; }

# step NAME TIMEOUT_S COMMAND...: stdout printed and its JSON lines kept in RESULTS/NAME.jsonl
# (lines starting with "#" in RESULTS/NAME.table, for the summary); stderr -> RESULTS/NAME.log.
step() {
  local name=$1 limit=$2; shift 2
  wanted "$name" || return 0
  echo "== $name ($(date -u +%H:%M:%S) UTC)" >&2
  local t0=$SECONDS
  timeout --signal=TERM --kill-after=30 "$limit" "$@" 2> >(tee "$RESULTS/$name.log" >&2) | tee "$RESULTS/$name.out"
  local rc=${PIPESTATUS[0]}
  grep '^{' "$RESULTS/$name.out" > "$RESULTS/$name.jsonl" || true
  # The CPU the step ran on, for docs/benchmarks.md (model, and the widest SIMD it has).
  { grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //' | tr -d '\n'
    echo -n " (family $(grep -m1 'cpu family' /proc/cpuinfo | sed 's/.*: //') model $(grep -m1 '^model\s' /proc/cpuinfo | sed 's/.*: //')), $(nproc) CPUs, "
    if grep -qw avx512f /proc/cpuinfo; then echo AVX-512; elif grep -qw avx2 /proc/cpuinfo; then echo AVX2; else echo no AVX2; fi; } > "$RESULTS/$name.cpu"

  grep '^#' "$RESULTS/$name.out" > "$RESULTS/$name.table" || true
  rm -f "$RESULTS/$name.out"
  if [ $rc -ne 0 ]; then
    echo "!! $name failed (exit $rc after $((SECONDS - t0)) s; see $RESULTS/$name.log)" >&2
    failed+=("$name")
  else
    echo "== $name done in $((SECONDS - t0)) s" >&2
  fi
}

N=dist/bench/node
step hash              300  node $N/hash-inline-vs-pool.bench.js
step segment-append    300  node $N/segment-append-group-commit.bench.js
step lmdb-index-put    300  node $N/lmdb-index-put.bench.js
# The index commit of a group of small puts: a transaction on the event loop, or gathered for lmdb-js's write thread.
step index-commit      300  node $N/index-commit.bench.js
step http-4KiB         900  node $N/http-4KiB-put-get.bench.js
# The access log's cost: 4 KiB PUT/GET with it off, with X-Request-Id echoed, and at debug.
step access-log-4KiB   600  node $N/access-log-4KiB.bench.js
step http-stream-1GiB  900  node $N/http-stream-1GiB.bench.js
# TLS against plain text on the same build: 4 KiB PUT/GET and a 1 GiB stream.
step tls               900  node $N/tls.bench.js
# Metrics: the Recorder's cost per call against prom-client's; metrics + auth on vs off (4 KiB).
step metrics-recorder  300  node dist/bench/metrics/recorder.bench.js
step metrics-overhead  1800 node dist/bench/metrics/overhead.bench.js
step http-ndjson-1GiB  900  node $N/ndjson-1GiB.bench.js
# gRPC against the raw HTTP path of the same node: unary 4 KiB Put/s, 1 GiB PutStream/GetStream.
step grpc              1200 node dist/bench/grpc/grpc-vs-http.bench.js
step auth-gate         300  node dist/bench/auth/gate-check.bench.js
step auth-http         900  node dist/bench/auth/http-get-auth.bench.js
step startup           1200 node $N/startup-1M.bench.js
step profile           600  node $N/profile.js
# Where the 4 KiB PUT and GET allocate, by site (V8's sampling heap profiler).
step alloc-profile     300  node $N/alloc-profile.js
step scale             "$(( ${BENCH_SCALE_TIME_LIMIT_S:-1800} + 900 ))" node $N/scale-10M.bench.js
# The cluster: ring balance and movement; REPLICA3 PUT/s, time to three copies and remote GET/s
# against their single-node references; convergence after 5 joins, leave migration, anti-entropy scan.
step cluster-ring       600  node dist/bench/cluster/ring.bench.js
step cluster-replicate  1800 node dist/bench/cluster/replicate.bench.js
step cluster-membership 1800 node dist/bench/cluster/membership.bench.js
step cluster-repair     1800 node dist/bench/cluster/repair.bench.js
step client-put         900  node dist/bench/client/put-jobs.bench.js
# Erasure coding: EC42 1 GiB PUT/GET on 6 nodes vs NONE on one, degraded GET, 64 MiB objects, the scrubber.
step cluster-ec         2400 node dist/bench/cluster/ec.bench.js
# Fault sequences at length: 20 seeded real-process runs and 20,000 simulated ones (make test: 2 and 300).
step cluster-faults     3600 env FAULT_RUNS="${FAULT_RUNS:-20}" SIM_RUNS="${SIM_RUNS:-20000}" npx vitest run --config test/vitest.config.ts test/cluster/faults.test.ts test/cluster/membership-sim.test.ts
# The crash-consistency test at full length: 100 SIGKILL cycles (make test runs 20).
step crash-100         3600 env CRASH_CYCLES="${CRASH_CYCLES:-100}" npx vitest run --config test/vitest.config.ts test/crash.test.ts
# Hostile input at length: the fuzz suites for FUZZ_SECONDS (600) with a fresh seed, slowloris, overload.
step fuzz              3600 bash bench/fuzz/run.sh
[ -f bench/ec/run.sh ] && step ec 3600 bash bench/ec/run.sh
[ -f bench/orders/run.sh ] && step orders 3600 bash bench/orders/run.sh

echo >&2
node $N/summary.js
node dist/bench/benchmarks-doc.js
if [ ${#failed[@]} -gt 0 ]; then
  echo "failed steps: ${failed[*]}" >&2
  exit 1
fi

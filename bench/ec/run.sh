#!/usr/bin/env bash
# EC benchmarks (called by `make bench`): our kernel beside ISA-L (C harness, same buffers, same
# run) and beside @ronomon/reed-solomon (Node). Prints JSON lines, then a table (lines with "#").
# Results are kept in bench/results/ec-<time>.jsonl.
#   EC_BENCH_REPS=7 EC_BENCH_MIN_MS=40 bash bench/ec/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS="${EC_BENCH_REPS:-7}"
MIN_MS="${EC_BENCH_MIN_MS:-40}"
BUILD=native/build/bench

# ISA-L from Debian (apt-get update once, only when the headers are missing).
if [ ! -f /usr/include/isa-l/erasure_code.h ]; then
  echo "installing libisal-dev" >&2
  if [ "$(id -u)" = 0 ]; then apt-get update -qq >&2 && apt-get install -y -qq libisal-dev >&2
  else sudo apt-get update -qq >&2 && sudo apt-get install -y -qq libisal-dev >&2; fi
fi

make -s -C native all lib >&2
mkdir -p "$BUILD" bench/results
gcc -O2 -Inative/src bench/ec/harness.c native/build/Release/libblobstore_ec.a -lisal -lpthread -o "$BUILD/harness"

# @ronomon/reed-solomon: npm here runs no install scripts, so build its addon outside node_modules.
RONOMON_SRC=node_modules/@ronomon/reed-solomon
RONOMON="$BUILD/ronomon/build/Release/binding.node"
if [ -d "$RONOMON_SRC" ] && [ ! -f "$RONOMON" ]; then
  mkdir -p "$BUILD/ronomon"
  cp "$RONOMON_SRC/binding.c" "$RONOMON_SRC/binding.gyp" "$RONOMON_SRC/package.json" "$BUILD/ronomon/"
  NODE_GYP="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
  (cd "$BUILD/ronomon" && node "$NODE_GYP" rebuild --nodedir=/usr >&2) || echo "ronomon build failed; skipping it" >&2
fi

[ -f dist/bench/ec/node.bench.js ] && [ -f dist/bench/ec/table.js ] || npm run --silent build >&2

OUT="bench/results/ec-$(date -u +%Y%m%dT%H%M%SZ).jsonl"
"$BUILD/harness" "$REPS" "$MIN_MS" | tee "$OUT"
node dist/bench/ec/node.bench.js "$( [ -f "$RONOMON" ] && readlink -f "$RONOMON" || echo '')" "$REPS" "$MIN_MS" | tee -a "$OUT"
node dist/bench/ec/table.js "$OUT" | tee "$OUT.summary"
echo "# results: $OUT" >&2

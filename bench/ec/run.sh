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
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq libisal-dev; } >&2 || echo "libisal-dev could not be installed" >&2
fi

make -s -C native all lib >&2
mkdir -p "$BUILD" bench/results
HARNESS=""
if [ -f /usr/include/isa-l/erasure_code.h ]; then
  gcc -O2 -Inative/src bench/ec/harness.c native/build/Release/libblobstore_ec.a -lisal -lpthread -o "$BUILD/harness"
  HARNESS="$BUILD/harness"
else
  echo "no ISA-L: skipping the C harness (the table needs it; the Node lines still print)" >&2
fi

# @ronomon/reed-solomon, for the comparison only. It is no dependency of the project (its install
# needs node-gyp, which a fresh `npm ci` must not): it goes into bench/.peer without its install
# script and is built here against the headers of the Node that runs. Any failure skips it.
PEER=bench/.peer
RONOMON_SRC="$PEER/node_modules/@ronomon/reed-solomon"
RONOMON="$BUILD/ronomon/build/Release/binding.node"
if [ ! -f "$RONOMON" ]; then
  [ -d "$RONOMON_SRC" ] || npm install --prefix "$PEER" --no-save --no-package-lock --ignore-scripts --no-audit --no-fund \
    @ronomon/reed-solomon@6.0.0 >&2 || echo "@ronomon/reed-solomon could not be installed; skipping the comparison" >&2
  NODE_PREFIX="$(node -p "require('path').resolve(process.execPath, '../..')")"
  if [ ! -d "$RONOMON_SRC" ]; then
    :
  elif [ ! -f "$NODE_PREFIX/include/node/node_api.h" ]; then
    echo "no Node headers in $NODE_PREFIX/include/node; skipping the @ronomon/reed-solomon comparison" >&2
  else
    mkdir -p "$BUILD/ronomon"
    cp "$RONOMON_SRC/binding.c" "$RONOMON_SRC/binding.gyp" "$RONOMON_SRC/package.json" "$BUILD/ronomon/"
    NODE_GYP="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
    (cd "$BUILD/ronomon" && node "$NODE_GYP" rebuild --nodedir="$NODE_PREFIX" >&2) || echo "@ronomon/reed-solomon did not build; skipping the comparison" >&2
  fi
fi

[ -f dist/bench/ec/node.bench.js ] && [ -f dist/bench/ec/table.js ] || npm run --silent build >&2

OUT="bench/results/ec-$(date -u +%Y%m%dT%H%M%SZ).jsonl"
: > "$OUT"
[ -z "$HARNESS" ] || "$HARNESS" "$REPS" "$MIN_MS" | tee -a "$OUT"
node dist/bench/ec/node.bench.js "$( [ -f "$RONOMON" ] && readlink -f "$RONOMON" || echo '')" "$REPS" "$MIN_MS" | tee -a "$OUT"
node dist/bench/ec/table.js "$OUT" | tee "$OUT.summary"
echo "# results: $OUT" >&2

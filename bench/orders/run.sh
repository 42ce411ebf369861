#!/usr/bin/env bash
# Orders benches (called by `make bench`): create/s and get/s of the orders service at 32
# connections (wrk, one thread, loopback), and the wall time of `blobstore deploy dev` until all
# 3 nodes + the orders service answer /healthz. Prints JSON lines on stdout, progress on stderr.
#   ORDERS_BENCH_SECONDS=10 ORDERS_BENCH_CONNECTIONS=32 ORDERS_BENCH_DEPLOYS=3 bash bench/orders/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_RUN="${ORDERS_BENCH_SECONDS:-10}"
CONNS="${ORDERS_BENCH_CONNECTIONS:-32}"
DEPLOYS="${ORDERS_BENCH_DEPLOYS:-3}"
LUA=bench/orders/lua
BIN=dist/src/main.js

if ! command -v wrk >/dev/null; then
  echo "installing wrk" >&2
  if [ "$(id -u)" = 0 ]; then apt-get update -qq >&2 && apt-get install -y -qq wrk >&2
  else sudo apt-get update -qq >&2 && sudo apt-get install -y -qq wrk >&2; fi
fi
[ -f "$BIN" ] || npm run --silent build >&2

mkdir -p bench/results
OUT="bench/results/orders-$(date -u +%Y%m%dT%H%M%SZ).jsonl"
exec > >(tee "$OUT")
WORK="$(mktemp -d /tmp/blobstore-bench-orders-XXXXXX)"
ORDERS_PID=""
cleanup() {
  if [ -n "$ORDERS_PID" ]; then kill "$ORDERS_PID" 2>/dev/null || true; wait "$ORDERS_PID" 2>/dev/null || true; fi
  XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" node "$BIN" down dev --region us-east-1 >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }

# emit <metric> <unit> <WRKJSON line>: requests/s from wrk's own count and duration.
emit_wrk() {
  node -e "
    const [metric, line, conns] = process.argv.slice(1);
    const r = JSON.parse(line.replace(/^WRKJSON /, ''));
    const perS = r.requests / (r.duration_us / 1e6);
    console.log(JSON.stringify({ bench: 'orders-http', metric, value: Math.round(perS), unit: 'req/s', connections: Number(conns),
      p50_us: r.p50_us, p99_us: r.p99_us, non2xx: r.non2xx, errors: r.errors }));" "$1" "$2" "$CONNS"
}

# --- orders HTTP ---------------------------------------------------------------------------
PORT="$(free_port)"
node "$BIN" orders serve --orders-addr "127.0.0.1:$PORT" --orders-data-dir "$WORK/orders" >"$WORK/orders.log" 2>&1 &
ORDERS_PID=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.05; done
URL="http://127.0.0.1:$PORT"

echo "orders create: wrk -t1 -c$CONNS -d${SECONDS_RUN}s POST /orders" >&2
LINE="$(wrk -t1 -c"$CONNS" -d"${SECONDS_RUN}s" -s "$LUA/create.lua" "$URL/orders" | grep '^WRKJSON')"
emit_wrk create_per_s "$LINE"

IDS="$(curl -s "$URL/orders?status=pending&limit=1" >/dev/null; node -e "
  fetch('$URL/orders', {method:'POST', headers:{'content-type':'application/json'}, body:'{\"amount\":1,\"currency\":\"USD\"}'})
    .then(r => r.json()).then(o => console.log(o.id - 1))")"
echo "orders get: wrk -t1 -c$CONNS -d${SECONDS_RUN}s GET /orders/{1..$IDS}" >&2
LINE="$(ORDERS_BENCH_IDS="$IDS" wrk -t1 -c"$CONNS" -d"${SECONDS_RUN}s" -s "$LUA/get.lua" "$URL" | grep '^WRKJSON')"
emit_wrk get_per_s "$LINE"

kill "$ORDERS_PID"; wait "$ORDERS_PID" 2>/dev/null || true; ORDERS_PID=""

# --- deploy dev: wall time to healthy ------------------------------------------------------
export XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config"
BASE=""
for _ in $(seq 1 50); do
  CANDIDATE=$(( 20000 + (RANDOM % 400) * 100 ))
  if node -e "
    const net = require('net'); const ports = [0,1,2,99].map(i => $CANDIDATE + i);
    Promise.all(ports.map(p => new Promise(ok => { const s = net.createServer().once('error', () => ok(false)).listen(p, '127.0.0.1', () => s.close(() => ok(true))); })))
      .then(r => process.exit(r.every(Boolean) ? 0 : 1));"; then BASE=$CANDIDATE; break; fi
done
[ -n "$BASE" ] || { echo "no free port block for the deploy bench" >&2; exit 1; }
node "$BIN" config set stacks.dev.basePort --value "$BASE" >/dev/null
for i in $(seq 1 "$DEPLOYS"); do
  START=$(date +%s%N)
  node "$BIN" deploy dev --region us-east-1 >"$WORK/deploy.out" 2>&1 || { cat "$WORK/deploy.out" >&2; exit 1; }
  END=$(date +%s%N)
  echo "{\"bench\":\"orders-deploy\",\"metric\":\"deploy_dev_to_healthy_ms\",\"value\":$(( (END - START) / 1000000 )),\"unit\":\"ms\",\"services\":4,\"run\":$i,\"cold\":true}"
  node "$BIN" down dev --region us-east-1 --purge >/dev/null
done
node "$BIN" deploy dev --region us-east-1 >/dev/null 2>&1
START=$(date +%s%N)
node "$BIN" deploy dev --region us-east-1 >"$WORK/deploy.out" 2>&1
END=$(date +%s%N)
echo "{\"bench\":\"orders-deploy\",\"metric\":\"redeploy_unchanged_ms\",\"value\":$(( (END - START) / 1000000 )),\"unit\":\"ms\",\"services\":4}"

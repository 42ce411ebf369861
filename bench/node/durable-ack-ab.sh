#!/usr/bin/env bash
# 4 KiB durable PUT/s with --durable-ack index against log (the default), in alternating rounds on
# the same machine (wrk, 64 connections, 3 s warm-up + 10 s); one JSON line per round, then the
# medians and their ratio. Run after `make build`: bash bench/node/durable-ack-ab.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
declare -A all=([index]="" [log]="")
for r in $(seq "$rounds"); do
  for mode in index log; do
    dir=$(mktemp -d /tmp/blobstore-bench-ack-XXXXXX)
    port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
    node dist/src/cli/main.js serve --data-dir "$dir" --listen "127.0.0.1:$port" --metrics-addr '' --grpc-addr '' --durable-ack "$mode" --log-level warn >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
    wrk -t 2 -c 64 -d 3s -s bench/node/lua/post-unique.lua "http://127.0.0.1:$port" -- 4096 "w$r$mode" >/dev/null
    rps=$(wrk -t 2 -c 64 -d 10s -s bench/node/lua/post-unique.lua "http://127.0.0.1:$port" -- 4096 "m$r$mode" | awk '/Requests\/sec/ {print $2}')
    echo "{\"bench\":\"durable-ack\",\"metric\":\"put_rps\",\"mode\":\"$mode\",\"round\":$r,\"value\":$rps,\"unit\":\"req/s\"}"
    all[$mode]+="$rps "
    kill "$pid"; wait "$pid" 2>/dev/null || true; rm -rf "$dir"
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mi=$(echo "${all[index]}" | median); ml=$(echo "${all[log]}" | median)
echo "{\"bench\":\"durable-ack\",\"metric\":\"put_rps_median\",\"index\":$mi,\"log\":$ml,\"log_vs_index\":$(awk -v a="$ml" -v b="$mi" 'BEGIN{printf "%.3f", a/b}')}"

#!/usr/bin/env bash
# 4 KiB durable PUT/s of a fresh node with one setting at two values, in alternating rounds on the
# same machine (wrk, 64 connections): PRELOAD seconds of PUTs first to grow the node (default 0),
# then 3 s warm-up + 10 s measured. One JSON line per round (with the event loop's and the whole
# process's CPU per PUT, from /proc), then the medians and their ratio (b over a).
# Run after `make build`:
#   bash bench/node/put-ab.sh log-writes buffered direct [rounds]
#   PRELOAD=30 bash bench/node/put-ab.sh log-writes buffered direct 3
set -euo pipefail
cd "$(dirname "$0")/../.."
flag=$1 a=$2 b=$3 rounds=${4:-3} preload=${PRELOAD:-0}
declare -A all=([$a]="" [$b]="")
ticks() { awk '{print $14 + $15}' "$1"; }
for r in $(seq "$rounds"); do
  for value in "$a" "$b"; do
    dir=$(mktemp -d /tmp/blobstore-bench-ab-XXXXXX)
    port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
    node dist/src/main.js serve --data-dir "$dir" --listen "127.0.0.1:$port" --metrics-addr '' --grpc-addr '' "--$flag" "$value" --log-level warn >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
    if [ "$preload" -gt 0 ]; then wrk -t 2 -c 64 -d "${preload}s" -s bench/node/lua/post-unique.lua "http://127.0.0.1:$port" -- 4096 "p$r$value" >/dev/null; fi
    wrk -t 2 -c 64 -d 3s -s bench/node/lua/post-unique.lua "http://127.0.0.1:$port" -- 4096 "w$r$value" >/dev/null
    loop0=$(ticks "/proc/$pid/task/$pid/stat"); all0=$(ticks "/proc/$pid/stat")
    out=$(wrk -t 2 -c 64 -d 10s -s bench/node/lua/post-unique.lua "http://127.0.0.1:$port" -- 4096 "m$r$value")
    loop1=$(ticks "/proc/$pid/task/$pid/stat"); all1=$(ticks "/proc/$pid/stat")
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    hz=$(getconf CLK_TCK)
    us() { awk -v t="$1" -v hz="$hz" -v rps="$rps" 'BEGIN{printf "%.1f", t / hz * 1e6 / (rps * 10)}'; }
    echo "{\"bench\":\"put-ab\",\"metric\":\"put_rps\",\"setting\":\"$flag\",\"value_of_setting\":\"$value\",\"preload_s\":$preload,\"round\":$r,\"value\":$rps,\"unit\":\"req/s\",\"event_loop_cpu_us_per_put\":$(us $((loop1 - loop0))),\"process_cpu_us_per_put\":$(us $((all1 - all0)))}"
    all[$value]+="$rps "
    kill "$pid"; wait "$pid" 2>/dev/null || true; rm -rf "$dir"
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ma=$(echo "${all[$a]}" | median); mb=$(echo "${all[$b]}" | median)
echo "{\"bench\":\"put-ab\",\"metric\":\"put_rps_median\",\"setting\":\"$flag\",\"preload_s\":$preload,\"$a\":$ma,\"$b\":$mb,\"${b}_vs_${a}\":$(awk -v x="$mb" -v y="$ma" 'BEGIN{printf "%.3f", x/y}')}"

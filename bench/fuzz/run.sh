#!/usr/bin/env bash
# The hostile-input suites at length: the fuzz suites (test/fuzz) with a long budget and a fresh
# seed, and the slowloris/overload suites (test/load). Prints one JSON line per suite, a table
# (lines starting with "#", for bench/run.sh's summary) and a last JSON line with the totals.
#
#   bash bench/fuzz/run.sh                           # FUZZ_SECONDS=600, seed from the clock
#   FUZZ_SEED=20261123 FUZZ_SECONDS=60 bash bench/fuzz/run.sh
#
# A failure names FUZZ_SEED: rerun with it (and FUZZ_SECONDS at least as long) to replay.
set -uo pipefail
cd "$(dirname "$0")/../.."

export FUZZ_SECONDS="${FUZZ_SECONDS:-600}"
export FUZZ_SEED="${FUZZ_SEED:-$(( $(date +%s) % 2147483647 ))}"
FUZZ_SUMMARY="$(mktemp)"
export FUZZ_SUMMARY
trap 'rm -f "$FUZZ_SUMMARY"' EXIT
[ -f dist/src/main.js ] || npm run --silent build >&2

echo "fuzz: FUZZ_SEED=$FUZZ_SEED FUZZ_SECONDS=$FUZZ_SECONDS" >&2
t0=$SECONDS
npx vitest run --config test/vitest.config.ts test/fuzz/ test/load/ >&2
rc=$?

node - "$FUZZ_SUMMARY" "$rc" "$((SECONDS - t0))" <<'JS'
const { readFileSync } = require('node:fs');
const [file, rc, seconds] = process.argv.slice(2);
const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
for (const l of lines) console.log(JSON.stringify({ bench: 'fuzz', ...l }));
const fuzz = lines.filter((l) => l.runs !== undefined);
const load = lines.filter((l) => l.runs === undefined);
console.log('# Fuzz suite           | seconds | runs   | requests | failed');
for (const l of fuzz) {
  console.log(`# ${l.suite.padEnd(20)} | ${String(Math.round(l.seconds)).padStart(7)} | ${String(l.runs).padStart(6)} | ${String(l.requests).padStart(8)} | ${l.failed ? 'FAILED' : 'no'}`);
}
for (const l of load) {
  const { suite, ...rest } = l;
  console.log(`# ${suite.padEnd(20)} | ${Object.entries(rest).map(([k, v]) => `${k} ${typeof v === 'number' ? Math.round(v * 10) / 10 : JSON.stringify(v)}`).join(', ')}`);
}
const requests = fuzz.reduce((n, l) => n + l.requests, 0);
console.log(JSON.stringify({ bench: 'fuzz', metric: 'total', seed: Number(process.env.FUZZ_SEED), budgetSeconds: Number(process.env.FUZZ_SECONDS), seconds: Number(seconds), suites: lines.length, requests, failedSuites: fuzz.filter((l) => l.failed).map((l) => l.suite), exitCode: Number(rc) }));
JS
exit $rc

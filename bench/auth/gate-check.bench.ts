/**
 * What bearer authentication costs per request: TokenGate.check with 1, 10, 100 and 1000 hashed
 * tokens in the file (every entry is compared each time, by design), for a token that passes and
 * one that is refused (401: the error is built and thrown), beside its parts (parsing the header,
 * SHA-256 of the token) and the open gate.
 *
 *   node dist/bench/auth/gate-check.bench.js        (BENCH_MICRO_MS=200 for a quick run)
 */
import { createHash } from 'node:crypto';
import { bearerToken } from '../../src/auth/bearer.js';
import { OPEN_GATE } from '../../src/auth/gate.js';
import { parseTokenFile } from '../../src/auth/token-file.js';
import { TokenGate } from '../../src/auth/tokens.js';
import { emit, round } from '../node/lib.js';
import { type MicroTask, runMicro } from '../node/micro.js';

const BENCH = 'auth-gate-check';
const SIZES = [1, 10, 100, 1000];

const token = (i: number): string => `bench-token-${i.toString().padStart(6, '0')}-0123456789abcdef0123456789`;
const sha256Hex = (t: string): string => createHash('sha256').update(t).digest('hex');

function gateOf(size: number): TokenGate {
  const tokens = Array.from({ length: size }, (_, i) => ({ name: `t${i}`, sha256: sha256Hex(token(i)), scopes: ['read'] }));
  return new TokenGate(parseTokenFile(JSON.stringify({ tokens })));
}

async function main(): Promise<void> {
  const header = `Bearer ${token(0)}`;
  const refused = `Bearer ${token(999_999)}`;
  const tasks: MicroTask[] = [
    { name: 'open gate', fn: () => OPEN_GATE.check(header, 'read') },
    { name: 'parse header', fn: () => bearerToken(header) },
    { name: 'sha256 of token', fn: () => createHash('sha256').update(token(0), 'utf8').digest() },
  ];
  for (const size of SIZES) {
    const gate = gateOf(size);
    // The last entry matches: with a full scan its position does not matter, which this shows.
    const last = `Bearer ${token(size - 1)}`;
    tasks.push({ name: `check pass ${size} tokens`, fn: () => gate.check(last, 'read') });
    tasks.push({
      name: `check 401 ${size} tokens`,
      fn: () => {
        try {
          gate.check(refused, 'read');
        } catch {
          return;
        }
        throw new Error('expected a 401');
      },
    });
  }
  for (const r of await runMicro(tasks)) {
    emit({ bench: BENCH, metric: r.name.replaceAll(' ', '_'), value: round(r.usPerOp, 3), unit: 'us/op', ops_per_s: round(r.opsPerS, 0), p50_us: round(r.usPerOpP50, 3), rme_pct: round(r.rmePercent, 1) });
  }
}

await main();

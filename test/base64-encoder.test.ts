/**
 * The base64 encoder into a buffer (src/http/base64-encoder.ts, native/src/b64.c) writes exactly
 * Buffer.from(x).toString('base64') on every path this machine runs: every length 0..3*64+2 at
 * several source and destination offsets, and seeded random sizes up to 1 MiB at odd offsets.
 * The seed is printed; BASE64_TEST_SEED=<n> repeats a run. The NDJSON get stream built with it is
 * byte-identical to the framing built from Buffer's strings, on the widest path and the portable one.
 */
import { afterAll, describe, expect, it } from 'vitest';

import { base64Length, base64Path, base64Paths, encodeBase64Into, setBase64Path } from '../src/http/base64-encoder.js';
import { rng } from './ec/reference.js';
import { patternBytes, putRaw } from './helpers/blobs.js';
import { startNode } from './helpers/node-process.js';

const MiB = 1024 * 1024;
const SEED = Number(process.env.BASE64_TEST_SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`base64 encoder test seed ${SEED} (BASE64_TEST_SEED=${SEED} repeats it)`);

const paths = base64Paths().filter((p) => p.supported).map((p) => p.name);
const CANARY = 0xa5;

function randomBytes(next: () => number, n: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(next() * 256);
  return b;
}

/** Encodes src (at srcOffset of a larger buffer) at dstOffset; checks the text and that nothing else was touched. */
function check(src: Buffer, srcOffset: number, dstOffset: number): void {
  const holder = Buffer.alloc(srcOffset + src.length + 3, 0x11);
  src.copy(holder, srcOffset);
  const view = holder.subarray(srcOffset, srcOffset + src.length);
  const want = src.toString('base64');
  const dst = Buffer.alloc(dstOffset + base64Length(src.length) + 8, CANARY);
  const n = encodeBase64Into(view, dst, dstOffset);
  expect(n).toBe(want.length);
  const got = dst.toString('latin1', dstOffset, dstOffset + n);
  if (got !== want) expect.fail(`length ${src.length} (src +${srcOffset}, dst +${dstOffset}, seed ${SEED}): got ${got.slice(0, 80)}, want ${want.slice(0, 80)}`);
  for (let i = 0; i < dstOffset; i++) if (dst[i] !== CANARY) expect.fail(`wrote before dstOffset at ${i}`);
  for (let i = dstOffset + n; i < dst.length; i++) if (dst[i] !== CANARY) expect.fail(`wrote past the text at ${i}`);
}

afterAll(() => setBase64Path('auto'));

it('the native paths are offered, the widest by default, and js as the fallback', () => {
  expect(paths).toContain('portable');
  expect(paths).toContain('js');
  setBase64Path('auto');
  const native = paths.filter((p) => p !== 'js');
  expect(base64Path()).toBe(native[native.length - 1]);
  expect(() => setBase64Path('mmx')).toThrow(/unknown base64 path/);
  for (const p of base64Paths().filter((x) => !x.supported)) expect(() => setBase64Path(p.name)).toThrow(/not supported/);
});

describe.each(paths)('path %s', (path) => {
  it('matches Buffer for every length 0..3*64+2 at source offsets 0..3 and odd destination offsets', () => {
    setBase64Path(path);
    expect(base64Path()).toBe(path);
    const next = rng(SEED);
    for (let len = 0; len <= 3 * 64 + 2; len++) {
      const src = randomBytes(next, len);
      for (const srcOffset of [0, 1, 2, 3]) check(src, srcOffset, 2 * srcOffset + 1);
      check(src, 0, 0);
    }
  });

  it('matches Buffer for seeded random sizes up to 1 MiB at odd offsets, and at 1 MiB', () => {
    setBase64Path(path);
    const next = rng(SEED ^ 0x5bd1e995);
    for (let i = 0; i < 12; i++) {
      const len = Math.floor(next() * (MiB + 1));
      check(randomBytes(next, len), 1 + 2 * Math.floor(next() * 32), 1 + 2 * Math.floor(next() * 32));
    }
    check(randomBytes(next, MiB), 0, 19);
    check(randomBytes(next, MiB - 1), 7, 0);
  });

  it('refuses a destination too small, an offset outside it and an overlap, writing nothing', () => {
    setBase64Path(path);
    const src = Buffer.from('abcdef');
    const dst = Buffer.alloc(12, CANARY);
    expect(() => encodeBase64Into(src, dst, 5)).toThrow(/does not fit/);
    expect(() => encodeBase64Into(src, dst, 13)).toThrow();
    expect(dst.every((b) => b === CANARY)).toBe(true);
    if (path !== 'js') {
      const shared = Buffer.alloc(64);
      expect(() => encodeBase64Into(shared.subarray(0, 30), shared, 20)).toThrow(/overlaps/);
    }
  });
});

describe('the NDJSON get stream', () => {
  /**
   * The framing from Buffer's strings: each MiB of the blob as the fewest even lines of at most
   * the spec's 1 MB (10^6 bytes), `final` on the last; an empty blob is one empty final line.
   */
  function expectedBody(data: Buffer): string {
    const lines: Buffer[] = [];
    for (let at = 0; at < data.length; at += MiB) {
      const chunk = data.subarray(at, at + MiB);
      const step = Math.ceil(chunk.length / Math.ceil(chunk.length / 1_000_000));
      for (let from = 0; from < chunk.length; from += step) lines.push(chunk.subarray(from, from + step));
    }
    if (lines.length === 0) lines.push(data);
    return lines.map((line, i) => `{"result":{"data":"${line.toString('base64')}","final":${i === lines.length - 1}}}\n`).join('');
  }

  it.each(['auto', 'portable'])('is byte-identical to the framing from Buffer strings (BLOBSTORE_B64_PATH=%s)', async (path) => {
    const node = await startNode({ env: { BLOBSTORE_B64_PATH: path } });
    try {
      // Around the 196,578-byte pieces a line is written in (stream-routes.ts), around the 1 MB a line holds, and whole and partial MiB.
      for (const size of [0, 1, 2, 196_577, 196_578, 196_579, 2 * 196_578 + 1, 1_000_000, 1_000_001, 3 * MiB + 2, 2 * MiB]) {
        const data = patternBytes(size, 40 + size);
        const id = ((await (await putRaw(node.url, data)).json()) as { id: string }).id;
        const res = await fetch(`${node.url}/v1/blobs/${id}/stream`);
        expect(res.status).toBe(200);
        const body = Buffer.from(await res.arrayBuffer()).toString('latin1');
        if (body !== expectedBody(data)) expect.fail(`size ${size}: the stream differs from the expected framing`);
      }
    } finally {
      expect(await node.stop()).toBe(0);
    }
  });
});

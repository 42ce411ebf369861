/**
 * The async form runs the codec in a Piscina worker: shards over SharedArrayBuffers are written
 * in place, other shards are copied in and out, and errors arrive as EcError rejections.
 * Needs the compiled worker (dist/src/ec/worker.js): `make build` or `npm run build` first.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { Piscina } from 'piscina';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

import {
  EcError,
  EcErrorCode,
  allocSharedStripe,
  closeEcPool,
  ecKernelPaths,
  ecWorkerFilename,
  encode,
  encodeAsync,
  reconstructAsync,
} from '../../src/ec/index.js';
import { share } from '../../src/ec/async.js';
import { repoRoot } from '../../src/util/repo-root.js';
import { randomBytes, referenceParity, rng } from './reference.js';

beforeAll(() => {
  if (!existsSync(ecWorkerFilename())) throw new Error(`${ecWorkerFilename()} is missing: run \`npm run build\` first`);
});
afterAll(() => closeEcPool());

function fillData(shards: Uint8Array[], k: number, seed: number): void {
  const next = rng(seed);
  for (let j = 0; j < k; j++) shards[j].set(randomBytes(next, shards[j].length));
}

describe('shards over a SharedArrayBuffer', () => {
  test('are handed to the worker without a copy', () => {
    const [shard] = allocSharedStripe(1, 1, 16);
    const copyBack: [Uint8Array, Uint8Array][] = [];
    expect(share(shard, true, copyBack)).toBe(shard);
    expect(copyBack).toEqual([]);
    const plain = Buffer.alloc(16);
    expect(share(plain, true, copyBack)).not.toBe(plain);
    expect(copyBack.length).toBe(1);
  });

  test('encodeAsync writes the parity in place', async () => {
    const k = 8;
    const m = 2;
    const stripe = allocSharedStripe(k, m, 65537);
    fillData(stripe, k, 1);
    await encodeAsync(k, m, stripe.slice(0, k), stripe.slice(k));
    const expected = referenceParity(k, m, stripe.slice(0, k));
    expect(stripe.slice(k).map((p) => p.toString('hex'))).toEqual(expected.map((p) => Buffer.from(p).toString('hex')));
  });

  test('reconstructAsync fills missing data and parity in place', async () => {
    const k = 4;
    const m = 2;
    const stripe = allocSharedStripe(k, m, 1 << 20);
    fillData(stripe, k, 2);
    encode(k, m, stripe.slice(0, k), stripe.slice(k));
    const original = stripe.map((s) => Buffer.from(s));
    stripe[1].fill(0);
    stripe[5].fill(0);
    await reconstructAsync(k, m, stripe, [true, false, true, true, true, false]);
    stripe.forEach((s, i) => expect(s.equals(original[i]), `shard ${i}`).toBe(true));
  });

  test('many tasks in flight at once all complete correctly', async () => {
    const stripes = Array.from({ length: 12 }, (_, t) => {
      const s = allocSharedStripe(6, 3, 4096 + t);
      fillData(s, 6, 100 + t);
      return s;
    });
    await Promise.all(stripes.map((s) => encodeAsync(6, 3, s.slice(0, 6), s.slice(6))));
    for (const s of stripes) {
      const expected = referenceParity(6, 3, s.slice(0, 6));
      s.slice(6).forEach((p, i) => expect(p.equals(expected[i])).toBe(true));
    }
  });
});

describe('shards in ordinary memory', () => {
  test('are copied in and the results copied back', async () => {
    const k = 4;
    const m = 2;
    const shards = Array.from({ length: k + m }, () => Buffer.alloc(1000));
    fillData(shards, k, 3);
    const data = shards.slice(0, k).map((s) => Buffer.from(s));
    await encodeAsync(k, m, shards.slice(0, k), shards.slice(k));
    const expected = referenceParity(k, m, data);
    shards.slice(k).forEach((p, i) => expect(p.equals(expected[i])).toBe(true));
    shards.slice(0, k).forEach((d, i) => expect(d.equals(data[i])).toBe(true));
    const original = shards.map((s) => Buffer.from(s));
    shards[0].fill(1);
    shards[3].fill(1);
    await reconstructAsync(k, m, shards, [false, true, true, false, true, true]);
    shards.forEach((s, i) => expect(s.equals(original[i]), `shard ${i}`).toBe(true));
  });
});

describe('reconstructAsync with dataOnly', () => {
  test.each([true, false])('rebuilds only the data shards (shared memory: %s)', async (shared) => {
    const k = 4;
    const m = 2;
    const stripe = shared ? allocSharedStripe(k, m, 777) : Array.from({ length: k + m }, () => Buffer.alloc(777));
    fillData(stripe, k, 9);
    encode(k, m, stripe.slice(0, k), stripe.slice(k));
    const original = stripe.map((s) => Buffer.from(s));
    stripe[0].fill(3);
    stripe[4].fill(3);
    await reconstructAsync(k, m, stripe, [false, true, true, true, false, true], { dataOnly: true });
    expect(stripe[0].equals(original[0])).toBe(true);
    expect(stripe[4].every((b) => b === 3)).toBe(true);
  });
});

describe('errors and pools', () => {
  test('bad input rejects with an EcError', async () => {
    const stripe = allocSharedStripe(4, 2, 64);
    await expect(reconstructAsync(4, 2, stripe, [false, false, false, true, true, true])).rejects.toMatchObject({
      code: EcErrorCode.TOO_MANY_MISSING,
    });
    await expect(encodeAsync(0, 2, stripe.slice(0, 4), stripe.slice(4))).rejects.toBeInstanceOf(EcError);
    const short = [...stripe.slice(4, 5), Buffer.alloc(63)];
    await expect(encodeAsync(4, 2, stripe.slice(0, 4), short)).rejects.toMatchObject({ code: EcErrorCode.SHARD_LENGTH, shardIndex: 5 });
    await expect(encodeAsync(4, 2, ['x', 1, null, {}] as never, stripe.slice(4))).rejects.toMatchObject({ code: EcErrorCode.SHARD_TYPE });
  });

  test('an injected Piscina pool is used, whatever its default worker file', async () => {
    const pool = new Piscina({ filename: join(repoRoot(), 'dist', 'src', 'ec', 'errors.js'), maxThreads: 1 });
    const stripe = allocSharedStripe(2, 1, 100);
    fillData(stripe, 2, 4);
    await encodeAsync(2, 1, stripe.slice(0, 2), stripe.slice(2), { pool });
    expect(pool.completed).toBe(1);
    expect(stripe[2].equals(Buffer.from(referenceParity(2, 1, stripe.slice(0, 2))[0]))).toBe(true);
    await pool.destroy();
  });
});

describe('BLOBSTORE_EC_PATH', () => {
  const entry = join(repoRoot(), 'dist', 'src', 'ec', 'index.js');
  const script = `import(${JSON.stringify(entry)}).then((ec) => console.log(ec.ecKernelPath()))`;
  const run = (value: string) => spawnSync(process.execPath, ['-e', script], { env: { ...process.env, BLOBSTORE_EC_PATH: value }, encoding: 'utf8' });

  test.each(ecKernelPaths().filter((p) => p.supported).map((p) => p.name))('pins the path %s', (name) => {
    expect(execFileSync(process.execPath, ['-e', script], { env: { ...process.env, BLOBSTORE_EC_PATH: name }, encoding: 'utf8' }).trim()).toBe(name);
  });

  test('an unknown value is an error, not a silent fallback', () => {
    const result = run('avx9000');
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/unknown EC kernel path "avx9000"/);
  });
});

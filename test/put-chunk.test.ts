/**
 * The PutChunk line reader takes a fast path (data found in the bytes) and a plain JSON.parse
 * path; both must read every message the same way, and reject the same bad ones.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBase64 } from '../src/http/base64.js';
import { PutChunkParser } from '../src/http/put-chunk.js';

/** What JSON.parse alone makes of a line (the reference). */
function reference(line: string): { fields: Record<string, unknown>; data: Buffer } {
  const fields = JSON.parse(line) as Record<string, unknown>;
  return { fields: { ...fields, data: '' }, data: decodeBase64((fields.data as string | undefined) ?? '', '"data"') };
}

function parsed(line: string): { fields: Record<string, unknown>; data: Buffer } {
  const { fields, data } = new PutChunkParser().parse(Buffer.from(line));
  return { fields: { ...fields, data: '' }, data: Buffer.from(data) };
}

describe('PutChunk lines', () => {
  it.each([
    ['data first', '{"data":"QUJD","final":true}'],
    ['data last, spaces', '{ "final" : false , "policy": 1, "data" : "QUJDRA==" }'],
    ['a nested "data" key in labels before the real one', '{"labels":{"data":"WFla"},"data":"QUJD"}'],
    ['a nested "data" key and empty top-level data', '{"labels":{"data":"WFla"},"data":""}'],
    ['"data" as a value before the key', '{"policy":"data","data":"QUJD"}'],
    ['an escaped slash in the base64 text', '{"data":"ab\\/+","final":true}'],
    ['URL-safe alphabet without padding', '{"data":"-_-_AQ"}'],
    ['no data at all', '{"final":true}'],
    ['a string holding \\"data\\"', '{"labels":{"k":"\\"data\\":\\"WFla\\""},"data":"QUJD"}'],
  ])('%s: the same fields and bytes as JSON.parse', (_name, line) => {
    expect(parsed(line)).toEqual(reference(line));
  });

  it.each([
    ['invalid base64', '{"data":"QU!D"}', /base64/],
    ['data of the wrong type', '{"data":12}', /data/],
    ['not JSON', '{"data":"QUJD"', /JSON/],
    ['not an object', '["data"]', /object/],
    ['invalid UTF-8 around the data', '{"data":"QUJD","x":"\xff"}', /UTF-8/],
  ])('%s is rejected with INVALID_ARGUMENT', (_name, line, message) => {
    const bytes = Buffer.from(line, 'latin1');
    expect(() => new PutChunkParser().parse(bytes)).toThrow(message);
  });

  it('agrees with JSON.parse on random messages (seeded)', () => {
    const message = fc.record(
      {
        data: fc.tuple(fc.uint8Array({ maxLength: 300 }), fc.boolean()).map(([b, urlSafe]) => Buffer.from(b).toString(urlSafe ? 'base64url' : 'base64')),
        final: fc.boolean(),
        policy: fc.oneof(fc.integer({ min: 0, max: 5 }), fc.constantFrom('REPLICATION_POLICY_NONE', 'data')),
        labels: fc.dictionary(fc.constantFrom('data', 'a', 'b/c'), fc.string({ maxLength: 20 })),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(message, fc.boolean(), (msg, spaced) => {
        const line = JSON.stringify(msg, null, spaced ? 1 : undefined).replace(/\n/g, ' ');
        expect(parsed(line)).toEqual(reference(line));
      }),
      { seed: Number(process.env.FUZZ_SEED ?? 20261123), numRuns: 500 },
    );
  });
});

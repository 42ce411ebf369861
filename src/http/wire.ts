/**
 * The two HTTP encodings of the same messages (docs/adr/0004-interface-variants.md). Variant B: hex ids, numeric policies,
 * 201 on create, int64 as JSON numbers, errors {code: HTTP status, error, message}. Variant A
 * (grpc-gateway over protojson, proto field names): ids {id: base64}, policies by enum name,
 * 200 on create, int64 as JSON strings, errors {code: gRPC code, message}.
 */
import { formatBlobId, parseBlobId, parseBlobIdLiberal } from '../blob/id.js';
import type { BlobMeta, ListResult, PutResult } from '../blob/meta.js';
import { POLICIES } from '../blob/policy.js';
import type { BlobstoreError } from '../errors/errors.js';
import { metaMessage } from '../service/meta.js';

export type Variant = 'a' | 'b';

export interface Wire {
  readonly variant: Variant;
  /** A blob id from a URL path. */
  parseId(text: string | undefined): Buffer;
  /** The id as a JSON value (with quotes or braces). */
  id(id: Buffer): string;
  /** An int64/uint64 as a JSON value. */
  int64(n: number | bigint): string;
  putStatus(result: PutResult): number;
  putBody(result: PutResult): string;
  listBody(page: ListResult): string;
  metaJson(meta: BlobMeta): string;
  errorBody(err: BlobstoreError): string;
}

/** Cursors are base64url text inside the engine; variant A carries them as protojson bytes. */
const cursorA = (cursor: string): string => Buffer.from(cursor, 'base64url').toString('base64');

function listBody(wire: Wire, page: ListResult, cursor: (c: string) => string): string {
  let body = '{"ids":[';
  for (let i = 0; i < page.ids.length; i++) body += (i ? ',' : '') + wire.id(page.ids[i]!);
  return body + (page.hasMore ? `],"next_cursor":"${cursor(page.nextCursor!)}","has_more":true}` : '],"has_more":false}');
}

function metaJson(wire: Wire, meta: BlobMeta, policy: string): string {
  const m = metaMessage(meta);
  return (
    `{"size":${wire.int64(m.size)},"created_at":${wire.int64(m.created_at)},"modified_at":${wire.int64(m.modified_at)},` +
    `"checksum":"${m.checksum.toString('base64')}","labels":${JSON.stringify(m.labels)},"policy":${policy}}`
  );
}

export const WIRE_B: Wire = {
  variant: 'b',
  parseId: parseBlobId,
  id: (id) => `"${formatBlobId(id)}"`,
  int64: (n) => String(n),
  putStatus: (r) => (r.created ? 201 : 200),
  putBody: (r) => `{"id":"${formatBlobId(r.id)}","size":${r.size}}`,
  listBody: (page) => listBody(WIRE_B, page, (c) => c),
  metaJson: (meta) => metaJson(WIRE_B, meta, String(meta.policy)),
  errorBody: (err) => JSON.stringify({ code: err.status, error: err.short, message: err.message }),
};

export const WIRE_A: Wire = {
  variant: 'a',
  parseId: parseBlobIdLiberal,
  id: (id) => `{"id":"${id.toString('base64')}"}`,
  int64: (n) => `"${n}"`,
  putStatus: () => 200,
  putBody: (r) => `{"id":${WIRE_A.id(r.id)},"size":"${r.size}"}`,
  listBody: (page) => listBody(WIRE_A, page, cursorA),
  metaJson: (meta) => metaJson(WIRE_A, meta, `"${POLICIES[meta.policy] ?? POLICIES[0]}"`),
  errorBody: (err) => JSON.stringify({ code: err.grpcCode, message: err.message }),
};

export function wireOf(variant: string): Wire {
  return variant === 'a' ? WIRE_A : WIRE_B;
}

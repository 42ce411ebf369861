/**
 * The OpenAPI 3.1 document of a node's HTTP API port, served at GET /openapi.json, for the node's
 * variant (B: hex ids, numeric policies, raw bytes; A: grpc-gateway JSON) and listener layout (the
 * `same` layout adds the operations routes). test/openapi/ keeps it in step with the routes (every
 * documented operation answers, every other method of a documented path is 501) and validates it
 * with an OpenAPI validator.
 */
import { type Schema, type Operation, errorResponses, json, ref } from './schema.js';
import { clusterPaths, clusterSchemas } from './cluster-api.js';

export type Variant = 'a' | 'b';

const POLICY_NAMES = ['REPLICATION_POLICY_UNSPECIFIED', 'REPLICATION_POLICY_NONE', 'REPLICATION_POLICY_REPLICA2', 'REPLICATION_POLICY_REPLICA3', 'REPLICATION_POLICY_EC42', 'REPLICATION_POLICY_EC82'];

/** int64 in each variant: B numbers, A decimal strings (protojson). */
const int64 = (variant: Variant, description: string): Schema =>
  variant === 'b' ? { type: 'integer', format: 'int64', description } : { type: 'string', pattern: '^-?[0-9]+$', description: `${description} (int64 as a decimal string, as protojson writes it)` };

function schemas(variant: Variant): Record<string, Schema> {
  const a = variant === 'a';
  return {
    BlobID: a
      ? { type: 'object', required: ['id'], properties: { id: { type: 'string', format: 'byte', description: 'the 16 id bytes, standard base64' } }, description: 'first 16 bytes of the BLAKE3-256 digest of the content' }
      : { type: 'string', pattern: '^[0-9a-f]{32}$', description: 'first 16 bytes of the BLAKE3-256 digest of the content, lowercase hex' },
    Policy: a
      ? { type: 'string', enum: POLICY_NAMES, description: 'replication policy (input also takes the numbers 0-5 and short names such as NONE)' }
      : { oneOf: [{ type: 'integer', minimum: 0, maximum: 5 }, { type: 'string', enum: [...POLICY_NAMES, 'UNSPECIFIED', 'NONE', 'REPLICA2', 'REPLICA3', 'EC42', 'EC82'] }], description: 'replication policy: 0 UNSPECIFIED (= REPLICA3), 1 NONE, 2 REPLICA2, 3 REPLICA3 (default), 4 EC42, 5 EC82; answers use the number' },
    Labels: { type: 'object', additionalProperties: { type: 'string', maxLength: 1024 }, maxProperties: 64, description: 'keys 1-128 bytes of [A-Za-z0-9._/-]' },
    BlobMeta: {
      type: 'object', required: ['size', 'created_at', 'modified_at', 'checksum', 'labels', 'policy'],
      properties: {
        size: int64(variant, 'bytes stored'),
        created_at: int64(variant, 'Unix time in nanoseconds'),
        modified_at: int64(variant, 'Unix time in nanoseconds (equal to created_at: blobs are immutable)'),
        checksum: { type: 'string', format: 'byte', description: 'the full BLAKE3-256 digest, standard base64' },
        labels: ref('Labels'),
        policy: ref('Policy'),
      },
    },
    PutRequest: {
      type: 'object', required: ['data'],
      properties: { data: { type: 'string', format: 'byte', description: 'the bytes, base64 (standard or URL-safe, padded or not)' }, policy: ref('Policy'), labels: ref('Labels') },
    },
    PutResponse: { type: 'object', required: ['id', 'size'], properties: { id: ref('BlobID'), size: int64(variant, 'bytes stored') } },
    BatchResponse: {
      type: 'object', required: ['blobs'],
      properties: {
        blobs: {
          type: 'array', description: 'one per blob of the batch, in body order',
          items: { type: 'object', required: ['id', 'size', 'created'], properties: { id: ref('BlobID'), size: int64(variant, 'bytes stored'), created: { type: 'boolean', description: 'false when the bytes were already stored' } } },
        },
      },
    },
    GetResponse: { type: 'object', required: ['data', 'meta'], properties: { data: { type: 'string', format: 'byte' }, meta: ref('BlobMeta') } },
    StatResponse: { type: 'object', required: ['exists'], properties: { exists: { type: 'boolean' }, meta: ref('BlobMeta') } },
    DeleteResponse: { type: 'object', required: ['deleted'], properties: { deleted: { type: 'boolean', description: 'true whether or not the blob existed locally' } } },
    ListResponse: {
      type: 'object', required: ['ids', 'has_more'],
      properties: {
        ids: { type: 'array', items: ref('BlobID') },
        next_cursor: { type: 'string', description: 'opaque; present only when has_more is true; valid only on this node' },
        has_more: { type: 'boolean' },
      },
    },
    PutChunk: {
      type: 'object', required: ['data'],
      properties: {
        id: { description: 'optional; the server assigns the id (given ids must stay the same)', oneOf: [ref('BlobID'), { type: 'string' }] },
        data: { type: 'string', format: 'byte' },
        final: { type: 'boolean', description: 'true on the last chunk' },
        policy: ref('Policy'),
        labels: ref('Labels'),
      },
    },
    GetChunkLine: {
      type: 'object', description: 'one line of the get stream: a result, or an error that ends the stream',
      properties: {
        result: { type: 'object', required: ['data', 'final'], properties: { data: { type: 'string', format: 'byte', description: 'at most 1 MB (10^6 bytes) of the blob' }, final: { type: 'boolean' } } },
        error: ref('Error'),
      },
    },
    Error: a
      ? { type: 'object', required: ['code', 'message'], properties: { code: { type: 'integer', description: 'gRPC status code' }, message: { type: 'string' } } }
      : { type: 'object', required: ['code', 'error', 'message'], properties: { code: { type: 'integer', description: 'HTTP status' }, error: { type: 'string', description: 'short name of the status' }, message: { type: 'string' } } },
  };
}

const idParam = (variant: Variant) => ({
  name: 'id', in: 'path', required: true,
  description: variant === 'a' ? 'blob id: 32 hex characters (either case), or the 16 bytes in base64 (standard percent-encoded, or URL-safe)' : 'blob id: 32 hex characters (either case; answers use lower case)',
  schema: { type: 'string' },
});

const AUTH_NOTE = 'With a token file configured, needs a bearer token with the scope named here (admin implies read and write).';

function blobPaths(variant: Variant): Record<string, Record<string, Operation>> {
  const a = variant === 'a';
  const stored = json(ref('PutResponse'));
  const rawBody = {
    'application/octet-stream': { schema: { type: 'string', format: 'binary' } },
    'application/json': { schema: ref('PutRequest') },
  };
  const storeHeaders = [
    { name: 'X-Blobstore-Policy', in: 'header', required: false, description: 'raw body: the replication policy (number or name)', schema: { type: 'string' } },
    { name: 'X-Blobstore-Labels', in: 'header', required: false, description: 'raw body: the labels as a JSON object', schema: { type: 'string' } },
  ];
  const store = (method: string): Operation => ({
    operationId: `store${method}`, tags: ['blobs'], summary: 'Store a blob (scope write)',
    description: `Stores the bytes of a raw body (streamed, hashed while it arrives; bodies of 1e9 bytes or more need chunked transfer encoding) or of a JSON body (base64 \`data\`). Storing bytes that exist answers ${a ? '200' : '200 instead of 201'} with the same body and keeps the first write's policy and labels. ${AUTH_NOTE}`,
    parameters: storeHeaders,
    requestBody: { required: true, content: rawBody },
    responses: {
      ...(a ? { 200: { description: 'stored (new or existing)', content: stored } } : { 201: { description: 'stored', content: stored }, 200: { description: 'the bytes were already stored', content: stored } }),
      ...errorResponses([400, 401, 403, 408, 412, 413, 415, 500, 503]),
    },
  });
  return {
    '/v1/blobs': {
      post: store('Post'),
      put: store('Put'),
      get: {
        operationId: 'list', tags: ['blobs'], summary: 'List blob ids (scope read)',
        parameters: [
          { name: 'cursor', in: 'query', required: false, description: 'next_cursor of the previous page (opaque, bound to this node)', schema: { type: 'string' } },
          { name: 'limit', in: 'query', required: false, description: 'page size: 100 when omitted or <= 0, at most 10000 (clamped)', schema: { type: 'integer', format: 'int32' } },
          { name: 'prefix', in: 'query', required: false, description: 'only ids whose hex form starts with it (either case)', schema: { type: 'string' } },
        ],
        responses: { 200: { description: 'one page', content: json(ref('ListResponse')) }, ...errorResponses([400, 401, 403, 500]) },
      },
    },
    '/v1/blobs/batch': {
      post: {
        operationId: 'putBatch', tags: ['blobs'], summary: 'Store many blobs in one request (scope write)',
        description: `Not in the spec: many small blobs in one request, one group commit for them. The body is each blob behind its length as 4 bytes, unsigned big-endian; Content-Length is required (411), at most maxBatchBytes (413) and maxBatchBlobs blobs (400). X-Blobstore-Policy and X-Blobstore-Labels apply to every blob. A body that is not a batch stores nothing (400); the answer comes once every blob is durable; a blob that fails fails the request with its error (the others may be stored: a retried batch stores each blob once). ${AUTH_NOTE}`,
        parameters: storeHeaders,
        requestBody: { required: true, content: { 'application/vnd.blobstore.batch': { schema: { type: 'string', format: 'binary' } } } },
        responses: { 200: { description: 'every blob stored (new or existing)', content: json(ref('BatchResponse')) }, ...errorResponses([400, 401, 403, 408, 411, 412, 413, 415, 500, 503, 507]) },
      },
    },
    '/v1/blobs/stream': {
      post: {
        operationId: 'putStream', tags: ['streams'], summary: 'Store a blob from newline-delimited PutChunk messages (scope write)',
        description: 'grpc-gateway framing: one JSON PutChunk a line, policy and labels on the first, final on the last. A stream that ends before its final chunk answers 500 and leaves nothing behind.',
        requestBody: { required: true, content: { 'application/x-ndjson': { schema: ref('PutChunk') } } },
        responses: { 200: { description: 'stored', content: stored }, ...(a ? {} : { 201: { description: 'stored (new)', content: stored } }), ...errorResponses([400, 401, 403, 413, 500, 503]) },
      },
    },
    '/v1/blobs/{id}': {
      get: {
        operationId: 'get', tags: ['blobs'], summary: 'Read a blob (scope read)',
        description: a ? 'The bytes as base64 `data` with the metadata; blobs larger than the JSON body limit answer 413 (use the stream).' : 'The raw bytes, verified against their checksum. ETag, If-None-Match (304) and one byte range (206, 416) are supported.',
        parameters: [idParam(variant), ...(a ? [] : [{ name: 'Range', in: 'header', required: false, schema: { type: 'string' }, description: 'bytes=a-b, a- or -n' }])],
        responses: {
          200: a ? { description: 'the blob', content: json(ref('GetResponse')) } : { description: 'the blob', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
          ...(a ? {} : { 206: { description: 'the requested range' }, 304: { description: 'not modified (If-None-Match)' }, 416: { description: 'range not satisfiable' } }),
          ...errorResponses([400, 401, 403, 404, 413, 500]),
        },
      },
      // Variant A's HEAD is GET's head (HTTP's, not an operation of its own).
      ...(a ? {} : { head: {
        operationId: 'head', tags: ['blobs'], summary: 'Blob metadata as headers (scope read)',
        parameters: [idParam(variant)],
        responses: {
          200: {
            description: 'exists',
            headers: {
              'X-Blobstore-Blob-Size': { schema: { type: 'integer' } },
              'X-Blobstore-Created-At': { schema: { type: 'integer' }, description: 'Unix ns' },
              'X-Blobstore-Policy': { schema: { type: 'integer' } },
            },
          },
          404: { description: 'no such blob (no body)' },
        },
      } }),
      delete: {
        operationId: 'delete', tags: ['blobs'], summary: 'Delete the local copy (scope write)',
        parameters: [idParam(variant)],
        responses: { 200: { description: 'deleted (true whether or not it existed)', content: json(ref('DeleteResponse')) }, ...errorResponses([400, 401, 403, 500]) },
      },
    },
    '/v1/blobs/{id}/stat': {
      get: {
        operationId: 'stat', tags: ['blobs'], summary: 'Blob metadata (scope read)',
        parameters: [idParam(variant)],
        responses: { 200: { description: 'exists or not (a missing blob is still 200)', content: json(ref('StatResponse')) }, ...errorResponses([400, 401, 403, 500]) },
      },
    },
    '/v1/blobs/{id}/stream': {
      get: {
        operationId: 'getStream', tags: ['streams'], summary: 'Read a blob as newline-delimited chunks (scope read)',
        parameters: [idParam(variant)],
        responses: {
          200: { description: '{"result": GetChunk} lines, the last with final true; {"error": ...} ends a failed stream', content: { 'application/x-ndjson': { schema: ref('GetChunkLine') } } },
          ...errorResponses([400, 401, 403, 404, 500]),
        },
      },
    },
    '/healthz': {
      get: {
        operationId: 'healthz', tags: ['operations'], summary: 'Readiness of the API listener (open)', security: [],
        responses: { 200: { description: 'OK', content: { 'text/plain': { schema: { type: 'string' } } } }, 503: { description: 'not ready or the engine failed' } },
      },
    },
    '/openapi.json': {
      get: {
        operationId: 'openapi', tags: ['operations'], summary: 'This document (open)', security: [],
        responses: { 200: { description: 'the OpenAPI document', content: json({ type: 'object' }) } },
      },
    },
  };
}

/** The operations routes, on the API port in the `same` layout (else on the metrics listener). */
function opsPaths(): Record<string, Record<string, Operation>> {
  const text = (description: string) => ({ description, content: { 'text/plain': { schema: { type: 'string' } } } });
  return {
    '/metrics': { get: { operationId: 'metrics', tags: ['operations'], summary: 'Prometheus text exposition 0.0.4 (scope read)', responses: { 200: text('the exposition'), ...errorResponses([401, 403]) } } },
    '/api/v1/metrics': { get: { operationId: 'metricsJson', tags: ['operations'], summary: 'The JSON metrics snapshot (scope read)', responses: { 200: { description: 'snapshot', content: json({ type: 'object' }) }, ...errorResponses([401, 403, 500]) } } },
    '/api/v1/metrics/detail': { get: { operationId: 'metricsDetail', tags: ['operations'], summary: 'Percentiles, failures, pool and event loop for the web UI (scope read)', responses: { 200: { description: 'detail', content: json({ type: 'object' }) }, ...errorResponses([401, 403]) } } },
    '/health': { get: { operationId: 'health', tags: ['operations'], summary: 'Storage backend check (open)', security: [], responses: { 200: text('OK'), 503: text('UNHEALTHY: backend error') } } },
    '/': { get: { operationId: 'ui', tags: ['operations'], summary: 'The web UI (open; its requests carry the token)', security: [], responses: { 200: { description: 'HTML page', content: { 'text/html': { schema: { type: 'string' } } } } } } },
  };
}

export function blobApiDocument(options: { variant: Variant; opsOnApiPort: boolean; uiOnApiPort: boolean; version: string }): object {
  const paths = { ...blobPaths(options.variant), ...clusterPaths(), ...(options.opsOnApiPort ? opsPaths() : {}) };
  if (options.uiOnApiPort) {
    (paths as Record<string, Record<string, Operation>>)['/ui/'] = {
      get: { operationId: 'uiOnApiPort', tags: ['operations'], summary: 'The web UI with the blob browser, beside the API it calls (open)', security: [], responses: { 200: { description: 'HTML page', content: { 'text/html': { schema: { type: 'string' } } } } } },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: `blobstore blob API (variant ${options.variant.toUpperCase()})`,
      version: options.version,
      description: 'The blob and cluster operations of one node over HTTP/JSON (any node takes any request; docs/cluster.md).',
    },
    tags: [{ name: 'blobs' }, { name: 'streams' }, { name: 'cluster' }, { name: 'operations' }],
    paths,
    components: {
      schemas: { ...schemas(options.variant), ...clusterSchemas((d) => int64(options.variant, d)) },
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'a token of the node\'s AuthTokensFile (only when one is configured)' } },
    },
    security: [{ bearer: [] }, {}],
  };
}

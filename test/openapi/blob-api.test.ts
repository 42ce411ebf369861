/**
 * GET /openapi.json on a node's API port: an OpenAPI 3.1 document that a real validator
 * (@seriousme/openapi-schema-validator) accepts, for each variant, and that stays in step with the
 * routes: every route the HTTP server registers is documented, every documented operation answers
 * (not 404, not 501), every other method of a documented /v1 path answers 501 (400 where the
 * path reads as /v1/blobs/{id} with an invalid id).
 */
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { type NodeProcess, REPO, startNode } from '../helpers/node-process.js';

type Doc = { openapi: string; info: { title: string }; paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
const METHODS = ['get', 'head', 'post', 'put', 'delete', 'patch'];

/** The routes src/http/server.ts registers with a method (not `any`), as OpenAPI paths. */
function registeredRoutes(): string[] {
  const source = readFileSync(`${REPO}/src/http/server.ts`, 'utf8');
  return [...source.matchAll(/\.(get|post|put|del|head|patch)\('([^']+)'/g)]
    .map(([, method, path]) => `${method === 'del' ? 'delete' : method} ${path!.replace(/:(\w+)/g, '{$1}')}`);
}

const operations = (doc: Doc): string[] => Object.entries(doc.paths).flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((m) => `${m} ${path}`));

async function validate(doc: object): Promise<void> {
  const result = await new Validator().validate(doc as Parameters<Validator['validate']>[0]);
  expect(result.errors ?? [], JSON.stringify(result.errors, null, 2)).toStrictEqual([]);
  expect(result.valid).toBe(true);
}

describe.each([
  { variant: 'b', args: [] as string[] },
  { variant: 'a', args: ['--api-variant', 'a'] },
])('variant $variant', ({ variant, args }) => {
  let node: NodeProcess;
  let doc: Doc;
  let id: string;

  beforeAll(async () => {
    // With its gRPC listener a node is a (one-node) cluster, so the cluster routes answer too.
    node = await startNode({ args: ['--grpc-addr', '127.0.0.1:0', ...args] });
    const res = await fetch(`${node.url}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    doc = (await res.json()) as Doc;
    const stored = await putRaw(node.url, patternBytes(3000, 5));
    expect(stored.status).toBe(variant === 'b' ? 201 : 200);
    id = 'ed5e0e4b1e1d0a5bd4b1e1d0a5bd4b1e';
    const body = (await stored.json()) as { id: string | { id: string } };
    id = typeof body.id === 'string' ? body.id : Buffer.from(body.id.id, 'base64').toString('hex');
  });
  afterAll(async () => {
    await node?.stop();
  });

  it('is an OpenAPI 3.1 document the validator accepts, titled for the variant', async () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.title).toBe(`blobstore blob API (variant ${variant.toUpperCase()})`);
    await validate(doc);
  });

  it('documents every route the HTTP server registers, and the routes mounted beside them', () => {
    const documented = new Set(operations(doc));
    for (const route of registeredRoutes()) {
      // HEAD of a GET route is HTTP's, not an operation of its own.
      const covered = documented.has(route) || (route.startsWith('head ') && documented.has(route.replace(/^head/, 'get')));
      expect(covered, `${route} is not in the document`).toBe(true);
    }
    expect(documented).toContain('get /openapi.json');
  });

  it('every documented operation answers (no 404, no 501)', async () => {
    // Deletes last: the other operations read the stored blob.
    const ordered = operations(doc).sort((x, y) => Number(x.startsWith('delete')) - Number(y.startsWith('delete')));
    for (const op of ordered) {
      const [method, template] = op.split(' ') as [string, string];
      const path = template.replace('{id}', id);
      const body = method === 'post' || method === 'put' ? (path.endsWith('/stream') ? '{"data":"aGk=","final":true}\n' : 'hello') : undefined;
      const headers: Record<string, string> = body === undefined ? {} : { 'content-type': path.endsWith('/stream') ? 'application/x-ndjson' : 'application/octet-stream' };
      const res = await fetch(`${node.url}${path}`, { method: method.toUpperCase(), body, headers });
      await res.arrayBuffer();
      expect([404, 501], `${op}: ${res.status}`).not.toContain(res.status);
      expect(Object.keys(doc.paths[template]![method]!.responses), `${op} answered ${res.status}`).toContain(String(res.status));
    }
  });

  it('every other method of a documented /v1 path answers 501, as grpc-gateway does', async () => {
    for (const [template, item] of Object.entries(doc.paths)) {
      if (!template.startsWith('/v1/')) continue;
      for (const method of METHODS) {
        if (item[method] || (method === 'head' && item.get)) continue;
        const res = await fetch(`${node.url}${template.replace('{id}', id)}`, { method: method.toUpperCase() });
        await res.arrayBuffer();
        // GET, HEAD and DELETE /v1/blobs/stream and /v1/blobs/batch are those of /v1/blobs/{id}:
        // neither word is an id (400).
        const noId = ['/v1/blobs/stream', '/v1/blobs/batch'].includes(template) && ['get', 'head', 'delete'].includes(method);
        expect(res.status, `${method} ${template}`).toBe(noId ? 400 : 501);
      }
    }
  });
});

describe('layouts', () => {
  it('the `same` layout documents the operations routes on the API port; the separate one does not', async () => {
    const [same, separate] = await Promise.all([startNode({ args: ['--metrics-addr', 'same'] }), startNode({ args: ['--metrics-addr', '127.0.0.1:0'] })]);
    try {
      const sameDoc = (await (await fetch(`${same.url}/openapi.json`)).json()) as Doc;
      const separateDoc = (await (await fetch(`${separate.url}/openapi.json`)).json()) as Doc;
      for (const path of ['/metrics', '/api/v1/metrics', '/health', '/']) {
        expect(sameDoc.paths[path], path).toBeDefined();
        expect(separateDoc.paths[path], path).toBeUndefined();
        expect((await fetch(`${same.url}${path}`)).status, path).toBe(200);
      }
      await validate(sameDoc);
    } finally {
      await Promise.all([same.stop(), separate.stop()]);
    }
  });
});

describe('the validator', () => {
  it('refuses what is not a valid OpenAPI 3.1 document (so the checks above can fail)', async () => {
    const broken = { openapi: '3.1.0', info: { title: 'x' }, paths: { '/a': { get: { responses: { 200: { content: {} } } } } } };
    const result = await new Validator().validate(broken as Parameters<Validator['validate']>[0]);
    expect(result.valid).toBe(false);
  });
});

/**
 * GET (and HEAD) /openapi.json on a node's API port: the document of its variant and layout,
 * serialised once at start. Open like /healthz. Registered through ApiServer's `mount` hook.
 */
import { writeAnswer } from '../http/reply.js';
import type { TemplatedApp } from '../http/uws.js';

export function registerOpenApiRoute(app: TemplatedApp, document: object): void {
  const body = JSON.stringify(document);
  const answer = { status: 200, contentType: 'application/json', body, headers: { 'Cache-Control': 'no-cache' } };
  app.get('/openapi.json', (res) => writeAnswer(res, answer)).head('/openapi.json', (res) => writeAnswer(res, answer, true));
}

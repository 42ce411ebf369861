/**
 * GET (and HEAD) /openapi.json on a node's API port: the document of its variant and layout,
 * serialised once at start. Open like /healthz. Registered through ApiServer's `mount` hook.
 */
import { writeAnswer } from '../http/reply.js';
import type { Router } from '../http/router.js';

export function registerOpenApiRoute(routes: Router, document: object): void {
  const body = JSON.stringify(document);
  const answer = { status: 200, contentType: 'application/json', body, headers: { 'Cache-Control': 'no-cache' } };
  routes.get('/openapi.json', (res, _req, head) => writeAnswer(res, answer, head));
}

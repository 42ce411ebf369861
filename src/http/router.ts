/**
 * Route registration on a uWS app. Every route must be named in the access table
 * (src/auth/access.ts), and every handler runs behind the framing check (framing.ts): a request
 * whose body framing is ambiguous never reaches a route. Every GET route answers HEAD as
 * well (RFC 9110 §9.3.2: the same status and headers, Content-Length included, without the
 * body). uWS routes HEAD only to handlers registered for it, so `get` registers the one handler
 * twice, telling it which method came: a handler writes its answer with `head` (writeAnswer, an
 * Exchange made with it) and the body is left out in one place. With an AccessLog, every route's
 * requests are logged (or sampled) under the pattern they matched, and a client's X-Request-Id
 * is echoed on every answer (logged-response.ts).
 */
import { accessOf } from '../auth/access.js';
import type { AccessLog } from '../log/access-log.js';
import { type Refuse, strictRoute } from './framing.js';
import type { HttpRequest, HttpResponse, TemplatedApp } from './uws.js';

export type Handler = (res: HttpResponse, req: HttpRequest) => void;
/** A GET handler; `head` true: answer as to GET, without the body. */
export type GetHandler = (res: HttpResponse, req: HttpRequest, head: boolean) => void;

/** How a POST or PUT route takes its body: whole and bounded (`json`), or as it comes (`stream`, chunked allowed). */
export type BodyKind = 'json' | 'stream';

export class Router {
  /**
   * `refuse`: the listener's error answer for a request refused before its route (400 for
   * ambiguous framing, 411 for a chunked body where none streams).
   */
  constructor(
    readonly app: TemplatedApp,
    private readonly refuse: Refuse,
    private readonly access?: AccessLog,
  ) {}

  private strict(pattern: string, handler: Handler, body: BodyKind = 'json'): Handler {
    return strictRoute(handler, body === 'stream', this.refuse, this.access, pattern);
  }

  /** GET, and HEAD through the same handler unless the route answers HEAD its own way (`head`). */
  get(pattern: string, handler: GetHandler, head?: Handler): this {
    accessOf('GET', pattern);
    if (head) accessOf('HEAD', pattern);
    this.app.get(pattern, this.strict(pattern, (res, req) => handler(res, req, false)));
    this.app.head(pattern, this.strict(pattern, head ?? ((res, req) => handler(res, req, true))));
    return this;
  }

  post(pattern: string, handler: Handler, body?: BodyKind): this {
    accessOf('POST', pattern);
    this.app.post(pattern, this.strict(pattern, handler, body));
    return this;
  }

  put(pattern: string, handler: Handler, body?: BodyKind): this {
    accessOf('PUT', pattern);
    this.app.put(pattern, this.strict(pattern, handler, body));
    return this;
  }

  del(pattern: string, handler: Handler): this {
    accessOf('DELETE', pattern);
    this.app.del(pattern, this.strict(pattern, handler));
    return this;
  }

  /** Every other method of `pattern` (register it after the methods the pattern has). */
  any(pattern: string, handler: Handler): this {
    accessOf('ANY', pattern);
    this.app.any(pattern, this.strict(pattern, handler));
    return this;
  }
}

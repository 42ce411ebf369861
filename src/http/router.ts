/**
 * Route registration on a uWS app where every GET route answers HEAD as well (RFC 9110 §9.3.2:
 * the same status and headers, Content-Length included, without the body). uWS routes HEAD only
 * to handlers registered for it, so `get` registers the one handler twice, telling it which
 * method came: a handler writes its answer with `head` (writeAnswer, an Exchange made with it)
 * and the body is left out in one place.
 */
import type { HttpRequest, HttpResponse, TemplatedApp } from './uws.js';

export type Handler = (res: HttpResponse, req: HttpRequest) => void;
/** A GET handler; `head` true: answer as to GET, without the body. */
export type GetHandler = (res: HttpResponse, req: HttpRequest, head: boolean) => void;

export class Router {
  constructor(readonly app: TemplatedApp) {}

  /** GET, and HEAD through the same handler unless the route answers HEAD its own way (`head`). */
  get(pattern: string, handler: GetHandler, head?: Handler): this {
    this.app.get(pattern, (res, req) => handler(res, req, false));
    this.app.head(pattern, head ?? ((res, req) => handler(res, req, true)));
    return this;
  }

  post(pattern: string, handler: Handler): this {
    this.app.post(pattern, handler);
    return this;
  }

  put(pattern: string, handler: Handler): this {
    this.app.put(pattern, handler);
    return this;
  }

  del(pattern: string, handler: Handler): this {
    this.app.del(pattern, handler);
    return this;
  }

  /** Every other method of `pattern` (register it after the methods the pattern has). */
  any(pattern: string, handler: Handler): this {
    this.app.any(pattern, handler);
    return this;
  }
}

/**
 * A uWebSockets.js listener, plain or TLS (SSLApp), whose certificate can change while it runs.
 * uWS reads the certificate files once, when an app is made; a new certificate (SIGHUP) therefore
 * means a new app: the routes registered on `app` are recorded and registered again on it, the
 * listen socket is closed and the new app listens on the same address. Connections already open
 * finish on the old app; a connection attempted in the microseconds between close and listen is
 * refused (a client retries it). A port from the kernel's ephemeral range (a listener on port 0)
 * may meanwhile be the local port of an outgoing connection, and then cannot be bound again: the
 * node logs it; configured ports (8080, 9090) lie below that range.
 */
import type { Logger } from '../log/logger.js';
import { type NodeTls, TLS12_CIPHERS } from '../tls/node-tls.js';
import { listenError } from '../util/listen-refusal.js';
import { listenExclusive, loadUws, type TemplatedApp, type us_listen_socket } from './uws.js';

const uws = loadUws();

type Registration = readonly [method: string, pattern: string, handler: unknown];
/** A bind refused right after the close (the old socket not yet gone) is tried again: 2 s in all. */
const RELISTEN_ATTEMPTS = 40;
const RELISTEN_DELAY_MS = 50;
const METHODS = ['get', 'head', 'post', 'put', 'del', 'patch', 'options', 'any'] as const;

export class Listener {
  /** The app routes are registered on (they are recorded, for a new app after a reload). */
  readonly app: TemplatedApp;
  private live: TemplatedApp;
  private readonly registrations: Registration[] = [];
  private socket: us_listen_socket | undefined;
  private address: { host: string; port: number } | undefined;

  constructor(private readonly tls: NodeTls | undefined, private readonly what: string, private readonly log: Logger) {
    this.live = this.make();
    const recorder: Record<string, unknown> = {};
    for (const method of METHODS) {
      recorder[method] = (pattern: string, handler: unknown): TemplatedApp => {
        this.registrations.push([method, pattern, handler]);
        (this.live as unknown as Record<string, (p: string, h: unknown) => void>)[method]!(pattern, handler);
        return this.app;
      };
    }
    this.app = recorder as unknown as TemplatedApp;
    tls?.onChange(() => this.renew());
  }

  /** `https` with a certificate, else `http`. */
  get scheme(): 'http' | 'https' {
    return this.tls ? 'https' : 'http';
  }

  private make(): TemplatedApp {
    if (!this.tls) return uws.App();
    const { tlsCert, tlsKey } = this.tls.settings;
    return uws.SSLApp({ cert_file_name: tlsCert, key_file_name: tlsKey, ssl_ciphers: TLS12_CIPHERS } as Parameters<typeof uws.SSLApp>[0]);
  }

  /** Listens on host:port (0: a free one); resolves with the bound port. */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      listenExclusive(this.live, host, port, (socket) => {
        if (!socket) return void listenError(this.what === 'API' ? '' : `for ${this.what}`, host, port).then(reject);
        this.socket = socket;
        const bound = uws.us_socket_local_port(socket);
        this.address = { host, port: bound };
        resolve(bound);
      });
    });
  }

  /** A new app with the certificate now in the files, listening where the old one did. */
  private renew(): void {
    const next = this.make();
    for (const [method, pattern, handler] of this.registrations) {
      (next as unknown as Record<string, (p: string, h: unknown) => void>)[method]!(pattern, handler);
    }
    this.live = next;
    if (!this.socket || !this.address) return;
    uws.us_listen_socket_close(this.socket);
    this.socket = undefined;
    this.listenAgain(next, 0);
  }

  /** Listens with `app` where the old one did; a bind refused is tried again a few times. */
  private listenAgain(app: TemplatedApp, attempt: number): void {
    const { host, port } = this.address!;
    listenExclusive(app, host, port, (socket) => {
      if (socket) {
        this.socket = socket;
        this.log.info({ listener: this.what, port }, `${this.what}: listening on ${host}:${port} with the new certificate`);
        return;
      }
      if (attempt < RELISTEN_ATTEMPTS) return void setTimeout(() => this.listenAgain(app, attempt + 1), RELISTEN_DELAY_MS);
      this.log.error({ listener: this.what, port }, `${this.what}: cannot listen again on ${host}:${port} with the new certificate`);
    });
  }

  /** Stops accepting connections (those open finish). */
  close(): void {
    if (this.socket) uws.us_listen_socket_close(this.socket);
    this.socket = undefined;
  }
}

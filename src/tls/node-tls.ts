/**
 * A node's TLS material (settings TLSCertFile, TLSKeyFile, TLSCAFile): read and checked at start,
 * re-read on SIGHUP, and handed in the shape each side needs: file names for uWebSockets.js's
 * SSLApp, a certificate provider for grpc-js's server, connect options for node:tls sockets and
 * an undici dispatcher for fetch (node-to-node calls), channel credentials for grpc-js clients.
 *
 * A cluster speaks TLS on every link or on none: a node with a certificate calls its peers over
 * TLS (https, TLS sockets, gRPC over TLS), so every node of a cluster has one. With a CA file,
 * peers' certificates are verified against it (else against the system's CAs) and node-to-node
 * calls present this node's certificate: gRPC InternalService then requires one that verifies
 * (mutual TLS), beside the cluster secret.
 *
 * A start with a missing, unreadable or mismatched file stops (ConfigError, exit 2); on SIGHUP a
 * bad set keeps the one loaded before and logs why, as the tokens file does.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import tls, { type ConnectionOptions, createSecureContext } from 'node:tls';
import { ConfigError } from '../config/load.js';
import type { Logger } from '../log/logger.js';

/**
 * TLS 1.2 cipher suites every listener and peer call offers: forward secrecy and AEAD only
 * (Mozilla's "intermediate" profile). Node's and OpenSSL's defaults also take RSA key exchange
 * and CBC with SHA-1. TLS 1.3's suites (all AEAD) stay OpenSSL's; TLS 1.0 and 1.1 are refused by
 * both ends' minimum version.
 */
export const TLS12_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-ECDSA-AES256-GCM-SHA384', 'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305', 'ECDHE-RSA-CHACHA20-POLY1305', 'DHE-RSA-AES128-GCM-SHA256', 'DHE-RSA-AES256-GCM-SHA384',
].join(':');
const TLS13_SUITES = 'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256';

export interface TlsSettings {
  readonly tlsCert: string;
  readonly tlsKey: string;
  readonly tlsCa: string;
}

/** The files' contents at one moment: certificate chain, key, CA bundle (undefined: none set). */
export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca: Buffer | undefined;
}

export type TlsListener = (material: TlsMaterial) => void;

function readPem(path: string, setting: string): Buffer {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new ConfigError(`${setting} ${path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!bytes.includes('-----BEGIN ')) throw new ConfigError(`${setting} ${path}: not a PEM file (no "-----BEGIN" line)`);
  return bytes;
}

/** Reads the files and checks that they make a usable context (the key matches the certificate). */
export function readTlsMaterial(settings: TlsSettings): TlsMaterial {
  const cert = readPem(settings.tlsCert, 'TLSCertFile');
  const key = readPem(settings.tlsKey, 'TLSKeyFile');
  const ca = settings.tlsCa === '' ? undefined : readPem(settings.tlsCa, 'TLSCAFile');
  try {
    createSecureContext({ cert, key, ca });
  } catch (err) {
    const why = (err as Error).message;
    const mismatch = /key values mismatch|KEY_VALUES_MISMATCH/i.test(why);
    throw new ConfigError(mismatch
      ? `TLSKeyFile ${settings.tlsKey} is not the key of the certificate in TLSCertFile ${settings.tlsCert}`
      : `TLS files (TLSCertFile ${settings.tlsCert}, TLSKeyFile ${settings.tlsKey}${ca ? `, TLSCAFile ${settings.tlsCa}` : ''}) do not make a TLS context: ${why}`);
  }
  return { cert, key, ca };
}

export class NodeTls {
  private current: TlsMaterial;
  private readonly listeners: TlsListener[] = [];

  private constructor(readonly settings: TlsSettings, material: TlsMaterial) {
    this.current = material;
  }

  /** The node's TLS, or undefined when no certificate is set; a half-set pair is an error. */
  static load(settings: TlsSettings): NodeTls | undefined {
    if (settings.tlsCert === '' && settings.tlsKey === '') {
      if (settings.tlsCa !== '') throw new ConfigError('TLSCAFile needs TLSCertFile and TLSKeyFile: peers are verified only on a node that speaks TLS');
      return undefined;
    }
    if (settings.tlsCert === '') throw new ConfigError('TLSKeyFile is set without TLSCertFile (--tls-cert)');
    if (settings.tlsKey === '') throw new ConfigError('TLSCertFile is set without TLSKeyFile (--tls-key)');
    const material = readTlsMaterial(settings);
    // Node's side (grpc-js, peer sockets, undici) takes its default from here: one policy per process.
    tls.DEFAULT_CIPHERS = `${TLS13_SUITES}:${TLS12_CIPHERS}`;
    return new NodeTls(settings, material);
  }

  /** Why the certificate loaded would be refused by clients now (expired, not yet valid), if it would. */
  validityProblem(now = Date.now()): string | undefined {
    const cert = new X509Certificate(this.current.cert);
    if (Date.parse(cert.validTo) < now) return `the certificate in TLSCertFile ${this.settings.tlsCert} expired on ${new Date(cert.validTo).toISOString()}: clients refuse it`;
    if (Date.parse(cert.validFrom) > now) return `the certificate in TLSCertFile ${this.settings.tlsCert} is not valid before ${new Date(cert.validFrom).toISOString()}: clients refuse it until then`;
    return undefined;
  }

  get material(): TlsMaterial {
    return this.current;
  }

  /** Peers present a certificate that verifies against TLSCAFile (mutual TLS between nodes). */
  get mutual(): boolean {
    return this.current.ca !== undefined;
  }

  /** Called with the new material after each reload that took. */
  onChange(listener: TlsListener): void {
    this.listeners.push(listener);
  }

  /** Re-reads the files; a bad set keeps the material loaded before (the error says why). */
  reload(): void {
    const next = readTlsMaterial(this.settings);
    this.current = next;
    for (const l of this.listeners) l(next);
  }

  /** node:tls connect options for a call to a peer at `host`. */
  connectOptions(host: string): ConnectionOptions {
    const m = this.current;
    return {
      ...(m.ca ? { ca: m.ca, cert: m.cert, key: m.key } : {}),
      // SNI takes names only; an address is checked against the certificate's IP entries.
      ...(isIP(host) === 0 ? { servername: host } : {}),
    };
  }
}

/**
 * Re-reads the files on SIGHUP; returns the function that stops listening. A certificate out of
 * its validity (at start or once loaded) is warned of: it loads, but clients refuse it.
 */
export function reloadOnHangup(nodeTls: NodeTls, log: Logger): () => void {
  const warnValidity = (): void => {
    const problem = nodeTls.validityProblem();
    if (problem) log.warn({ cert: nodeTls.settings.tlsCert }, problem);
  };
  warnValidity();
  const onHangup = (): void => {
    try {
      nodeTls.reload();
      log.info({ signal: 'SIGHUP', cert: nodeTls.settings.tlsCert }, `SIGHUP: TLS certificate reloaded from ${nodeTls.settings.tlsCert}`);
      warnValidity();
    } catch (err) {
      log.error({ signal: 'SIGHUP', cert: nodeTls.settings.tlsCert }, `SIGHUP: ${(err as Error).message}; keeping the certificate loaded before`);
    }
  };
  process.on('SIGHUP', onHangup);
  return () => void process.off('SIGHUP', onHangup);
}

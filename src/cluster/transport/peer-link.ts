/**
 * How this node reaches a peer: the cluster secret every node-to-node call carries, and the
 * transport under it: plain TCP, or TLS when the node has a certificate (a cluster speaks TLS on
 * every link or on none). Every connection to a peer is made here: raw HTTP/1.1 sockets (reads,
 * large replicas, EC columns), fetch (membership calls over the API), gRPC channel credentials.
 * With TLSCAFile set, the peer's certificate is verified against it and this node presents its
 * own (mutual TLS); without, against the system's CAs.
 */
import { connect as netConnect, type OnReadOpts, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type * as grpc from '@grpc/grpc-js';
import type { Agent } from 'undici';
import { channelCredentials } from '../../tls/grpc-tls.js';
import type { NodeTls } from '../../tls/node-tls.js';

/** The header (HTTP) and metadata key (gRPC) of the cluster secret (docs/cluster.md, Security). */
export const SECRET_METADATA = 'x-blobstore-cluster-secret';

/** host:port (a bracketed IPv6 host too) as connect() takes it. */
export function splitAddress(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(address.slice(at + 1)) };
}

export class PeerLink {
  private agent: Agent | undefined;
  /** Called when the certificate changed: channels made with the old one are dropped. */
  private readonly changed: (() => void)[] = [];

  constructor(readonly secret: string, private readonly tls: NodeTls | undefined) {
    tls?.onChange(() => {
      void this.agent?.close();
      this.agent = undefined;
      for (const f of this.changed) f();
    });
  }

  get scheme(): 'http' | 'https' {
    return this.tls ? 'https' : 'http';
  }

  /** A base URL of a peer's API listener from the address it gave (host:port) or a seed's URL. */
  baseUrl(address: string): string {
    return /^https?:\/\//.test(address) ? address.replace(/\/$/, '') : `${this.scheme}://${address}`;
  }

  onChange(f: () => void): void {
    this.changed.push(f);
  }

  /** A connection to a peer's API listener (host:port); writes may start at once. */
  connect(address: string, onread?: OnReadOpts): Socket {
    const { host, port } = splitAddress(address);
    if (!this.tls) return netConnect({ host, port, noDelay: true, ...(onread ? { onread } : {}) });
    const socket = tlsConnect({ host, port, ...this.tls.connectOptions(host), ...(onread ? { onread } : {}) });
    socket.setNoDelay(true);
    return socket;
  }

  /** fetch() to a peer, over TLS with the node's CA and certificate when it has them. */
  async fetch(url: string, init: RequestInit): Promise<Response> {
    if (!this.tls) return fetch(url, init);
    // undici is loaded only by a node that speaks TLS (Node's own fetch takes no CA).
    const undici = await import('undici');
    const m = this.tls.material;
    this.agent ??= new undici.Agent({ connect: m.ca ? { ca: m.ca, cert: m.cert, key: m.key } : {} });
    return (await undici.fetch(url, { ...(init as object), dispatcher: this.agent })) as unknown as Response;
  }

  grpcCredentials(): grpc.ChannelCredentials {
    return channelCredentials(this.tls?.material);
  }
}

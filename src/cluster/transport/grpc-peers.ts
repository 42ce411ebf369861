/**
 * The control plane's gRPC clients (peer-transport.ts): one channel per peer address (grpc-js
 * multiplexes every call to a peer over it), ClusterService and InternalService stubs on it, the
 * cluster secret in the metadata of every call, and a deadline on every call. A peer that changes
 * address gets a new channel; a removed one loses its channel.
 */
import * as grpc from '@grpc/grpc-js';
import { loadProtos } from '../../proto/loader.js';
import { type PeerLink, SECRET_METADATA } from './peer-link.js';


/** A dynamic grpc-js client: methods by name. */
export type Stub = grpc.Client & Record<string, (...args: unknown[]) => grpc.ClientUnaryCall & grpc.ClientReadableStream<unknown> & grpc.ClientWritableStream<unknown>>;

interface Package {
  blobstore: { v1: Record<string, grpc.ServiceClientConstructor> };
}

let pkg: Package | undefined;
function constructors(): Record<string, grpc.ServiceClientConstructor> {
  pkg ??= grpc.loadPackageDefinition(loadProtos()) as unknown as Package;
  return pkg.blobstore.v1;
}

/** A failed call: the gRPC status code and message (UNAVAILABLE when the peer cannot be reached). */
export class PeerCallError extends Error {
  constructor(
    readonly peer: string,
    readonly method: string,
    readonly code: number,
    details: string,
  ) {
    super(`${method} on ${peer}: ${grpc.status[code] ?? code}: ${details}`);
    this.name = 'PeerCallError';
  }
}

export interface Peer {
  readonly address: string;
  readonly cluster: Stub;
  readonly internal: Stub;
}

export interface PeerOptions {
  /** The cluster secret and the transport (TLS or not) of every call to a peer. */
  link: PeerLink;
  maxMessageBytes: number;
  /** HTTP/2 window this node announces on its channels (reads from peers stream into it). */
  windowBytes: number;
  /** Deadline of unary calls. */
  callTimeoutMs: number;
}

export class PeerClients {
  private readonly peers = new Map<string, Peer>();

  constructor(private readonly options: PeerOptions) {
    // Channels carry the certificate they were made with: a new one makes new channels.
    options.link.onChange(() => this.retain(new Set()));
  }

  /** The stubs for a peer at `address`, made on first use (and again when the address changes). */
  get(nodeId: string, address: string): Peer {
    const known = this.peers.get(nodeId);
    if (known?.address === address) return known;
    if (known) this.closeOne(known);
    const channelOptions: grpc.ChannelOptions = {
      'grpc.max_receive_message_length': this.options.maxMessageBytes,
      'grpc.max_send_message_length': this.options.maxMessageBytes,
      'grpc.enable_channelz': 0,
      // Node's default 64 KiB window makes a 1 MiB read from a peer wait for 16 window updates.
      'grpc-node.flow_control_window': this.options.windowBytes,
      // Reconnect quickly after a peer restarts; heartbeats find out every interval anyway.
      'grpc.initial_reconnect_backoff_ms': 200,
      'grpc.max_reconnect_backoff_ms': 2000,
    };
    const ctors = constructors();
    const credentials = this.options.link.grpcCredentials();
    const cluster = new ctors.ClusterService!(address, credentials, channelOptions) as unknown as Stub;
    // The second stub shares the first one's channel.
    const internal = new ctors.InternalService!(address, credentials, { ...channelOptions, channelOverride: cluster.getChannel() }) as unknown as Stub;
    const peer = { address, cluster, internal };
    this.peers.set(nodeId, peer);
    return peer;
  }

  /** Channels that are connected now (grpc_connections_active). */
  connected(): number {
    let n = 0;
    for (const p of this.peers.values()) if (p.cluster.getChannel().getConnectivityState(false) === grpc.connectivityState.READY) n++;
    return n;
  }

  /** Drops the channels of peers not in `keep` (removed members). */
  retain(keep: ReadonlySet<string>): void {
    for (const [nodeId, peer] of this.peers) {
      if (keep.has(nodeId)) continue;
      this.closeOne(peer);
      this.peers.delete(nodeId);
    }
  }

  private metadata(): grpc.Metadata {
    const md = new grpc.Metadata();
    if (this.options.link.secret !== '') md.set(SECRET_METADATA, this.options.link.secret);
    return md;
  }

  /** A unary call with the secret and a deadline; rejects with PeerCallError. */
  unary<Res>(stub: Stub, peer: string, method: string, request: unknown, timeoutMs = this.options.callTimeoutMs): Promise<Res> {
    return new Promise((resolve, reject) => {
      stub[method]!(request, this.metadata(), { deadline: Date.now() + timeoutMs }, (err: grpc.ServiceError | null, response: Res) => {
        if (err) reject(new PeerCallError(peer, method, err.code, err.details));
        else resolve(response);
      });
    });
  }

  private closeOne(peer: Peer): void {
    peer.internal.close();
    peer.cluster.close();
  }

  close(): void {
    for (const peer of this.peers.values()) this.closeOne(peer);
    this.peers.clear();
  }
}

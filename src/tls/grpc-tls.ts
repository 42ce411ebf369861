/**
 * The node's TLS in grpc-js's terms. The server takes its certificate from a provider that the
 * node's SIGHUP reload feeds (grpc-js swaps the secure context of the running server); with a CA
 * it asks clients for a certificate without requiring one (users' clients have none), and
 * InternalService then refuses a call whose connection presented none that verified
 * (`verifiedPeer`). Clients get channel credentials of the material at hand; peers.ts drops its
 * channels when the material changes.
 */
import * as grpc from '@grpc/grpc-js';
import type { AuthContext } from '@grpc/grpc-js/build/src/auth-context.js';
import type { CaCertificateUpdateListener, CertificateProvider, IdentityCertificateUpdateListener } from '@grpc/grpc-js/build/src/certificate-provider.js';
import type { NodeTls, TlsMaterial } from './node-tls.js';

/** Hands the node's material to grpc-js, now and after every reload. */
class NodeTlsProvider implements CertificateProvider {
  private readonly identity = new Set<IdentityCertificateUpdateListener>();
  private readonly ca = new Set<CaCertificateUpdateListener>();

  constructor(private readonly tls: NodeTls) {
    tls.onChange((m) => {
      for (const l of this.identity) l({ certificate: m.cert, privateKey: m.key });
      if (m.ca) for (const l of this.ca) l({ caCertificate: m.ca });
    });
  }

  addCaCertificateListener(listener: CaCertificateUpdateListener): void {
    this.ca.add(listener);
    const ca = this.tls.material.ca;
    if (ca) process.nextTick(listener, { caCertificate: ca });
  }

  removeCaCertificateListener(listener: CaCertificateUpdateListener): void {
    this.ca.delete(listener);
  }

  addIdentityCertificateListener(listener: IdentityCertificateUpdateListener): void {
    this.identity.add(listener);
    const m = this.tls.material;
    process.nextTick(listener, { certificate: m.cert, privateKey: m.key });
  }

  removeIdentityCertificateListener(listener: IdentityCertificateUpdateListener): void {
    this.identity.delete(listener);
  }
}

export function serverCredentials(tls: NodeTls | undefined): grpc.ServerCredentials {
  if (!tls) return grpc.ServerCredentials.createInsecure();
  const provider = new NodeTlsProvider(tls);
  return grpc.experimental.createCertificateProviderServerCredentials(provider, tls.mutual ? provider : null, false);
}

export function channelCredentials(material: TlsMaterial | undefined): grpc.ChannelCredentials {
  if (!material) return grpc.credentials.createInsecure();
  return material.ca ? grpc.credentials.createSsl(material.ca, material.key, material.cert) : grpc.credentials.createSsl();
}

/** The call came over a connection whose client certificate verified against TLSCAFile. */
export function verifiedPeer(call: { getAuthContext?: () => AuthContext | null }): boolean {
  return call.getAuthContext?.()?.sslPeerCertificate !== undefined;
}

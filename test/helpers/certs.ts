/**
 * Test certificates made with Debian's openssl: a CA, and certificates it signs for a name and its
 * addresses (subjectAltName IP and DNS entries), usable by servers and as client certificates.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export const OPENSSL = '/usr/bin/openssl';
export const haveOpenssl = existsSync(OPENSSL);

export interface CertFiles {
  cert: string;
  key: string;
}

function openssl(args: string[]): void {
  execFileSync(OPENSSL, args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A self-signed CA in `dir` (`<name>.pem`, `<name>.key`). */
export function makeCa(dir: string, name = 'ca'): CertFiles {
  const files = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', files.key, '-out', files.cert,
    '-days', '2', '-subj', `/CN=${name}`, '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  return files;
}

/** A certificate for `name` signed by `ca`, valid for the given IP addresses and DNS names. */
export function makeCert(dir: string, ca: CertFiles, name: string, sans: { ips?: string[]; dns?: string[] } = { ips: ['127.0.0.1'] }): CertFiles {
  const files = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  const alt = [...(sans.ips ?? []).map((ip) => `IP:${ip}`), ...(sans.dns ?? []).map((d) => `DNS:${d}`)].join(',');
  execFileSync('/bin/sh', ['-c', `printf 'subjectAltName=%s\\nextendedKeyUsage=serverAuth,clientAuth\\n' "$1" > "$2"`, 'sh', alt, ext]);
  openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', files.key, '-out', csr, '-subj', `/CN=${name}`]);
  openssl(['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-out', files.cert, '-days', '2', '-extfile', ext]);
  return files;
}

// Mutual TLS for the extensions' gRPC servers, on both transports (`--tls-cert`, `--tls-key`, `--tls-client-ca`):
// TLS 1.2 or later, ALPN h2 (RFC 9113 3.2), and a client certificate required and verified against the CA,
// so only a holder of a certificate that CA signed (Envoy's) gets past the handshake. The HTTP/2 protocol on top
// is unchanged. The files are checked again every reloadIntervalMs: a rotated certificate (a Kubernetes Secret
// updated by cert-manager) serves new connections without a restart; open ones keep theirs.
import fs from 'node:fs';
import tls from 'node:tls';
import type { H2Server, H2ServerOptions, H2TlsFiles } from './transport.js';

export const DEFAULT_TLS_RELOAD_MS = 30_000;

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
  ca: Buffer;
}

/** Which file a TlsFilesError is about ('pair': the key is not the certificate's, or a file is not PEM). */
export type TlsFile = 'cert' | 'key' | 'ca' | 'pair';

export class TlsFilesError extends Error {
  constructor(
    readonly file: TlsFile,
    message: string,
  ) {
    super(message);
  }
}

/** Reads the three files and checks they make a server context (parsable PEM, the key the certificate's). */
export function readTlsFiles(files: H2TlsFiles): TlsMaterial {
  const read = (file: TlsFile, name: string): Buffer => {
    try {
      return fs.readFileSync(name);
    } catch (err) {
      throw new TlsFilesError(file, `cannot read ${name}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  };
  const material = { cert: read('cert', files.certFile), key: read('key', files.keyFile), ca: read('ca', files.clientCaFile) };
  try {
    tls.createSecureContext(material);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // OpenSSL's words name the part: a CA it cannot parse, a key that is not the certificate's
    const file: TlsFile = /ca|x509 lib/i.test(message) && !/key/i.test(message) ? 'ca' : 'pair';
    throw new TlsFilesError(file, `${files.certFile}, ${files.keyFile}, ${files.clientCaFile}: ${message}`);
  }
  return material;
}

/** The server side of the handshake: our certificate, ALPN h2, and a client certificate the CA signed. */
export function tlsServerOptions(m: TlsMaterial): tls.TlsOptions {
  return {
    cert: m.cert,
    key: m.key,
    ca: m.ca,
    requestCert: true,
    rejectUnauthorized: true,
    ALPNProtocols: ['h2'],
    minVersion: 'TLSv1.2',
  };
}

/** A failed handshake worth a (rate-limited) line: a refused certificate; not a probe that connected and left. */
function worthLogging(err: NodeJS.ErrnoException): boolean {
  return err.code !== 'ECONNRESET' && err.code !== 'EPIPE' && !/disconnected before secure TLS connection/.test(err.message);
}

/**
 * Once listening: failed handshakes go to onError, and the files are checked every reloadIntervalMs; when they
 * changed and make a valid context, new connections get it (a bad new version is reported, the old one kept).
 */
export async function servingTls(
  server: tls.Server,
  files: H2TlsFiles,
  material: TlsMaterial,
  options: Pick<H2ServerOptions, 'onError'>,
  listening: Promise<H2Server>,
): Promise<H2Server> {
  server.on('tlsClientError', (err: NodeJS.ErrnoException) => {
    if (worthLogging(err)) options.onError('tls handshake', err);
  });
  const h2 = await listening;
  const interval = files.reloadIntervalMs ?? DEFAULT_TLS_RELOAD_MS;
  if (!interval) return h2;
  let current = material;
  const timer = setInterval(() => {
    let next: TlsMaterial;
    try {
      next = readTlsFiles(files);
    } catch (err) {
      options.onError('tls reload', err);
      return;
    }
    if (next.cert.equals(current.cert) && next.key.equals(current.key) && next.ca.equals(current.ca)) return;
    server.setSecureContext({ cert: next.cert, key: next.key, ca: next.ca });
    current = next;
  }, interval);
  timer.unref();
  return {
    port: h2.port,
    stop: (graceMs) => {
      clearInterval(timer);
      return h2.stop(graceMs);
    },
  };
}

// The extensions' HTTP/2 transports over mutual TLS (extensions/common/h2/tls.ts), each against node:http2's client:
// a client with a certificate the CA signed is served (ALPN h2); one without a certificate, with one another CA
// signed, or speaking cleartext HTTP/2 is refused in the handshake; unreadable or mismatched files are named at
// start; rotated files serve new connections without a restart. Certificates: `legate run --extensions-mtls`'s.
import fs from 'node:fs';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureExtensionsTls, type XdsTlsDirs } from '../../cli/run/xds-tls.js';
import { listenTransport } from '../../extensions/common/h2/listen.js';
import { readTlsFiles, TlsFilesError } from '../../extensions/common/h2/tls.js';
import { H2_TRANSPORTS, type H2Server, type H2Stream, type H2StreamHandler } from '../../extensions/common/h2/transport.js';

let tmp: string;
/** the certificates the servers start with, and a second set (another CA) */
let first: XdsTlsDirs;
let other: XdsTlsDirs;

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-h2-tls-'));
  first = ensureExtensionsTls(path.join(tmp, 'first'));
  other = ensureExtensionsTls(path.join(tmp, 'other'));
});

afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const file = (dir: string, name: string): Buffer => fs.readFileSync(path.join(dir, name));

function echo(stream: H2Stream): H2StreamHandler {
  return {
    onData: () => undefined,
    onEnd() {
      stream.respond([
        [':status', '200'],
        ['content-type', 'application/grpc'],
      ]);
      stream.write(Buffer.from('served'));
      stream.end([['grpc-status', '0']]);
    },
  };
}

interface Outcome {
  status?: number;
  body?: string;
  alpn?: string | false;
  error?: string;
}

/** One POST on a new connection; a refused handshake or connection is an `error`. */
function call(url: string, options: http2.SecureClientSessionOptions): Promise<Outcome> {
  return new Promise((resolve) => {
    const session = http2.connect(url, { ...options, timeout: 5000 } as http2.SecureClientSessionOptions);
    const done = (o: Outcome): void => {
      session.destroy();
      resolve(o);
    };
    session.on('error', (err: Error) => done({ error: err.message }));
    session.setTimeout(5000, () => done({ error: 'timeout' }));
    const req = session.request({ ':method': 'POST', ':path': '/legate.Test/Call', 'content-type': 'application/grpc' });
    const chunks: Buffer[] = [];
    let status: number | undefined;
    req.on('response', (h) => (status = Number(h[':status'])));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () =>
      done(
        status === undefined
          ? { error: 'closed without an answer' }
          : { status, body: Buffer.concat(chunks).toString(), alpn: session.alpnProtocol ?? false },
      ),
    );
    req.on('error', (err: Error) => done({ error: err.message }));
    req.end();
  });
}

/** Client options: trust `ca`'s CA (the server's), present `client`'s certificate (none: no certificate). */
function clientOf(ca: XdsTlsDirs, client?: XdsTlsDirs): http2.SecureClientSessionOptions {
  return {
    ca: file(ca.client, 'ca.crt'),
    ...(client ? { cert: file(client.client, 'tls.crt'), key: file(client.client, 'tls.key') } : {}),
  };
}

describe.each(H2_TRANSPORTS)('h2 transport %s over mutual TLS', (transport) => {
  let server: H2Server;
  let url: string;
  let live: string;
  const errors: string[] = [];

  beforeAll(async () => {
    // the files the server reads, a copy it can be made to rotate
    live = fs.mkdtempSync(path.join(tmp, `live-${transport}-`));
    for (const name of ['tls.crt', 'tls.key', 'ca.crt']) fs.copyFileSync(path.join(first.server, name), path.join(live, name));
    server = await listenTransport(
      {
        transport,
        tls: {
          certFile: path.join(live, 'tls.crt'),
          keyFile: path.join(live, 'tls.key'),
          clientCaFile: path.join(live, 'ca.crt'),
          reloadIntervalMs: 100,
        },
      },
      '127.0.0.1',
      0,
      { onStream: echo, onError: (what, err) => errors.push(`${what}: ${err instanceof Error ? err.message : String(err)}`) },
    );
    url = `https://127.0.0.1:${server.port}`;
  });

  afterAll(() => server?.stop(100));

  it('serves a client whose certificate the CA signed, over h2', async () => {
    expect(await call(url, clientOf(first, first))).toEqual({ status: 200, body: 'served', alpn: 'h2' });
  });

  it('refuses a client without a certificate, with one another CA signed, and cleartext HTTP/2', async () => {
    expect((await call(url, clientOf(first))).error).toMatch(/alert certificate required/);
    // (TLS 1.3: the client's handshake is over before the server's alert comes; the connection closes)
    expect(await call(url, clientOf(first, other))).toEqual({ error: expect.any(String) });
    expect(await call(`http://127.0.0.1:${server.port}`, {})).toEqual({ error: expect.any(String) });
    // the refused certificates are reported (rate-limited by the services' loggers)
    expect(errors.some((e) => e.startsWith('tls handshake: '))).toBe(true);
  });

  it('serves new connections with rotated files, without a restart', async () => {
    for (const name of ['tls.crt', 'tls.key', 'ca.crt']) fs.copyFileSync(path.join(other.server, name), path.join(live, name));
    const deadline = Date.now() + 10_000;
    let got: Outcome = {};
    while (Date.now() < deadline) {
      got = await call(url, clientOf(other, other));
      if (got.status === 200) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(got).toEqual({ status: 200, body: 'served', alpn: 'h2' });
    // the old CA's clients are refused now
    expect(await call(url, clientOf(other, first))).toEqual({ error: expect.any(String) });
  });
});

describe('TLS files at start', () => {
  it('names the file it cannot read, and a key that is not the certificate’s', async () => {
    const files = (over: Partial<Record<'certFile' | 'keyFile' | 'clientCaFile', string>>) => ({
      certFile: path.join(first.server, 'tls.crt'),
      keyFile: path.join(first.server, 'tls.key'),
      clientCaFile: path.join(first.server, 'ca.crt'),
      ...over,
    });
    const fails = (f: ReturnType<typeof files>): TlsFilesError => {
      try {
        readTlsFiles(f);
      } catch (err) {
        if (err instanceof TlsFilesError) return err;
        throw err;
      }
      throw new Error('no error');
    };
    const missing = fails(files({ keyFile: path.join(tmp, 'nope.key') }));
    expect(missing.file).toBe('key');
    expect(missing.message).toBe(`cannot read ${path.join(tmp, 'nope.key')}: ENOENT`);
    const mismatch = fails(files({ keyFile: path.join(other.server, 'tls.key') }));
    expect(mismatch.file).toBe('pair');
    expect(mismatch.message).toMatch(/key values mismatch/);
    // both transports refuse to start with them
    for (const transport of H2_TRANSPORTS) {
      await expect(
        listenTransport({ transport, tls: files({ certFile: path.join(tmp, 'nope.crt') }) }, '127.0.0.1', 0, {
          onStream: echo,
          onError: () => undefined,
        }),
      ).rejects.toThrow(`cannot read ${path.join(tmp, 'nope.crt')}: ENOENT`);
    }
  });
});

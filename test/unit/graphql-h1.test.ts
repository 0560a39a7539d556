// The resolvers' HTTP/1.1 client (extensions/graphql/engine/h1.ts) against a raw TCP server that answers
// with hand-written responses: framing (content-length, chunked, until close, HEAD, 1xx), keep-alive and
// its end, a connection closed as it is reused, limits and values HTTP cannot carry.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpstreamPool } from '../../extensions/graphql/engine/upstream.js';
import { CallError } from '../../extensions/graphql/engine/errors.js';
import { encodeRequest, H1Endpoint, H1Error } from '../../extensions/graphql/engine/h1.js';

/** Answers each request (one per head read) with the response for its path, written in the given pieces. */
type Script = (path: string, socket: net.Socket, n: number) => void;

let server: net.Server;
let port = 0;
let connections = 0;
const scripts = new Map<string, Script>();
const seen: string[] = [];

beforeAll(async () => {
  server = net.createServer((socket) => {
    connections++;
    let buf = '';
    let n = 0;
    socket.on('error', () => undefined);
    socket.on('data', (d) => {
      buf += d.toString('latin1');
      for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
        const head = buf.slice(0, end);
        const length = /content-length: (\d+)/i.exec(head);
        const total = end + 4 + (length ? Number(length[1]) : 0);
        if (buf.length < total) return;
        seen.push(buf.slice(0, total));
        buf = buf.slice(total);
        const path = head.split(' ')[1]!;
        (scripts.get(path.split('?')[0]!) ?? ((_p, s) => s.write('HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\n{}')))(
          path,
          socket,
          n++,
        );
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
  const json = (body: string, extra = ''): string => `HTTP/1.1 200 OK\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;
  scripts.set('/length', (_p, s) => s.write(json('{"a":1}')));
  scripts.set('/split', (_p, s) => {
    const r = json('{"split":"é"}');
    const b = Buffer.from(r);
    for (let i = 0; i < b.length; i += 3) setTimeout(() => s.write(b.subarray(i, i + 3)), i);
  });
  scripts.set('/chunked', (_p, s) =>
    s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{"c\r\n6;ext=1\r\n":[1,2\r\n2\r\n]}\r\n0\r\nx-trailer: 1\r\n\r\n'),
  );
  scripts.set('/continue', (_p, s) => s.write('HTTP/1.1 100 Continue\r\n\r\n' + json('{"after":"100"}')));
  scripts.set('/close', (_p, s) => s.end('HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n{"until":"close"}'));
  scripts.set('/empty', (_p, s) => s.write('HTTP/1.1 204 No Content\r\n\r\n'));
  scripts.set('/error', (_p, s) => s.write('HTTP/1.1 503 Service Unavailable\r\ncontent-length: 5\r\n\r\nbusy!'));
  scripts.set('/notjson', (_p, s) => s.write('HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nnot'));
  scripts.set('/garbage', (_p, s) => s.write('SMTP ready\r\n\r\n'));
  scripts.set('/big', (_p, s) => s.write('HTTP/1.1 200 OK\r\ncontent-length: 999999999\r\n\r\n{'));
  scripts.set('/echo', (_p, s) => s.write(json(JSON.stringify({ request: seen.at(-1) }))));
  // answers, then closes the kept-alive connection only once the next request has arrived: a reused connection dies
  scripts.set('/flaky', (_p, s, n) => (n === 0 ? s.write(json('{"first":true}')) : s.destroy()));
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function pool(): UpstreamPool {
  return new UpstreamPool({ name: 'ns.raw', endpoints: [{ address: '127.0.0.1', port }] }, `raw-${Math.random()}`);
}

const get = (p: UpstreamPool, path: string, method = 'GET', body?: string): Promise<unknown> =>
  p.call({ method, path, headers: { accept: 'application/json' }, body, timeoutMs: 2000 });

async function code(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'resolved';
  } catch (err) {
    return err instanceof CallError ? err.code : err instanceof H1Error ? err.code : String(err);
  }
}

describe('resolver HTTP/1.1 client', () => {
  it('reads content-length bodies, also when they arrive in pieces, and reuses the connection', async () => {
    const p = pool();
    const before = connections;
    expect(await get(p, '/length')).toEqual({ a: 1 });
    expect(await get(p, '/split')).toEqual({ split: 'é' });
    expect(await get(p, '/length')).toEqual({ a: 1 });
    expect(connections - before).toBe(1);
    p.destroy();
  });

  it('reads chunked bodies (extensions and trailers), skips 1xx, reads until close, answers null for 204', async () => {
    const p = pool();
    expect(await get(p, '/chunked')).toEqual({ c: [1, 2] });
    expect(await get(p, '/continue')).toEqual({ after: '100' });
    expect(await get(p, '/close')).toEqual({ until: 'close' });
    expect(await get(p, '/empty')).toBeNull();
    expect(await get(p, '/length')).toEqual({ a: 1 });
    p.destroy();
  });

  it('sends the method, path, host, headers and a body with its length', async () => {
    const p = pool();
    const r = (await get(p, '/echo?x=1', 'POST', '{"é":1}')) as { request: string };
    expect(r.request).toBe(
      `POST /echo?x=1 HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\naccept: application/json\r\ncontent-length: 8\r\n\r\n{"é":1}`.replace(
        'é',
        'Ã©',
      ),
    );
    p.destroy();
  });

  it('maps statuses, bodies and broken responses to the resolver error codes, and stays usable', async () => {
    const p = pool();
    expect(await code(get(p, '/error'))).toBe('UPSTREAM_HTTP_ERROR');
    expect(await code(get(p, '/notjson'))).toBe('UPSTREAM_BAD_RESPONSE');
    expect(await code(get(p, '/big'))).toBe('UPSTREAM_BAD_RESPONSE');
    expect(await code(get(p, '/garbage'))).toBe('UPSTREAM_UNAVAILABLE');
    expect(await get(p, '/length')).toEqual({ a: 1 });
    p.destroy();
  });

  it('retries an idempotent call once on a new connection when a reused one is closed under it', async () => {
    const p = pool();
    expect(await get(p, '/flaky')).toEqual({ first: true });
    // the second request on that connection is dropped by the server: retried on a new connection, where it is first
    expect(await get(p, '/flaky')).toEqual({ first: true });
    expect(await get(p, '/flaky')).toEqual({ first: true });
    // a POST is not retried
    expect(await code(get(p, '/flaky', 'POST', '{}'))).toBe('UPSTREAM_UNAVAILABLE');
    p.destroy();
  });

  it('closes free connections idle past the timeout instead of reusing them', async () => {
    const ep = new H1Endpoint({ host: '127.0.0.1', port, tls: undefined, idleTimeoutMs: 100, maxResponseBytes: 1 << 20 });
    const before = connections;
    const once = (): Promise<number> =>
      new Promise((resolve, reject) =>
        ep.send(encodeRequest('GET', '/length', { host: 'x' }, undefined) as string, undefined, {
          response: (status) => resolve(status),
          failure: (err) => reject(err),
        }),
      );
    expect(await once()).toBe(200);
    expect(await once()).toBe(200);
    expect(connections - before).toBe(1);
    await new Promise((r) => setTimeout(r, 300));
    expect(await once()).toBe(200);
    expect(ep.opened).toBe(2);
    ep.close();
  });

  it('refuses paths and header values HTTP cannot carry before anything is sent', () => {
    expect(encodeRequest('GET', '/a b', {}, undefined)).toBeInstanceOf(H1Error);
    expect(encodeRequest('GET', '/a', { 'x-a': 'v\r\nx-injected: 1' }, undefined)).toBeInstanceOf(H1Error);
    expect(encodeRequest('GET', '/a?q=%20', { 'x-a': 'v' }, undefined)).toBe('GET /a?q=%20 HTTP/1.1\r\nx-a: v\r\n\r\n');
  });
});

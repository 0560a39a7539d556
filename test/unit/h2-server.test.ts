// The extensions' HTTP/2 transports (extensions/common/h2/: Legate's own server and node:http2 behind the same
// interface) against node:http2's client (nghttp2): answers with headers, data and trailers; many streams on one
// connection; flow control both ways with bodies larger than the windows; CONTINUATION; the HPACK dynamic table
// across requests; resets, PING, GOAWAY on stop, on both transports. Then Legate's server alone over raw frames:
// a client that is not HTTP/2, protocol violations, stream states and the abuse limits.
import http2 from 'node:http2';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeHeaders } from '../../extensions/common/h2/hpack.js';
import { listenTransport } from '../../extensions/common/h2/listen.js';
import { frameHeader, limitHits, listenH2, malformedRequest, type H2Limits, type H2Server } from '../../extensions/common/h2/server.js';
import { H2_TRANSPORTS, type H2Stream, type H2StreamHandler } from '../../extensions/common/h2/transport.js';

const aborted: string[] = [];
/** the paths of the streams the server has seen */
const seen: string[] = [];

/** Echo: answers with the request's headers as JSON in a header, the body (or `size` bytes of it), and trailers. */
function serve(stream: H2Stream): H2StreamHandler | undefined {
  const chunks: Buffer[] = [];
  const path = stream.header(':path') ?? '';
  seen.push(path);
  if (path === '/refuse') {
    stream.respond([[':status', '403']], true);
    return undefined;
  }
  return {
    onData: (c) => void chunks.push(Buffer.from(c)),
    onEnd() {
      const body = Buffer.concat(chunks);
      const size = Number(new URL(path, 'http://x').searchParams.get('size') ?? '-1');
      const answer = () => {
        stream.respond([
          [':status', '200'],
          ['x-request-headers', JSON.stringify(stream.headers.filter(([k]) => !k.startsWith(':') && k.startsWith('x-')))],
          ['x-body-bytes', String(body.length)],
        ]);
        stream.write(size >= 0 ? Buffer.alloc(size, 0x61) : body);
        stream.end([['x-done', 'yes']]);
      };
      if (path.startsWith('/later')) setTimeout(answer, 20);
      else answer();
    },
    onAbort: () => void aborted.push(path),
  };
}

function callOn(
  session: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
  body?: Buffer,
): Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: Buffer; trailers: http2.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':method': 'POST', ...headers });
    const chunks: Buffer[] = [];
    let resHeaders: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    req.on('response', (h) => (resHeaders = h));
    req.on('trailers', (t) => (trailers = t));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve({ status: Number(resHeaders[':status']), headers: resHeaders, body: Buffer.concat(chunks), trailers }));
    req.on('error', reject);
    req.end(body);
  });
}

describe.each(H2_TRANSPORTS)('h2 transport %s', (transport) => {
  let server: H2Server;
  let client: http2.ClientHttp2Session;
  const call = (headers: http2.OutgoingHttpHeaders, body?: Buffer, session = client) => callOn(session, headers, body);

  beforeAll(async () => {
    server = await listenTransport({ transport }, '127.0.0.1', 0, { onStream: serve, onError: (what, err) => console.error(what, err) });
    client = http2.connect(`http://127.0.0.1:${server.port}`);
  });

  afterAll(async () => {
    client?.close();
    await server?.stop(500);
  });

  it('answers headers, data and trailers', async () => {
    const r = await call({ ':path': '/echo', 'x-a': 'one' }, Buffer.from('hello'));
    expect(r.status).toBe(200);
    expect(JSON.parse(String(r.headers['x-request-headers']))).toEqual([['x-a', 'one']]);
    expect(r.body.toString()).toBe('hello');
    expect(r.trailers['x-done']).toBe('yes');
  });

  it('serves many streams at once on one connection, also answered on later ticks', async () => {
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, i) => call({ ':path': i % 3 ? '/echo' : '/later', 'x-i': String(i) }, Buffer.from(`body-${i}`))),
    );
    results.forEach((r, i) => {
      expect(r.body.toString()).toBe(`body-${i}`);
      expect(JSON.parse(String(r.headers['x-request-headers']))).toEqual([['x-i', String(i)]]);
    });
  });

  it('keeps the HPACK dynamic table in step with the client over many requests', async () => {
    for (let i = 0; i < 50; i++) {
      const r = await call({ ':path': '/echo', 'x-same': 'a fairly long value that the client indexes', 'x-changing': `v${i % 7}` });
      expect(JSON.parse(String(r.headers['x-request-headers']))).toEqual([
        ['x-same', 'a fairly long value that the client indexes'],
        ['x-changing', `v${i % 7}`],
      ]);
    }
  });

  it('sends a body larger than the client windows (flow control) and takes one larger than a frame', async () => {
    const big = await call({ ':path': '/echo?size=300000' });
    expect(big.body.length).toBe(300_000);
    expect(big.trailers['x-done']).toBe('yes');
    const upload = Buffer.alloc(1_000_000, 7);
    const r = await call({ ':path': '/echo?size=3' }, upload);
    expect(r.headers['x-body-bytes']).toBe('1000000');
  });

  it('reads a header block split over CONTINUATION frames', async () => {
    const long = 'x'.repeat(40_000);
    const r = await call({ ':path': '/echo', 'x-long': long });
    expect(JSON.parse(String(r.headers['x-request-headers']))).toEqual([['x-long', long]]);
  });

  it('answers before the request ends, and tells the client of a reset', async () => {
    const refused = await call({ ':path': '/refuse' }, Buffer.from('ignored'));
    expect(refused.status).toBe(403);
    const req = client.request({ ':method': 'POST', ':path': '/later-reset' });
    req.write('partial');
    await new Promise((r) => setTimeout(r, 50));
    req.close(http2.constants.NGHTTP2_CANCEL);
    await new Promise((r) => setTimeout(r, 50));
    expect(aborted).toContain('/later-reset');
    // the connection still serves
    expect((await call({ ':path': '/echo' }, Buffer.from('ok'))).body.toString()).toBe('ok');
  });

  it('answers PING', async () => {
    const ms = await new Promise<number>((resolve, reject) => client.ping((err, d) => (err ? reject(err) : resolve(d))));
    expect(ms).toBeGreaterThanOrEqual(0);
  });

  it('stops gracefully: GOAWAY, the stream in flight still answered', async () => {
    const s2 = await listenTransport({ transport }, '127.0.0.1', 0, { onStream: serve, onError: () => undefined });
    const c2 = http2.connect(`http://127.0.0.1:${s2.port}`);
    await call({ ':path': '/echo' }, Buffer.from('warm'), c2);
    const goaway = new Promise<void>((resolve) => c2.on('goaway', () => resolve()));
    seen.length = 0;
    const inFlight = call({ ':path': '/later-in-flight' }, Buffer.from('late'), c2);
    while (!seen.includes('/later-in-flight')) await new Promise((r) => setTimeout(r, 2));
    const stopped = s2.stop(2000);
    await goaway;
    expect((await inFlight).body.toString()).toBe('late');
    await stopped;
    c2.close();
  });
});

describe('h2 server (Legate) over raw frames', () => {
  let server: H2Server;

  beforeAll(async () => {
    server = await listenH2('127.0.0.1', 0, { onStream: serve, onError: (what, err) => console.error(what, err) });
  });

  afterAll(async () => {
    await server?.stop(500);
  });

  it('closes a connection that does not start with the HTTP/2 preface', async () => {
    const sock = net.connect(server.port, '127.0.0.1');
    const got: Buffer[] = [];
    sock.on('data', (d: Buffer) => got.push(d));
    sock.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise<void>((resolve) => sock.on('close', () => resolve()));
    const all = Buffer.concat(got);
    // our SETTINGS, then a GOAWAY (type 7) with PROTOCOL_ERROR
    let off = 0;
    const types: number[] = [];
    while (off + 9 <= all.length) {
      types.push(all[off + 3]!);
      off += 9 + all.readUIntBE(off, 3);
    }
    expect(types[0]).toBe(4);
    expect(types).toContain(7);
  });

  /** Sends raw frames after the preface and returns the GOAWAY error code the server answers with. */
  async function goawayCodeFor(frames: Buffer[]): Promise<number | undefined> {
    const sock = net.connect(server.port, '127.0.0.1');
    const got: Buffer[] = [];
    sock.on('data', (d: Buffer) => got.push(d));
    sock.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(4, 0, 0, Buffer.alloc(0)), ...frames]));
    await new Promise<void>((resolve) => sock.on('close', () => resolve()));
    const all = Buffer.concat(got);
    for (let off = 0; off + 9 <= all.length; off += 9 + all.readUIntBE(off, 3))
      if (all[off + 3] === 7) return all.readUInt32BE(off + 9 + 4);
    return undefined;
  }
  const frame = (type: number, flags: number, stream: number, payload: Buffer): Buffer =>
    Buffer.concat([frameHeader(payload.length, type, flags, stream), payload]);

  it('answers protocol violations with GOAWAY and the RFC code', async () => {
    // DATA on stream 0: PROTOCOL_ERROR
    expect(await goawayCodeFor([frame(0, 0, 0, Buffer.from('x'))])).toBe(1);
    // an HPACK index beyond both tables: COMPRESSION_ERROR
    expect(await goawayCodeFor([frame(1, 0x5, 1, Buffer.from([0xff, 0x7f]))])).toBe(9);
    // a frame larger than the 16 KiB we accept: FRAME_SIZE_ERROR
    expect(await goawayCodeFor([frame(0, 0, 1, Buffer.alloc(20_000))])).toBe(6);
    // a header block that never ends (CONTINUATION flood): ENHANCE_YOUR_CALM
    const cont = Array.from({ length: 20 }, () => frame(9, 0, 1, Buffer.alloc(16_000, 0x40)));
    expect(await goawayCodeFor([frame(1, 0, 1, Buffer.from([0x82])), ...cont])).toBe(11);
    // a frame other than CONTINUATION inside a header block: PROTOCOL_ERROR
    expect(await goawayCodeFor([frame(1, 0, 1, Buffer.from([0x82])), frame(6, 0, 0, Buffer.alloc(8))])).toBe(1);
  });

  /** Sends raw frames after the preface; the RST_STREAM and GOAWAY frames answered within `ms`, as [type, stream, code]. */
  async function errorsFor(frames: Buffer[], ms = 150, port = server.port, preface = true): Promise<[number, number, number][]> {
    const sock = net.connect(port, '127.0.0.1');
    const got: Buffer[] = [];
    sock.on('data', (d: Buffer) => got.push(d));
    sock.on('error', () => undefined);
    if (preface) sock.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(4, 0, 0, Buffer.alloc(0)), ...frames]));
    let closed = false;
    sock.on('close', () => (closed = true));
    await new Promise((r) => setTimeout(r, ms));
    sock.destroy();
    if (closed) got.push(frameHeader(0, 255, 0, 0)); // the server closed the connection: a marker frame of type 255
    const all = Buffer.concat(got);
    const out: [number, number, number][] = [];
    for (let off = 0; off + 9 <= all.length; off += 9 + all.readUIntBE(off, 3)) {
      const type = all[off + 3]!;
      if (type === 3) out.push([3, all.readUInt32BE(off + 5), all.readUInt32BE(off + 9)]);
      if (type === 7) out.push([7, 0, all.readUInt32BE(off + 9 + 4)]);
      if (type === 255) out.push([255, 0, 0]);
    }
    return out;
  }
  const request = (path: string, extra: [string, string][] = []): Buffer =>
    encodeHeaders([[':method', 'POST'], [':scheme', 'http'], [':path', path], [':authority', 'x'], ...extra]);

  it('refuses malformed requests per stream (RFC 9113 8.1.1, 8.2, 8.3)', async () => {
    const ok: [string, string][] = [
      [':method', 'POST'],
      [':scheme', 'http'],
      [':path', '/a'],
      ['te', 'trailers'],
    ];
    expect(malformedRequest(ok, false)).toBeUndefined();
    expect(malformedRequest([['x-a', '1']], true)).toBeUndefined();
    const bad: [[string, string][], boolean][] = [
      [[...ok, ['X-Upper', '1']], false],
      [[...ok, [':status', '200']], false],
      [[...ok, [':foo', 'x']], false],
      [
        [
          [':method', 'POST'],
          ['x-a', '1'],
          [':scheme', 'http'],
          [':path', '/a'],
        ],
        false,
      ],
      [[...ok, ['connection', 'close']], false],
      [[...ok, ['te', 'gzip']], false],
      [
        [
          [':method', 'POST'],
          [':scheme', 'http'],
          [':path', ''],
        ],
        false,
      ],
      [
        [
          [':method', 'POST'],
          [':path', '/a'],
        ],
        false,
      ],
      [[...ok, [':path', '/b']], false],
      [[...ok, ['content-length', 'abc']], false],
      [[[':path', '/a']], true],
    ];
    for (const [fields, trailers] of bad) expect(malformedRequest(fields, trailers), JSON.stringify(fields)).toBeDefined();
    // on the wire: RST_STREAM PROTOCOL_ERROR for that stream, the connection goes on (the next stream is answered)
    const errors = await errorsFor([
      frame(1, 0x5, 1, request('/echo', [['X-Upper', '1']])),
      frame(1, 0x5, 3, request('/echo', [['content-length', '4']])),
      frame(1, 0x5, 5, request('/refuse')),
    ]);
    expect(errors).toEqual([
      [3, 1, 1],
      [3, 3, 1],
    ]);
  });

  it('checks a name taken from the HPACK dynamic table as it checked the literal (its kind kept with the entry)', async () => {
    // literal with incremental indexing, new name: the field goes into the dynamic table (newest at index 62)
    const indexed = (n: string, v: string): Buffer =>
      Buffer.concat([Buffer.from([0x40, n.length]), Buffer.from(n), Buffer.from([v.length]), Buffer.from(v)]);
    const base = request('/echo');
    const errors = await errorsFor([
      frame(1, 0x5, 1, Buffer.concat([base, indexed('X-Upper', '1')])),
      frame(1, 0x5, 3, Buffer.concat([base, Buffer.from([0xbe])])), // 62: X-Upper
      frame(1, 0x5, 5, Buffer.concat([base, indexed('connection', 'close')])),
      frame(1, 0x5, 7, Buffer.concat([base, Buffer.from([0xbe])])), // 62: connection, 63: X-Upper
      frame(1, 0x5, 9, Buffer.concat([base, Buffer.from([0xbf])])),
      frame(1, 0x5, 11, Buffer.concat([base, Buffer.from([0x0f, 0x2f, 1, 0x32])])), // literal value, name 62 (connection)
      frame(1, 0x5, 13, request('/refuse')),
    ]);
    expect(errors).toEqual([1, 3, 5, 7, 9, 11].map((id) => [3, id, 1]));
  });

  it('refuses a header list over 64 KiB per stream (REFUSED_STREAM), the connection goes on', async () => {
    const big = request('/echo', [['x-big', 'a'.repeat(70_000)]]);
    const parts = [0, 16_000, 32_000, 48_000, 64_000].map((o) => big.subarray(o, o + 16_000));
    const frames = parts.map((p, i) => (i === 0 ? frame(1, 0x1, 1, p) : frame(9, i === parts.length - 1 ? 0x4 : 0, 1, p)));
    expect(await errorsFor([...frames, frame(1, 0x5, 3, request('/refuse'))])).toEqual([[3, 1, 7]]);
  });

  it('follows the stream states (RFC 9113 5.1)', async () => {
    // WINDOW_UPDATE on an idle stream, a stream id lower than a previous one: connection errors
    expect(await goawayCodeFor([frame(8, 0, 1, Buffer.from([0, 0, 0, 1]))])).toBe(1);
    expect(await goawayCodeFor([frame(1, 0x5, 5, request('/refuse')), frame(1, 0x5, 3, request('/refuse'))])).toBe(1);
    // DATA on a closed stream: STREAM_CLOSED; HEADERS depending on itself: PROTOCOL_ERROR; a zero WINDOW_UPDATE on a
    // stream answered before its request ended: PROTOCOL_ERROR
    const selfDep = Buffer.concat([Buffer.from([0, 0, 0, 3, 16]), request('/refuse')]);
    const errors = await errorsFor([
      frame(1, 0x5, 1, request('/refuse')),
      frame(0, 0x1, 1, Buffer.from('late')),
      frame(1, 0x25, 3, selfDep),
      frame(1, 0x4, 5, request('/refuse')),
      frame(8, 0, 5, Buffer.from([0, 0, 0, 0])),
    ]);
    expect(errors).toEqual([
      [3, 1, 5],
      [3, 3, 1],
      [3, 5, 1],
    ]);
  });

  it('advertises 100 concurrent streams and refuses the 101st with REFUSED_STREAM', async () => {
    // requests whose body never ends stay open
    const open = Array.from({ length: 101 }, (_, i) => frame(1, 0x4, 1 + 2 * i, request('/echo')));
    expect(await errorsFor(open, 300)).toEqual([[3, 201, 7]]);
  });

  /** errorsFor on a server with these limits; the limits' hits counted meanwhile */
  async function withLimits(limits: Partial<H2Limits>, frames: Buffer[], ms = 300, preface = true) {
    const s2 = await listenH2('127.0.0.1', 0, { onStream: serve, onError: () => undefined, limits });
    const before = { ...limitHits };
    const errors = await errorsFor(frames, ms, s2.port, preface);
    await s2.stop(100);
    const hits = Object.fromEntries(
      Object.entries(limitHits).flatMap(([k, n]) =>
        n > before[k as keyof typeof before] ? [[k, n - before[k as keyof typeof before]]] : [],
      ),
    );
    return { errors, hits };
  }

  it('stops a rapid reset flood, SETTINGS, PING and empty DATA floods with GOAWAY ENHANCE_YOUR_CALM', async () => {
    const resets = Array.from({ length: 6 }, (_, i) => [
      frame(1, 0x4, 1 + 2 * i, request('/echo')),
      frame(3, 0, 1 + 2 * i, Buffer.from([0, 0, 0, 8])),
    ]).flat();
    expect(await withLimits({ rapidResets: 5 }, resets)).toEqual({
      errors: [
        [7, 0, 11],
        [255, 0, 0],
      ],
      hits: { rapid_reset: 1 },
    });
    const settings = Array.from({ length: 5 }, () => frame(4, 0, 0, Buffer.alloc(0)));
    expect(await withLimits({ settings: 5 }, settings)).toEqual({
      errors: [
        [7, 0, 11],
        [255, 0, 0],
      ],
      hits: { settings_flood: 1 },
    });
    const pings = Array.from({ length: 6 }, () => frame(6, 0, 0, Buffer.alloc(8)));
    expect(await withLimits({ pings: 5 }, pings)).toEqual({
      errors: [
        [7, 0, 11],
        [255, 0, 0],
      ],
      hits: { ping_flood: 1 },
    });
    const empty = [frame(1, 0x4, 1, request('/echo')), ...Array.from({ length: 6 }, () => frame(0, 0, 1, Buffer.alloc(0)))];
    expect(await withLimits({ emptyFrames: 5 }, empty)).toEqual({
      errors: [
        [7, 0, 11],
        [255, 0, 0],
      ],
      hits: { empty_frames: 1 },
    });
    // under the limits nothing happens
    const fewEmpty = [frame(1, 0x4, 13, request('/echo')), ...Array.from({ length: 6 }, () => frame(0, 0, 13, Buffer.alloc(0)))];
    expect((await withLimits({}, [...resets, ...settings, ...pings, ...fewEmpty])).errors).toEqual([]);
  });

  it('bounds the request bodies a connection holds: the stream over the budget is reset', async () => {
    const bodies = [
      frame(1, 0x4, 1, request('/echo')),
      frame(0, 0, 1, Buffer.alloc(600)),
      frame(1, 0x4, 3, request('/echo')),
      frame(0, 0, 3, Buffer.alloc(600)),
    ];
    expect(await withLimits({ connectionBodyBytes: 1000 }, bodies)).toEqual({ errors: [[3, 3, 11]], hits: { connection_body: 1 } });
  });

  it('ends a connection that keeps sending bodies to streams it was refused (GOAWAY ENHANCE_YOUR_CALM)', async () => {
    const bodies = [
      frame(1, 0x4, 1, request('/echo')),
      frame(0, 0, 1, Buffer.alloc(600)),
      frame(1, 0x4, 3, request('/echo')),
      frame(0, 0, 3, Buffer.alloc(600)), // over the budget: stream 3 reset, its 600 bytes dropped
      ...Array.from({ length: 3 }, () => frame(0, 0, 3, Buffer.alloc(200))), // dropped: 1,200 > the 1,000 budget
    ];
    expect(await withLimits({ connectionBodyBytes: 1000 }, bodies)).toEqual({
      errors: [
        [3, 3, 11],
        [7, 0, 11],
        [255, 0, 0],
      ],
      hits: { connection_body: 1, dropped_body: 1 },
    });
  });

  it('ends a connection that does not acknowledge our SETTINGS (GOAWAY SETTINGS_TIMEOUT)', async () => {
    expect(await withLimits({ settingsAckTimeoutMs: 100 }, [], 400)).toEqual({
      errors: [
        [7, 0, 4],
        [255, 0, 0],
      ],
      hits: { settings_timeout: 1 },
    });
    expect((await withLimits({ settingsAckTimeoutMs: 100 }, [frame(4, 0x1, 0, Buffer.alloc(0))], 400)).errors).toEqual([]);
  });

  it('stops a CONTINUATION flood (too many frames, or too many bytes, in one header block) with GOAWAY ENHANCE_YOUR_CALM', async () => {
    const many = [frame(1, 0, 1, Buffer.from([0x82])), ...Array.from({ length: 4 }, () => frame(9, 0, 1, Buffer.alloc(0)))];
    expect(await withLimits({ continuations: 3 }, many)).toEqual({
      errors: [
        [7, 0, 11],
        [255, 0, 0],
      ],
      hits: { continuation_flood: 1 },
    });
    const big = [frame(1, 0, 1, Buffer.from([0x82])), frame(9, 0, 1, Buffer.alloc(3000, 0x40))];
    expect(await withLimits({ headerBlockBytes: 2000 }, big)).toEqual({
      errors: [
        [7, 0, 11],
        [255, 0, 0],
      ],
      hits: { header_block: 1 },
    });
  });

  it('refuses a header list over the configured size per stream, the connection goes on', async () => {
    const frames = [frame(1, 0x5, 1, request('/echo', [['x-big', 'a'.repeat(2000)]])), frame(1, 0x5, 3, request('/refuse'))];
    expect(await withLimits({ maxHeaderListBytes: 1000 }, frames)).toEqual({ errors: [[3, 1, 7]], hits: { header_list: 1 } });
  });

  it('closes a connection without a preface, and an idle one with GOAWAY NO_ERROR', async () => {
    // windows well past the timeouts: on a loaded machine the timers fire late
    expect(await withLimits({ prefaceTimeoutMs: 50 }, [], 1000, false)).toEqual({ errors: [[255, 0, 0]], hits: { preface_timeout: 1 } });
    expect(await withLimits({ idleTimeoutMs: 100 }, [], 1500)).toEqual({
      errors: [
        [7, 0, 0],
        [255, 0, 0],
      ],
      hits: { idle_timeout: 1 },
    });
    // a stream open keeps it
    expect((await withLimits({ idleTimeoutMs: 100 }, [frame(1, 0x4, 1, request('/echo'))], 1500)).errors).toEqual([]);
  });
});

// The extensions' HTTP/2 server against hostile clients, on the running processes (`legate extauth`, `legate graphql`,
// `legate ratelimit` from the built bundle, default limits; docs/extensions-http2.md):
// - a frame-level fuzz (fast-check): random frame sequences, valid-looking and garbage, one connection each; the
//   process's RSS and open fds stay bounded and a valid gRPC call succeeds afterwards;
// - each abuse case of the issue on one connection (rapid reset, SETTINGS / PING / empty DATA / CONTINUATION floods,
//   an oversize header block and header list, open streams with unfinished bodies): it ends with a GOAWAY or refused
//   streams, and the process's peak RSS stays under 2× its idle RSS. Figures: RSS idle / peak and fds per case.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeHeaders } from '../../extensions/common/h2/hpack.js';
import { frameHeader } from '../../extensions/common/h2/server.js';
import { ROOT } from '../support/gateway.js';
import { freePort, stopProcess } from '../support/util.js';
import { figure } from './figures.js';
import { rssMiB } from './procs.js';

const ITEM = 'h2-fuzz';
const RUNS = Number(process.env['LEGATE_FAULTS_H2_RUNS'] ?? 300);
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** Each extension, its gRPC path, and a request message it answers with grpc-status 0 (without any config). */
const SERVICES = {
  ratelimit: { path: '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit', message: Buffer.alloc(0) },
  extauth: { path: '/envoy.service.auth.v3.Authorization/Check', message: Buffer.alloc(0) },
  // request_headers { end_of_stream: true }: the API is not loaded, answered with an immediate 503
  graphql: { path: '/envoy.service.ext_proc.v3.ExternalProcessor/Process', message: Buffer.from([0x12, 0x02, 0x18, 0x01]) },
} as const;
type Service = keyof typeof SERVICES;

const running: ChildProcess[] = [];
afterAll(async () => {
  for (const child of running) await stopProcess(child);
});

async function startExtension(name: Service): Promise<{ pid: number; port: number; child: ChildProcess }> {
  const port = await freePort();
  const xds = await freePort(); // nothing listens: the service serves without a config
  const child = spawn(
    process.execPath,
    [path.join(ROOT, 'bin', 'legate.js'), name, '--host', '127.0.0.1', '--port', String(port), '--xds-address', `127.0.0.1:${xds}`],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LOG_LEVEL: 'warn', START_STATS_SERVER: '' } },
  );
  running.push(child);
  let log = '';
  child.stderr?.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`legate ${name} exited: ${log}`);
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (up) return { pid: child.pid!, port, child };
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`legate ${name} did not listen: ${log}`);
}

const fds = (pid: number): number => fs.readdirSync(`/proc/${pid}/fd`).length;

/** One unary-style call over node:http2: the grpc-status answered. */
async function validCall(port: number, service: Service): Promise<string | undefined> {
  const { path: callPath, message } = SERVICES[service];
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  try {
    return await new Promise<string | undefined>((resolve, reject) => {
      const req = session.request({ ':method': 'POST', ':path': callPath, 'content-type': 'application/grpc', te: 'trailers' });
      let status: string | undefined;
      req.on('response', (h) => (status ??= h['grpc-status'] as string | undefined));
      req.on('trailers', (t) => (status = t['grpc-status'] as string | undefined));
      req.on('data', () => undefined);
      req.on('end', () => resolve(status));
      req.on('error', reject);
      const framed = Buffer.alloc(5 + message.length);
      framed.writeUInt32BE(message.length, 1);
      message.copy(framed, 5);
      req.end(framed);
    });
  } finally {
    session.close();
  }
}

const frame = (type: number, flags: number, stream: number, payload: Buffer): Buffer =>
  Buffer.concat([frameHeader(payload.length, type, flags, stream), payload]);
const requestBlock = (service: Service, extra: [string, string][] = []): Buffer =>
  encodeHeaders([
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', SERVICES[service].path],
    [':authority', 'x'],
    ['content-type', 'application/grpc'],
    ['te', 'trailers'],
    ...extra,
  ]);

/**
 * Writes the preface, our SETTINGS (and its ACK of the server's) and `frames` on a new connection, reading what comes
 * back until the server closes or `ms` pass; the GOAWAY code (undefined: none) and the RST_STREAM codes by count.
 */
async function exchange(port: number, frames: Buffer[] | Buffer, ms: number, preface = true) {
  const sock = net.connect(port, '127.0.0.1');
  sock.on('error', () => undefined);
  const got: Buffer[] = [];
  sock.on('data', (d: Buffer) => got.push(d));
  const closed = new Promise<void>((resolve) => sock.on('close', () => resolve()));
  await new Promise<void>((resolve) => sock.on('connect', () => resolve()));
  if (preface) sock.write(Buffer.concat([PREFACE, frame(4, 0, 0, Buffer.alloc(0)), frame(4, 1, 0, Buffer.alloc(0))]));
  // written in pieces so that the socket's buffer, not this test's memory, paces a large sequence
  const all = Array.isArray(frames) ? frames : [frames];
  for (let i = 0; i < all.length; i += 256) {
    if (sock.destroyed) break;
    if (!sock.write(Buffer.concat(all.slice(i, i + 256)))) await Promise.race([new Promise((r) => sock.once('drain', r)), closed]);
  }
  await Promise.race([closed, new Promise((r) => setTimeout(r, ms))]);
  sock.destroy();
  const data = Buffer.concat(got);
  let goaway: number | undefined;
  const resets: Record<number, number> = {};
  for (let off = 0; off + 9 <= data.length; off += 9 + data.readUIntBE(off, 3)) {
    if (off + 9 + data.readUIntBE(off, 3) > data.length) break;
    if (data[off + 3] === 7) goaway = data.readUInt32BE(off + 13);
    if (data[off + 3] === 3) {
      const code = data.readUInt32BE(off + 9);
      resets[code] = (resets[code] ?? 0) + 1;
    }
  }
  return { goaway, resets };
}

/** Samples the process's RSS every 20 ms while `work` runs: its peak. */
async function peakRss<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = rssMiB(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 20);
  try {
    const result = await work();
    peak = Math.max(peak, rssMiB(pid));
    return { result, peak };
  } finally {
    clearInterval(timer);
  }
}

// ---- random frames

const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0, 0);
  return b;
};

function frameArb(service: Service): fc.Arbitrary<Buffer> {
  const streamId = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 15 }), fc.integer({ min: 1, max: 0x7fffffff }));
  const garbage = fc.uint8Array({ maxLength: 96 }).map((a) => Buffer.from(a));
  const payload = fc.oneof(
    garbage,
    fc.constant(requestBlock(service)),
    fc.constant(Buffer.from([0, 0, 0, 5, 0, 0, 0, 0, 0, 0])), // a gRPC prefix and some of a message
    fc.integer({ min: 0, max: 0x7fffffff }).map(u32), // WINDOW_UPDATE / RST_STREAM shaped
    fc.array(fc.tuple(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 0xffffffff })), { maxLength: 4 }).map((settings) => {
      const b = Buffer.alloc(settings.length * 6);
      settings.forEach(([id, v], i) => {
        b.writeUInt16BE(id, i * 6);
        b.writeUInt32BE(v >>> 0, i * 6 + 2);
      });
      return b;
    }),
  );
  return fc
    .record({
      type: fc.oneof(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 10, max: 255 })),
      flags: fc.oneof(fc.constantFrom(0, 1, 4, 5, 8, 0x20, 0x25), fc.integer({ min: 0, max: 255 })),
      streamId,
      payload,
      // now and then a length that does not match the payload (a truncated or oversize frame)
      lie: fc.option(fc.integer({ min: 0, max: 0xffffff }), { freq: 10 }),
    })
    .map(({ type, flags, streamId: id, payload: p, lie }) => Buffer.concat([frameHeader(lie ?? p.length, type, flags, id), p]));
}

describe.each(Object.keys(SERVICES) as Service[])('the %s process under hostile HTTP/2', (service) => {
  it('fuzzed frames: RSS and fds stay bounded, a valid call succeeds afterwards', async () => {
    const { pid, port } = await startExtension(service);
    expect(await validCall(port, service)).toBe('0');
    const idle = rssMiB(pid);
    const fdsIdle = fds(pid);
    let runs = 0;
    const { peak } = await peakRss(pid, () =>
      fc.assert(
        fc.asyncProperty(fc.array(frameArb(service), { maxLength: 40 }), fc.boolean(), async (frames, preface) => {
          runs++;
          await exchange(port, frames, 30, preface || runs % 10 !== 0);
          return true;
        }),
        { numRuns: RUNS, seed: Number(process.env['LEGATE_FAULTS_H2_SEED'] ?? 25) },
      ),
    );
    // the server lets connections go: give the last ones a moment to close
    await new Promise((r) => setTimeout(r, 300));
    const fdsAfter = fds(pid);
    const status = await validCall(port, service);
    figure(ITEM, `${service}: fuzz ${runs} connections, RSS idle / peak / after`, `${idle} / ${peak} / ${rssMiB(pid)}`, 'MiB');
    figure(ITEM, `${service}: fuzz fds idle / after`, `${fdsIdle} / ${fdsAfter}`);
    expect(status).toBe('0');
    expect(fdsAfter).toBeLessThanOrEqual(fdsIdle + 5);
    expect(peak).toBeLessThan(2 * idle);
  });

  it('each abuse case ends with a GOAWAY or refused streams, the process under 2× its idle RSS', async () => {
    const block = requestBlock(service);
    /** `bytes` of a valid message's start (a gRPC prefix announcing 4,000,000 bytes): held until the rest comes */
    const body = (id: number, bytes: number): Buffer[] =>
      Array.from({ length: Math.ceil(bytes / 16_384) }, (_, i) => {
        const chunk = Buffer.alloc(16_384, 0x61);
        if (i === 0) {
          chunk[0] = 0;
          chunk.writeUInt32BE(4_000_000, 1);
        }
        return frame(0, 0, id, chunk);
      });
    const cases: Record<string, { frames: Buffer[]; expect: (r: Awaited<ReturnType<typeof exchange>>) => void }> = {
      'rapid reset (20,000 HEADERS + RST_STREAM)': {
        frames: Array.from({ length: 20_000 }, (_, i) => [frame(1, 4, 1 + 2 * i, block), frame(3, 0, 1 + 2 * i, u32(8))]).flat(),
        expect: (r) => expect(r.goaway).toBe(11),
      },
      'SETTINGS flood (10,000)': {
        frames: Array.from({ length: 10_000 }, () => frame(4, 0, 0, Buffer.alloc(0))),
        expect: (r) => expect(r.goaway).toBe(11),
      },
      'PING flood (10,000)': {
        frames: Array.from({ length: 10_000 }, () => frame(6, 0, 0, Buffer.alloc(8))),
        expect: (r) => expect(r.goaway).toBe(11),
      },
      'empty DATA flood (10,000)': {
        frames: [frame(1, 4, 1, block), ...Array.from({ length: 10_000 }, () => frame(0, 0, 1, Buffer.alloc(0)))],
        expect: (r) => expect(r.goaway).toBe(11),
      },
      'CONTINUATION flood (10,000 empty)': {
        frames: [frame(1, 0, 1, block), ...Array.from({ length: 10_000 }, () => frame(9, 0, 1, Buffer.alloc(0)))],
        expect: (r) => expect(r.goaway).toBe(11),
      },
      'header block of 1 MiB': {
        frames: [frame(1, 0, 1, block), ...Array.from({ length: 64 }, () => frame(9, 0, 1, Buffer.alloc(16_384, 0x40)))],
        expect: (r) => expect(r.goaway).toBe(11),
      },
      'header list over 64 KiB (then a good stream)': {
        frames: (() => {
          const big = requestBlock(service, [['x-big', 'a'.repeat(70_000)]]);
          const parts = [];
          for (let o = 0; o < big.length; o += 16_000) parts.push(big.subarray(o, o + 16_000));
          return [
            ...parts.map((p, i) => (i === 0 ? frame(1, 0, 1, p) : frame(9, i === parts.length - 1 ? 4 : 0, 1, p))),
            frame(1, 5, 3, block),
          ];
        })(),
        expect: (r) => {
          expect(r.goaway).toBeUndefined();
          expect(r.resets[7]).toBe(1);
        },
      },
      '256 streams with unfinished bodies, 1 MiB on each of the first 100': {
        frames: [
          ...Array.from({ length: 256 }, (_, i) => frame(1, 4, 1 + 2 * i, block)),
          ...Array.from({ length: 100 }, (_, i) => body(1 + 2 * i, 1024 * 1024)).flat(),
        ],
        expect: (r) => {
          // streams over 100 are refused; the bodies over the connection's 16 MiB budget reset their streams, and
          // as much again sent to those streams ends the connection
          expect(r.resets[7]).toBe(156);
          expect(r.resets[11]).toBeGreaterThan(0);
          expect(r.goaway).toBe(11);
        },
      },
    };
    // each case on a process of its own, so that its peak is measured from that process's idle RSS
    const ratios: string[] = [];
    for (const [name, c] of Object.entries(cases)) {
      const { pid, port, child } = await startExtension(service);
      expect(await validCall(port, service)).toBe('0');
      const idle = rssMiB(pid);
      const fdsBefore = fds(pid);
      const { result, peak } = await peakRss(pid, () => exchange(port, c.frames, 3000));
      await new Promise((r) => setTimeout(r, 200));
      const outcome = `GOAWAY ${result.goaway ?? '-'}, RST ${JSON.stringify(result.resets)}`;
      const rss = `RSS idle ${idle} / peak ${peak} MiB (${(peak / idle).toFixed(2)}×)`;
      figure(ITEM, `${service}: ${name}`, `${outcome}; ${rss}; fds ${fdsBefore} -> ${fds(pid)}`);
      c.expect(result);
      expect(await validCall(port, service)).toBe('0');
      await stopProcess(child);
      ratios.push(`${name}: ${(peak / idle).toFixed(2)}`);
      expect(peak, name).toBeLessThan(2 * idle);
    }
    console.log(ratios.join('\n'));
  });
});

// Micro-benchmark of the extensions' gRPC-over-HTTP/2 serving (not a test): the service process's own CPU per
// call, measured so that a busy machine changes the wall time but hardly the figure.
//
//   npx tsx bench/micro/h2-calls.ts [--service ratelimit|extauth|echo] [--root DIR] [--calls 30000] [--repeats 7]
//                                   [--concurrency 32] [--cpu-prof DIR] [--node-args '--trace-deopt' --service-output]
//
// The service is `node DIR/bin/legate.js <service>` as a child (DIR: this checkout, or another worktree's built
// bundle, for an A/B), so the CPU counted is the service's alone: the sum of its threads' run time from
// /proc/<pid>/task/*/schedstat (nanoseconds, main thread and GC helpers), read before and after each batch.
// The load generator is this process: one HTTP/2 connection, `concurrency` calls in flight, requests as
// pre-built frames (HPACK fields indexed after the first call, as Envoy's encoder sends them), answers counted
// from the frames' END_STREAM and their grpc-status checked. Each repeat is `calls` calls; the median is printed.
//   ratelimit  ShouldRateLimit with a basic descriptor (legate_basic, a limit never reached): no config, no xDS
//   extauth    Check of a config the service does not have (answered at once): transport, parse and answer
//   echo       DIR's unary gRPC server (extensions/common/unary-server.ts, run from source with tsx) answering a
//              constant message: the HTTP/2 and gRPC layers alone
// --cpu-prof: the service runs with node --cpu-prof (profile written to DIR when the service exits); --node-args: more
// node flags for it, e.g. --trace-deopt (a deoptimization loop was once most of ratelimit's CPU), its stdout shown
// with --service-output.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { loadEnvoyService, lookupService } from '../../extensions/common/grpc.js';
import { HpackDecoder } from '../../extensions/common/h2/hpack.js';
import type * as UnaryServerModule from '../../extensions/common/unary-server.js';

const RLS = 'envoy.service.ratelimit.v3.RateLimitService';
const AUTHZ = 'envoy.service.auth.v3.Authorization';
const ECHO_PATH = '/legate.bench.Echo/Call';

/** The CPU time of a process, all threads, in µs (schedstat: ns). */
function processCpuUs(pid: number): number {
  let ns = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'latin1').split(' ')[0]);
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return ns / 1000;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const h = Buffer.allocUnsafe(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(streamId, 5);
  return Buffer.concat([h, payload]);
}

/** An HPACK string literal (no Huffman). */
function literal(s: string): Buffer {
  const b = Buffer.from(s, 'latin1');
  if (b.length > 126) throw new Error('header too long for this encoder');
  return Buffer.concat([Buffer.from([b.length]), b]);
}

/** Two header blocks of one request's fields: the first inserts every field into the dynamic table (literal with
 * incremental indexing, new name), the second refers to them all by index (what follows the first call). */
function requestBlocks(fields: [string, string][]): { first: Buffer; indexed: Buffer } {
  const first = Buffer.concat(fields.map(([n, v]) => Buffer.concat([Buffer.from([0x40]), literal(n), literal(v)])));
  // entry i (of k, inserted in order) is at dynamic index 62 + (k - 1 - i); all below 127: one byte each
  const indexed = Buffer.from(fields.map((_, i) => 0x80 | (62 + fields.length - 1 - i)));
  return { first, indexed };
}

interface Batch {
  reads: number;
  calls: number;
  errors: number;
  wallMs: number;
  serverCpuUs: number;
}

/** One connection of raw HTTP/2 with `concurrency` calls in flight. */
class Loader {
  private socket!: net.Socket;
  private buf: Buffer = Buffer.alloc(0);
  private nextId = 1;
  private readonly decoder = new HpackDecoder(4096, 1 << 20);
  private out: Buffer[] = [];
  private remaining = 0;
  private inFlight = 0;
  private done = 0;
  private errors = 0;
  private consumed = 0;
  private finish: (() => void) | undefined;
  private firstSent = false;
  /** reads of the service's answers: about its writes (syscalls per call matter as much as the code) */
  reads = 0;

  constructor(
    private readonly blocks: { first: Buffer; indexed: Buffer },
    private readonly body: Buffer,
  ) {}

  async connect(port: number): Promise<void> {
    this.socket = net.connect(port, '127.0.0.1');
    this.socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => this.socket.once('connect', resolve).once('error', reject));
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    this.socket.on('error', () => undefined);
    // preface, empty SETTINGS, the connection window opened wide
    const wu = Buffer.alloc(4);
    wu.writeUInt32BE(2 ** 30, 0);
    this.socket.write(
      Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'), frame(4, 0, 0, Buffer.alloc(0)), frame(8, 0, 0, wu)]),
    );
  }

  run(calls: number, concurrency: number): Promise<{ calls: number; errors: number }> {
    this.remaining = calls;
    this.done = 0;
    this.errors = 0;
    return new Promise((resolve) => {
      this.finish = () => resolve({ calls: this.done, errors: this.errors });
      for (let i = 0; i < concurrency && this.remaining > 0; i++) this.send();
      this.flush();
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private send(): void {
    this.remaining--;
    this.inFlight++;
    const id = this.nextId;
    this.nextId += 2;
    const block = this.firstSent ? this.blocks.indexed : this.blocks.first;
    this.firstSent = true;
    this.out.push(frame(1, 0x4, id, block), frame(0, 0x1, id, this.body));
  }

  private flush(): void {
    if (!this.out.length) return;
    this.socket.write(Buffer.concat(this.out));
    this.out = [];
  }

  private complete(ok: boolean): void {
    this.inFlight--;
    this.done++;
    if (!ok) this.errors++;
    if (this.remaining > 0) this.send();
    else if (this.inFlight === 0) this.finish?.();
  }

  private onData(chunk: Buffer): void {
    this.reads++;
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    let off = 0;
    while (this.buf.length - off >= 9) {
      const len = this.buf.readUIntBE(off, 3);
      if (this.buf.length - off < 9 + len) break;
      const type = this.buf[off + 3]!;
      const flags = this.buf[off + 4]!;
      const payload = this.buf.subarray(off + 9, off + 9 + len);
      off += 9 + len;
      if (type === 4 && !(flags & 1)) this.out.push(frame(4, 1, 0, Buffer.alloc(0)));
      else if (type === 0) {
        this.consumed += len;
        if (this.consumed > 1 << 28) {
          const wu = Buffer.alloc(4);
          wu.writeUInt32BE(this.consumed, 0);
          this.out.push(frame(8, 0, 0, wu));
          this.consumed = 0;
        }
        if (flags & 1) this.complete(false); // no trailers: not a gRPC answer
      } else if (type === 1) {
        let status: string | undefined;
        this.decoder.decode(payload, (n, v) => {
          if (n === 'grpc-status') status = v;
        });
        if (flags & 1) this.complete(status === '0');
      } else if (type === 3) this.complete(false);
      else if (type === 7) throw new Error(`GOAWAY from the service: ${payload.subarray(8).toString()}`);
    }
    this.buf = off >= this.buf.length ? Buffer.alloc(0) : this.buf.subarray(off);
    this.flush();
  }
}

function requestFor(service: string): { path: string; body: Buffer } {
  if (service === 'echo') return { path: ECHO_PATH, body: grpcFrame(Buffer.from([0x0a, 0x03, 0x61, 0x62, 0x63])) };
  if (service === 'ratelimit') {
    const m = lookupService(loadEnvoyService('envoy/service/ratelimit/v3/rls.proto'), RLS).service['ShouldRateLimit']!;
    const req = m.requestSerialize({
      domain: 'legate',
      descriptors: [
        {
          entries: [
            { key: 'legate_basic', value: 'bench|1000000000/SECOND' },
            { key: 'legate_auth', value: 'anonymous' },
          ],
        },
      ],
      hits_addend: 1,
    });
    return { path: `/${RLS}/ShouldRateLimit`, body: grpcFrame(req) };
  }
  const m = lookupService(loadEnvoyService('envoy/service/auth/v3/external_auth.proto'), AUTHZ).service['Check']!;
  const req = m.requestSerialize({
    attributes: {
      request: {
        http: {
          method: 'GET',
          path: '/api/v1/products',
          host: 'api.example.com',
          headers: { ':authority': 'api.example.com', ':path': '/api/v1/products', ':method': 'GET', 'user-agent': 'bench' },
        },
      },
      context_extensions: { config_id: 'bench.none' },
    },
  });
  return { path: `/${AUTHZ}/Check`, body: grpcFrame(req) };
}

function grpcFrame(message: Buffer): Buffer {
  const out = Buffer.alloc(message.length + 5);
  out.writeUInt32BE(message.length, 1);
  message.copy(out, 5);
  return out;
}

/** The echo service: `root`'s unary gRPC server (its source, through tsx) answering every call with a constant message. */
async function serveEcho(root: string, port: number): Promise<void> {
  const mod = (await import(pathToFileURL(path.join(root, 'extensions', 'common', 'unary-server.ts')).href)) as typeof UnaryServerModule;
  const answer = mod.frameMessage(Buffer.from([0x08, 0x01]));
  await mod.startUnaryServer('127.0.0.1', port, { path: ECHO_PATH, name: 'Echo', handle: (_request, reply) => reply(answer) });
  process.once('SIGINT', () => process.exit(0)); // an exit that writes --cpu-prof's profile
}

async function startService(
  root: string,
  service: string,
  cpuProf: string | undefined,
  nodeArgs: string[],
  serviceOutput: boolean,
): Promise<{ proc: ChildProcess; port: number }> {
  const port = await freePort();
  const node = [...(cpuProf ? ['--cpu-prof', '--cpu-prof-dir', cpuProf] : []), ...nodeArgs];
  const args =
    service === 'echo'
      ? [...node, '--import', 'tsx', fileURLToPath(import.meta.url), '--serve-echo', '--root', root, '--port', String(port)]
      : [
          ...node,
          path.join(root, 'bin', 'legate.js'),
          service,
          '--port',
          String(port),
          '--xds-address',
          `127.0.0.1:${await freePort()}`, // nothing listens: these calls need no config
          '--stats-port',
          String(await freePort()),
        ];
  const proc = spawn(process.execPath, args, {
    env: { ...process.env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', serviceOutput ? 'inherit' : 'ignore', 'inherit'],
  });
  for (let i = 0; i < 200; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (up) return { proc, port };
    await new Promise((r) => setTimeout(r, 50));
  }
  proc.kill();
  throw new Error(`${service} did not listen on ${port}`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      service: { type: 'string', default: 'ratelimit' },
      root: { type: 'string', default: path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..') },
      calls: { type: 'string', default: '30000' },
      repeats: { type: 'string', default: '7' },
      concurrency: { type: 'string', default: '32' },
      'cpu-prof': { type: 'string' },
      /** more node flags for the service, space-separated (e.g. --trace-deopt, with --service-output) */
      'node-args': { type: 'string', default: '' },
      'service-output': { type: 'boolean', default: false },
      'serve-echo': { type: 'boolean', default: false },
      port: { type: 'string' },
    },
  });
  const root = path.resolve(values.root);
  if (values['serve-echo']) return serveEcho(root, Number(values.port));
  const service = values.service;
  if (service !== 'ratelimit' && service !== 'extauth' && service !== 'echo') throw new Error('--service ratelimit|extauth|echo');
  if (!existsSync(path.join(root, 'dist'))) throw new Error(`${root}: no dist/ (node scripts/build.mjs there first)`);
  const calls = Number(values.calls);
  const repeats = Number(values.repeats);
  const concurrency = Number(values.concurrency);
  const { path: callPath, body } = requestFor(service);
  const fields: [string, string][] = [
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', callPath],
    [':authority', service],
    ['content-type', 'application/grpc'],
    ['te', 'trailers'],
    ['grpc-timeout', '20m'],
    ['x-envoy-internal', 'true'],
    ['x-forwarded-for', '10.0.0.1'],
    ['x-envoy-expected-rq-timeout-ms', '20'],
  ];
  const { proc, port } = await startService(
    root,
    service,
    values['cpu-prof'],
    values['node-args'].split(' ').filter(Boolean),
    values['service-output'],
  );
  const loader = new Loader(requestBlocks(fields), body);
  await loader.connect(port);
  const batch = async (n: number): Promise<Batch> => {
    const cpu0 = processCpuUs(proc.pid!);
    const t0 = performance.now();
    const reads0 = loader.reads;
    const r = await loader.run(n, concurrency);
    const wallMs = performance.now() - t0;
    return { ...r, wallMs, serverCpuUs: processCpuUs(proc.pid!) - cpu0, reads: loader.reads - reads0 };
  };
  await batch(Math.max(calls, 20_000)); // warm-up: JIT, the first allocations
  const perCall: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const b = await batch(calls);
    if (b.errors) throw new Error(`${b.errors} of ${b.calls} calls failed`);
    const us = b.serverCpuUs / b.calls;
    perCall.push(us);
    const perRead = (b.calls / b.reads).toFixed(1);
    console.log(
      `  repeat ${i + 1}: ${b.calls} calls in ${b.wallMs.toFixed(0)} ms, service CPU ${us.toFixed(2)} µs/call, ${perRead} answers per read`,
    );
  }
  loader.close();
  proc.kill('SIGINT');
  await new Promise((r) => proc.once('exit', r));
  const sorted = [...perCall].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  console.log(
    `${service} (${root}): median ${median.toFixed(2)} µs/call service CPU, min ${sorted[0]!.toFixed(2)}, max ` +
      `${sorted[sorted.length - 1]!.toFixed(2)} (${repeats} x ${calls} calls, ${concurrency} in flight, 1 connection)`,
  );
}

await main();

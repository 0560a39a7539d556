// Micro-benchmark of the graphql service's per-request path without Envoy (not a test): an HTTP/2 client
// plays Envoy's ext_proc side (request_headers, wait for CONTINUE, request_body, wait for the immediate
// response, then reset the stream as Envoy does) against the service's ext_proc server and engine, with the
// bench's products backend. Reports the service process's CPU per request: the figure `make bench` shows
// for "graphql", minus Envoy's noise. Server and backend on CPU 0, this client on CPU 1 (taskset).
//
//   npx tsx bench/micro/graphql-extproc.ts [--query flat|nested] [--seconds 4] [--rounds 3] [--concurrency 32] [--single]
//   (--single: the single-message path, one request_body message carrying method, path and the headers
//   the API reads as attributes, as the POST route's ext_proc filter sends it)
//   (COMPILE_AFTER=-1 in the environment: the engine on graphql-js only)
import { spawn, type ChildProcess } from 'node:child_process';
import http2 from 'node:http2';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GraphQLApiConfig, ResolverConfig, ResolverUpstream } from '../../common/contract.js';
import type { Logger } from '../../common/log.js';
import { loadEnvoyService, lookupService } from '../../extensions/common/grpc.js';
import { createEngine, type Engine } from '../../extensions/graphql/engine/index.js';
import { PROCESS_PATH, frameMessage, startExtProcServer } from '../../extensions/graphql/extproc-server.js';
import { processStream } from '../../extensions/graphql/process-stream.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const args = process.argv.slice(2);
const opt = (name: string, dflt: string): string => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : dflt;
};
const API = 'bench.products';
const QUERIES: Record<string, string> = { flat: '{productsForHome{id title}}', nested: '{productsForHome{id author pages year}}' };

function apiConfig(port: number): GraphQLApiConfig {
  const upstream: ResolverUpstream = { name: 'bench.products', endpoints: [{ address: '127.0.0.1', port }] };
  const r = (p: string, resultRoot?: string): ResolverConfig => ({
    rest: {
      upstream,
      request: { headers: { ':path': p }, queryParams: {} },
      response: { ...(resultRoot ? { resultRoot } : {}), setters: {} },
      timeoutMs: 5000,
    },
  });
  return {
    name: API,
    version: '1',
    schemaDefinition: `type Query { productsForHome: [Product] @resolve(name: "Query|productsForHome") }
      type Product {
        id: Int, title: String, author: String @resolve(name: "Product|author"),
        pages: Int @resolve(name: "Product|pages"), year: Int @resolve(name: "Product|year")
      }`,
    enableIntrospection: false,
    maxDepth: 0,
    resolutions: {
      'Query|productsForHome': r('/api/v1/products'),
      'Product|author': r('/details/{$parent.id}', '{$body.author}'),
      'Product|pages': r('/details/{$parent.id}', '{$body.pages}'),
      'Product|year': r('/details/{$parent.id}', '{$body.year}'),
    },
  };
}

/** The server side (a child process): the service's stream handler and one engine; answers "cpu" with its CPU time. */
async function server(): Promise<void> {
  const backendPort = Number(process.env['BACKEND_PORT']);
  const compileAfter = process.env['COMPILE_AFTER'];
  const engines = new Map<string, Engine>([
    [API, createEngine(apiConfig(backendPort), compileAfter !== undefined ? { compileAfter: Number(compileAfter) } : {})],
  ]);
  const silent: Logger = {
    component: 'bench',
    level: 'error',
    enabled: () => false,
    debug: () => undefined,
    info: () => undefined,
    warn: () => undefined,
    error: () => undefined,
    child: () => silent,
  };
  const s = await startExtProcServer('127.0.0.1', 0, { open: (call) => processStream(call, () => engines, silent, undefined) });
  process.on('message', (m) => {
    if (m === 'cpu') {
      const u = process.cpuUsage();
      process.send!({ cpu: u.user + u.system });
    }
  });
  process.send!({ port: s.port });
}

const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const c of children) c.kill();
});

function child(cmd: string[], env: Record<string, string>, cpu: string): ChildProcess {
  const c = spawn('taskset', ['-c', cpu, process.execPath, ...cmd], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  children.push(c);
  return c;
}

async function client(): Promise<void> {
  const query = QUERIES[opt('query', 'flat')]!;
  const seconds = Number(opt('seconds', '4'));
  const rounds = Number(opt('rounds', '3'));
  const concurrency = Number(opt('concurrency', '32'));

  const backend = child([path.join(ROOT, 'bench/graphql/products-upstream.mjs')], {}, '0');
  const backendPort = await new Promise<number>((resolve) =>
    backend.stdout!.once('data', (d: Buffer) => resolve(JSON.parse(d.toString()).port as number)),
  );
  const srv = child(['--import', 'tsx', fileURLToPath(import.meta.url), '--server'], { BACKEND_PORT: String(backendPort) }, '0');
  const port = await new Promise<number>((resolve) => srv.once('message', (m: { port: number }) => resolve(m.port)));
  const cpu = (): Promise<number> =>
    new Promise((resolve) => {
      srv.once('message', (m: { cpu: number }) => resolve(m.cpu));
      srv.send('cpu');
    });

  const Processor = lookupService(
    loadEnvoyService('envoy/service/ext_proc/v3/external_processor.proto'),
    'envoy.service.ext_proc.v3.ExternalProcessor',
  );
  const serialize = Processor.service['Process']!.requestSerialize;
  const body = Buffer.from(JSON.stringify({ query }));
  // what Envoy sends for the bench's wrk request
  const requestHeaders = {
    ':authority': '127.0.0.1:8080',
    ':path': '/graphql',
    ':method': 'POST',
    ':scheme': 'http',
    'content-type': 'application/json',
    accept: 'application/json',
    'content-length': String(body.length),
    'x-forwarded-proto': 'http',
    'x-request-id': '5f0c3a58-7d0a-4c53-9a57-0e8f7a2a3b1c',
  };
  const headersMsg = frameMessage(
    serialize({
      request_headers: {
        headers: { headers: Object.entries(requestHeaders).map(([key, v]) => ({ key, raw_value: Buffer.from(v) })) },
        end_of_stream: false,
      },
    }),
  );
  const single = args.includes('--single');
  const attributes = {
    'envoy.filters.http.ext_proc': {
      fields: {
        'request.method': { stringValue: 'POST' },
        'request.path': { stringValue: '/graphql' },
        "request.headers['accept']": { stringValue: 'application/json' },
        "request.headers['content-type']": { stringValue: 'application/json' },
      },
    },
  };
  const bodyMsg = frameMessage(serialize({ request_body: { body, end_of_stream: true }, ...(single ? { attributes } : {}) }));
  const answerAt = single ? 1 : 2;
  const grpcHeaders = {
    ':method': 'POST',
    ':path': PROCESS_PATH,
    'content-type': 'application/grpc',
    te: 'trailers',
    'x-legate-graphql-api': API,
  };

  // as Envoy's cluster for the service: a new connection after 500 streams (Node's HTTP/2 server sends
  // GOAWAY after 1000 resets on one connection)
  const connect = (): { session: http2.ClientHttp2Session; streams: number } => ({
    session: http2.connect(`http://127.0.0.1:${port}`),
    streams: 0,
  });
  const sessions = [connect(), connect()];
  const pick = (i: number): http2.ClientHttp2Session => {
    let c = sessions[i]!;
    if (c.streams++ >= 500) {
      c.session.close();
      c = sessions[i] = connect();
      c.streams = 1;
    }
    return c.session;
  };
  let done = 0;
  let stop = false;
  let failures = 0;
  const one = (session: http2.ClientHttp2Session): Promise<void> =>
    new Promise((resolve) => {
      const stream = session.request(grpcHeaders);
      let buffered: Buffer = Buffer.alloc(0);
      let messages = 0;
      stream.on('error', () => undefined);
      stream.on('data', (d: Buffer) => {
        buffered = buffered.length === 0 ? d : Buffer.concat([buffered, d]);
        while (buffered.length >= 5 && buffered.length >= 5 + buffered.readUInt32BE(1)) {
          const len = buffered.readUInt32BE(1);
          buffered = buffered.subarray(5 + len);
          messages++;
          if (messages < answerAt) stream.write(bodyMsg);
          else {
            // Envoy resets the stream once it has the immediate response
            stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
            done++;
            resolve();
            return;
          }
        }
      });
      stream.on('close', () => {
        if (messages < answerAt) failures++;
        resolve();
      });
      stream.write(single ? bodyMsg : headersMsg);
    });
  const loops = Array.from({ length: concurrency }, async (_, i) => {
    while (!stop) await one(pick(i % sessions.length));
  });

  const sample = async (s: number): Promise<{ us: number; rps: number }> => {
    const c0 = await cpu();
    const n0 = done;
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, s * 1000));
    const c1 = await cpu();
    const n = done - n0;
    return { us: (c1 - c0) / n, rps: n / ((performance.now() - t0) / 1000) };
  };
  await sample(2); // warm-up
  const results: { us: number; rps: number }[] = [];
  for (let r = 0; r < rounds; r++) results.push(await sample(seconds));
  stop = true;
  await Promise.all(loops);
  for (const s of sessions) s.session.close();
  srv.kill();
  backend.kill();
  const us = results.map((r) => r.us).sort((a, b) => a - b);
  console.log(
    `${opt('query', 'flat')}: service CPU µs/req rounds ${results.map((r) => r.us.toFixed(1)).join(' ')} median ` +
      `${us[Math.floor(us.length / 2)]!.toFixed(1)}; req/s ${results.map((r) => Math.round(r.rps)).join(' ')}; failures ${failures}`,
  );
}

if (args.includes('--server')) await server();
else await client();

// Micro-benchmark of the engine (not a test): server CPU per request for cached vs uncached documents,
// on the reference queries, with the product backend in a child process (its CPU is not counted).
//
//   npx tsx bench/micro/graphql-engine.ts [--n 5000] [--concurrency 8] [--rounds 3]   (median of the rounds)
//
// The engine scenarios run twice: with graphql-jit (compiled after the first use, the default) and on
// graphql-js alone (compileAfter -1). Optional comparison of the backend clients:
//   UNDICI=/path/to/node_modules/undici/index.js                    undici Pool vs node:http Agent for the calls

import { spawn } from 'node:child_process';
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { parse, validate, specifiedRules, execute, type DocumentNode, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery } from 'graphql-jit';
import type { GraphQLApiConfig, ResolverConfig, ResolverUpstream } from '../../common/contract.js';
import { createEngine, UpstreamPools, type Engine } from '../../extensions/graphql/engine/index.js';
import { makeRestResolver, type RequestContext } from '../../extensions/graphql/engine/rest.js';
import { prepareApi } from '../../extensions/graphql/engine/schema.js';
import { numberOption } from '../lib/args.js';

const args = process.argv.slice(2);
const opt = (name: string, dflt: number): number => numberOption(name, dflt, args);
const N = opt('n', 5000);
const CONCURRENCY = opt('concurrency', 8);

const BACKEND = `
const http = require('node:http');
const products = Array.from({ length: 4 }, (_, i) => ({ id: i + 1, title: 'Book ' + (i + 1) }));
const list = JSON.stringify(products);
const server = http.createServer((req, res) => {
  if (req.url === '/api/v1/products') { res.writeHead(200, { 'content-type': 'application/json' }); res.end(list); return; }
  const m = /^\\/details\\/(\\d+)$/.exec(req.url);
  if (m) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: +m[1], author: 'A' + m[1], pages: 100, year: 1600 }));
    return;
  }
  res.writeHead(404).end('{}');
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
`;

async function startBackend(): Promise<{ port: number; stop: () => void }> {
  const child = spawn(process.execPath, ['-e', BACKEND], { stdio: ['ignore', 'pipe', 'inherit'] });
  process.once('exit', () => child.kill());
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('exit', (code) => reject(new Error(`backend exited ${code}`)));
  });
  return { port, stop: () => child.kill() };
}

const SDL = `
type Query { productsForHome: [Product] @resolve(name: "Query|productsForHome") }
type Product {
  id: Int
  title: String
  author: String @resolve(name: "Product|author")
  pages: Int @resolve(name: "Product|pages")
  year: Int @resolve(name: "Product|year")
}`;

function config(port: number): GraphQLApiConfig {
  const upstream: ResolverUpstream = { name: 'bench.books', endpoints: [{ address: '127.0.0.1', port }] };
  const r = (path: string, resultRoot?: string): ResolverConfig => ({
    rest: {
      upstream,
      request: { headers: { ':path': path }, queryParams: {} },
      response: { ...(resultRoot ? { resultRoot } : {}), setters: {} },
      timeoutMs: 5000,
    },
  });
  return {
    name: 'bench.api',
    version: '1',
    schemaDefinition: SDL,
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

interface Result {
  name: string;
  cpuMicros: number;
  rps: number;
}

/** Runs `n` requests, `CONCURRENCY` at a time, ROUNDS times; returns the median process CPU per request and
 * throughput. The first round of the first scenarios also pays V8's compilation: hence a warm-up and the median. */
const ROUNDS = opt('rounds', 3);
/** request sequence number, unique across scenarios and passes (uncached scenarios build unique query text from it) */
let seq = 0;
async function measure(name: string, n: number, one: (i: number) => Promise<void>): Promise<Result> {
  for (let i = 0; i < Math.min(1000, n); i++) await one(seq++);
  const rounds: Result[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    let done = 0;
    const worker = async (): Promise<void> => {
      while (done < n) {
        done++;
        await one(seq++);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const cpu = process.cpuUsage(cpu0);
    const wall = Number(process.hrtime.bigint() - t0) / 1e9;
    rounds.push({ name, cpuMicros: (cpu.user + cpu.system) / n, rps: n / wall });
  }
  rounds.sort((a, b) => a.cpuMicros - b.cpuMicros);
  return rounds[Math.floor(rounds.length / 2)]!;
}

function print(results: Result[]): void {
  const w = Math.max(...results.map((r) => r.name.length));
  console.log(`${'scenario'.padEnd(w)}  CPU µs/req   req/s`);
  for (const r of results)
    console.log(`${r.name.padEnd(w)}  ${r.cpuMicros.toFixed(1).padStart(10)}  ${Math.round(r.rps).toString().padStart(6)}`);
}

function request(query: string): { method: string; path: string; headers: Record<string, string>; body: Buffer } {
  return {
    method: 'POST',
    path: '/graphql',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: Buffer.from(JSON.stringify({ query })),
  };
}

async function engineScenarios(engine: Engine): Promise<Result[]> {
  const out: Result[] = [];
  const check = async (q: string): Promise<void> => {
    const r = await engine.handle(request(q));
    if (r.status !== 200 || r.body.includes('"errors"')) throw new Error(`bench query failed: ${r.status} ${r.body}`);
  };
  const flat = '{productsForHome{id title}}';
  const nested = '{productsForHome{id author pages year}}';
  await check(flat);
  await check(nested);
  const typename = request('{__typename}');
  out.push(await measure('{__typename}            cached  (no backend)', N * 4, async () => void (await engine.handle(typename))));
  out.push(
    await measure(
      '{__typename}            uncached (no backend)',
      N,
      async (i) => void (await engine.handle(request(`query Q${i} {__typename}`))),
    ),
  );
  const flatReq = request(flat);
  out.push(await measure('flat   (1 call)         cached', N, async () => void (await engine.handle(flatReq))));
  out.push(await measure('flat   (1 call)         uncached', N, async (i) => void (await engine.handle(request(`query Q${i} ${flat}`)))));
  const nestedReq = request(nested);
  out.push(await measure('nested (1+4 calls, 12 resolutions) cached', N, async () => void (await engine.handle(nestedReq))));
  out.push(
    await measure(
      'nested (1+4 calls, 12 resolutions) uncached',
      N,
      async (i) => void (await engine.handle(request(`query Q${i} ${nested}`))),
    ),
  );
  return out;
}

/** The same resolution outside the engine: graphql-js execute vs graphql-jit on a cached document. */
async function executorScenarios(port: number): Promise<Result[]> {
  const prepared = prepareApi(config(port));
  const schema = prepared.schema as GraphQLSchema;
  const pools = new UpstreamPools(0);
  const silent = { enabled: () => false } as unknown as Parameters<typeof makeRestResolver>[2];
  for (const b of prepared.bindings) {
    b.field.resolve = makeRestResolver(
      prepared.compiled.get(b.resolution)!,
      pools.acquire(prepared.upstreams.get(b.resolution)!),
      silent,
    ) as typeof b.field.resolve;
  }
  const out: Result[] = [];
  for (const [label, q] of [
    ['flat  ', '{productsForHome{id title}}'],
    ['nested', '{productsForHome{id author pages year}}'],
  ] as const) {
    const document: DocumentNode = parse(q);
    if (validate(schema, document, specifiedRules).length) throw new Error('invalid bench query');
    const ctx = (): RequestContext => ({ headers: {}, memo: new Map(), calls: 0, deduplicated: 0 });
    out.push(
      await measure(`${label} graphql-js execute + stringify`, N, async () => {
        const r = await execute({ schema, document, contextValue: ctx() });
        JSON.stringify(r);
      }),
    );
    const compiled = compileQuery(schema, document, undefined, { disablingCapturingStackErrors: true });
    if (!isCompiledQuery(compiled)) throw new Error(`graphql-jit: ${JSON.stringify(compiled.errors)}`);
    out.push(
      await measure(`${label} graphql-jit query + stringify`, N, async () => {
        const r = await compiled.query(undefined, ctx(), {});
        JSON.stringify(r);
      }),
    );
  }
  pools.close();
  return out;
}

/** Backend call cost alone: node:http keep-alive Agent vs undici Pool. */
async function clientScenarios(port: number, undiciPath: string | undefined): Promise<Result[]> {
  const out: Result[] = [];
  const agent = new http.Agent({ keepAlive: true });
  out.push(
    await measure(
      'client node:http Agent GET + JSON.parse',
      N,
      () =>
        new Promise<void>((resolve, reject) => {
          const req = http.request(
            { agent, host: '127.0.0.1', port, path: '/api/v1/products', headers: { accept: 'application/json' } },
            (res) => {
              const chunks: Buffer[] = [];
              res.on('data', (c: Buffer) => chunks.push(c));
              res.on('end', () => {
                JSON.parse(Buffer.concat(chunks).toString('utf8'));
                resolve();
              });
            },
          );
          req.on('error', reject);
          req.end();
        }),
    ),
  );
  agent.destroy();
  if (undiciPath !== undefined) {
    const undici = (await import(pathToFileURL(undiciPath).href)) as {
      Pool: new (
        origin: string,
        opts?: object,
      ) => { request(o: object): Promise<{ body: { json(): Promise<unknown> } }>; close(): Promise<void> };
    };
    const pool = new undici.Pool(`http://127.0.0.1:${port}`, { connections: 16 });
    out.push(
      await measure('client undici Pool GET + json()', N, async () => {
        const r = await pool.request({ method: 'GET', path: '/api/v1/products', headers: { accept: 'application/json' } });
        await r.body.json();
      }),
    );
    await pool.close();
  }
  return out;
}

async function main(): Promise<void> {
  const backend = await startBackend();
  const pools = new UpstreamPools(0);
  try {
    console.log(`node ${process.version}, n=${N}, concurrency=${CONCURRENCY}; CPU is this process only (backend is a child process)\n`);
    for (const [label, compileAfter] of [
      ['graphql-jit (default)', undefined],
      ['graphql-js only', -1],
    ] as const) {
      const engine = createEngine(config(backend.port), { upstreamPools: pools, ...(compileAfter !== undefined ? { compileAfter } : {}) });
      await engineScenarios(engine); // warm-up pass: every code path compiled before anything is measured
      console.log(`engine, ${label}:`);
      print(await engineScenarios(engine));
      console.log(`engine stats: ${JSON.stringify(engine.stats())}\n`);
      engine.close();
    }
    print(await executorScenarios(backend.port));
    console.log('');
    print(await clientScenarios(backend.port, process.env['UNDICI']));
  } finally {
    pools.close();
    backend.stop();
  }
}

await main();

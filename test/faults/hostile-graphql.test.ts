// Item 5: hostile GraphQL through the gateway: deep, wide, alias-bombed and fragment-bombed queries,
// 1 MB queries and variables, invalid UTF-8 (also inside strings). Each is refused with a GraphQL error (400 or 413) before
// anything reaches the upstream, and the graphql service's memory stays bounded under repeats.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { figure } from './figures.js';
import { GRAPHQL_ANSWER, GRAPHQL_QUERY, gatewayConfig, startFakeProvider, type FakeProvider } from './fixtures.js';
import { componentPid, rssMiB } from './procs.js';

const ITEM = 'hostile-graphql';
const ROUNDS = Number(process.env['LEGATE_FAULTS_GRAPHQL_ROUNDS'] ?? 10);
let gw: Gateway;
let app: EchoUpstream;
let provider: FakeProvider;

beforeAll(async () => {
  app = await startEcho('app');
  provider = await startFakeProvider();
  gw = await startGateway({ 'faults.yaml': gatewayConfig(app.port, provider.url) });
  await gw.until(
    '/graphql',
    (r) => r.text === GRAPHQL_ANSWER,
    { method: 'POST', headers: { 'content-type': 'application/json' }, body: GRAPHQL_QUERY },
    30_000,
  );
});

afterAll(async () => {
  await gw?.stop();
  await provider?.close();
  await app?.close();
});

function post(body: Buffer | string, headers: Record<string, string> = {}): Promise<{ status: number; type: string; text: string }> {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: gw.ports.http,
        path: '/graphql',
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json',
          'content-length': String(bytes.length),
          ...headers,
        },
        timeout: 20_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            type: String(res.headers['content-type'] ?? ''),
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(bytes);
  });
}

const MB = 1024 * 1024;
const query = (q: string, variables?: unknown) => JSON.stringify({ query: q, ...(variables !== undefined ? { variables } : {}) });

function fragmentBomb(levels = 12): string {
  let doc = 'query Bomb { echo { ...F' + levels + ' } }\nfragment F0 on Echo { upstream path }\n';
  for (let i = 1; i <= levels; i++) doc += `fragment F${i} on Echo { ...F${i - 1} ...F${i - 1} }\n`;
  return doc;
}

const cases: [name: string, body: () => Buffer | string][] = [
  ['deep (5,000 levels)', () => query(`{ ${'echo { '.repeat(5000)}upstream${' }'.repeat(5000)} }`)],
  ['deep (parser: 100,000 brackets)', () => query('{'.repeat(100_000))],
  ['wide (20,000 fields)', () => query(`{ echo { ${'upstream '.repeat(20_000)}} }`)],
  ['alias bomb (2,000 aliases)', () => query(`{ ${Array.from({ length: 2000 }, (_, i) => `a${i}: echo { upstream }`).join(' ')} }`)],
  ['fragment bomb (2^12 fields)', () => query(fragmentBomb())],
  ['1 MB query', () => query(`{ echo { upstream } } # ${'x'.repeat(MB)}`)],
  ['1 MB variables', () => query('query($n: String) { hello(name: $n) }', { n: 'x'.repeat(MB) })],
  [
    '1 MB of variables keys',
    () => query('{ echo { upstream } }', Object.fromEntries(Array.from({ length: 60_000 }, (_, i) => [`v${i}`, i]))),
  ],
  [
    'invalid UTF-8',
    () => Buffer.concat([Buffer.from('{"query":"{ echo { upstream '), Buffer.from([0xff, 0xfe, 0xc3, 0x28]), Buffer.from(' } }"}')]),
  ],
  ['not JSON', () => '{"query": "{ echo { upstream } }"'],
  ['query not a string', () => JSON.stringify({ query: { $ne: 1 } })],
  [
    'invalid UTF-8 in a string literal',
    () => Buffer.concat([Buffer.from('{"query":"{ hello(name: \\"'), Buffer.from([0xff, 0xfe]), Buffer.from('\\") }"}')]),
  ],
  [
    'invalid UTF-8 in variables',
    () =>
      Buffer.concat([
        Buffer.from('{"query":"query($n: String) { hello(name: $n) }","variables":{"n":"'),
        Buffer.from([0xc3, 0x28]),
        Buffer.from('"}}'),
      ]),
  ],
];

/** Served, as GraphQL says: variables the operation does not declare are ignored (the 1 MiB body limit bounds them). */
const SERVED = new Set(['1 MB of variables keys']);

describe('hostile GraphQL', () => {
  it('refuses each with a GraphQL error (400/413) before the upstream, with bounded graphql memory', async () => {
    const pid = componentPid(gw, 'graphql')!;
    const rssBefore = rssMiB(pid);
    let rssMax = rssBefore;
    const upstreamBefore = app.seen.length;
    const answers: Record<string, string> = {};
    const problems: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, body] of cases) {
        const t = performance.now();
        const r = await post(body());
        const ms = Math.round(performance.now() - t);
        if (round === 0) {
          answers[name] = `${r.status} in ${ms} ms: ${r.text.slice(0, 160)}`;
          figure(ITEM, name, `${r.status} ${r.text.slice(0, 100)}`, `${ms} ms`);
        }
        let errors: unknown;
        try {
          errors = (JSON.parse(r.text) as { errors?: unknown }).errors;
        } catch {
          errors = undefined;
        }
        if (SERVED.has(name)) {
          if (r.status !== 200) problems.push(`${name}: ${r.status} ${r.text.slice(0, 200)}`);
        } else if (![400, 413].includes(r.status) || !Array.isArray(errors) || !r.type.includes('json')) {
          problems.push(`${name}: ${r.status} ${r.type} ${r.text.slice(0, 200)}`);
        }
      }
      rssMax = Math.max(rssMax, rssMiB(pid));
    }
    const ok = await post(GRAPHQL_QUERY);
    const rssAfter = rssMiB(pid);
    figure(ITEM, 'graphql RSS before / max / after', `${rssBefore} / ${rssMax} / ${rssAfter}`, 'MiB');
    figure(ITEM, 'refused requests that reached the upstream', app.seen.length - upstreamBefore - 1 - ROUNDS);
    console.log(JSON.stringify(answers, null, 2));
    expect(problems).toEqual([]);
    expect(ok.text).toBe(GRAPHQL_ANSWER);
    expect(app.seen.length - upstreamBefore).toBe(1 + ROUNDS); // the good query and the served case of each round
    expect(componentPid(gw, 'graphql')).toBe(pid);
    expect(rssMax).toBeLessThan(rssBefore + 300);
  });
});

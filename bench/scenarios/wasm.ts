// The wasm hot-path checks in Legate. Pairs of `legate run`s identical but for the Settings
// resource: `on` (Settings.spec.wasmChecks: bearerCheck and graphqlCheck enabled, the default) and `off`
// (both `enabled: false`, so neither filter is in Envoy's chain). Each has its own upstream (and products
// backend) processes, so the CPU of the two sides is told apart when they are measured at the same time,
// and the same resources: an AuthConfig (OAuth2 introspection at the example provider, default cache),
// a route /cached protected by it to the upstream, and (wasm-on/-off) a GraphQL route /graphql (the
// products API of the graphql scenarios). The refusals run on a pair of their own (refusal-on/-off,
// without the GraphQL route): ~100,000 refusals through extauth on one side only would leave the two
// sides' extauth processes in different states (heap sized up, code warmed) for the valid-request pairs.
//
//   missing-token-wasm / -extauth  GET /cached without Authorization: the same 403 {"error":"missing_token"},
//                                  from the bearer-check filter (on) or from extauth via ext_authz (off)
//   wasm-auth-on / -off            GET /cached with a valid token (extauth answers from its cache), both
//                                  measured at the same time (group): the filter's cost on a valid request.
//                                  wasm-on runs bearer-check with its edge cache off (cacheEntries 0), so
//                                  both sides make the same ext_authz call and the difference is the
//                                  filter's work; the edge cache's gain is auth-cached vs auth-cached-no-edge
//   wasm-auth-on-c1 / -off-c1      the same, one connection each, one after the other: its latency
//   wasm-graphql-on / -off         POST /graphql (flat query), at the same time: graphql-check's cost
import { envoyStats, legateProcesses, startLegate, type Legate } from '../lib/legate.js';
import { send, waitFor } from '../lib/net.js';
import { sleep } from '../lib/procs.js';
import {
  clientSecretYaml,
  graphqlRouteYaml,
  introspectionAuthConfigYaml,
  productsGraphqlApiYaml,
  routeYaml,
  upstreamYaml,
  vsWithRoutesYaml,
  wasmChecksSettingsYaml,
} from '../lib/resources.js';
import { acquire, startNodeServer, type NodeServer } from '../lib/servers.js';
import type { Aim, BenchContext, LoadRequest, LoadScenario, LoadTarget } from '../lib/types.js';
import { INTROSPECTOR, provider, SCOPE, type Provider } from './auth.js';
import { backendCounters, envoyExtProcCounters, graphqlRequest, startBackend, untilAnswers, type Backend } from './graphql.js';

type Variant = 'on' | 'off';

const API = 'bench-products';
const PRODUCTS = 'bench-products';
const UPSTREAM = 'bench-upstream';

/** Envoy counters that say who answered (`legate-extauth` is the cluster the controller renders, `http` the HCM's stat prefix). */
const AUTH_STATS = {
  'ext_authz checks (gRPC calls to extauth)': 'cluster.legate-extauth.upstream_rq_total',
  'bearer-check refusals': 'wasmcustom.legate_bearer_check_denied_missing',
  'bearer-check passes': 'wasmcustom.legate_bearer_check_allowed',
  'answers 4xx': 'http.http.downstream_rq_4xx',
  // a refusal must not close the connection (wrk would spend its time reconnecting)
  'client connections opened': 'http.http.downstream_cx_total',
} as const;
const GRAPHQL_CHECK_PASSES = 'wasmcustom.legate_graphql_check_allowed';

async function authCounters(adminPort: number): Promise<Record<string, number>> {
  const v = await envoyStats(adminPort, Object.values(AUTH_STATS));
  return Object.fromEntries(Object.entries(AUTH_STATS).map(([label, stat]) => [label, v[stat]!]));
}

interface WasmGateway {
  gw: Legate;
  up: NodeServer<{ port: number; body: string }>;
  /** wasm-on/-off only */
  products?: Backend;
  stop(): Promise<void>;
}

/** Which pair of `legate run`s: wasm-on/-off (auth and GraphQL routes) or refusal-on/-off (auth only). */
type Pair = 'wasm' | 'refusal';

/** The `legate run` of one side of a pair with its own upstream (and products backend), shared by that side's scenarios. */
function gateway(ctx: BenchContext, p: Provider, pair: Pair, variant: Variant): Promise<{ value: WasmGateway; release(): Promise<void> }> {
  const name = `${pair}-${variant}`;
  return acquire(ctx, `legate-${name}`, async () => {
    const on = variant === 'on';
    const graphql = pair === 'wasm';
    const up = await startNodeServer<{ port: number; body: string }>(ctx, `upstream (${name})`, 'upstream.mjs');
    let products: Backend | undefined;
    let gw: Legate | undefined;
    try {
      if (graphql) products = await startBackend(ctx, `products upstream (${name})`);
      const files: Record<string, string> = {
        'settings.yaml': wasmChecksSettingsYaml({
          bearerCheck: on,
          graphqlCheck: on,
          ...(pair === 'wasm' && on ? { cacheEntries: 0 } : {}),
        }),
        'upstreams.yaml': [
          upstreamYaml(up.info.port, UPSTREAM),
          ...(products ? [upstreamYaml(products.server.info.port, PRODUCTS)] : []),
        ].join('---\n'),
        'auth.yaml': [
          clientSecretYaml('bench-introspector', INTROSPECTOR.secret),
          introspectionAuthConfigYaml({
            name: 'bench-cached',
            url: `http://127.0.0.1:${p.server.info.port}/token/introspection`,
            clientId: INTROSPECTOR.id,
            secretName: 'bench-introspector',
            scopes: [SCOPE],
          }),
        ].join('---\n'),
        'vs.yaml': vsWithRoutesYaml('wasm', [
          routeYaml('/cached', 'bench-cached', UPSTREAM),
          ...(graphql ? [graphqlRouteYaml('/graphql', API)] : []),
        ]),
      };
      if (graphql) files['graphql.yaml'] = productsGraphqlApiYaml(API, PRODUCTS);
      gw = await startLegate(ctx, name, files, ctx.settings.serverCpus);
      const g = gw;
      const dead = (): string | undefined => (g.proc.alive() ? undefined : `legate run exited:\n${g.proc.output().slice(-4000)}`);
      // a valid token passes (extauth has its config), and is cached from now on
      await waitFor(
        '/cached to let a valid token through',
        async () => {
          const r = await send(g.ports.http, { path: '/cached/bench', headers: { authorization: `Bearer ${p.token}` } });
          return r.status === 200 && r.text === up.info.body ? true : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100, abortIf: dead },
      );
      // the same refusal either way; who gives it is the difference
      const before = await authCounters(g.ports.admin);
      const denied = await send(g.ports.http, { path: '/cached/bench' });
      const after = await authCounters(g.ports.admin);
      if (denied.status !== 403 || (JSON.parse(denied.text) as { error?: string }).error !== 'missing_token') {
        throw new Error(
          `/cached without a token answered ${denied.status} ${denied.text.slice(0, 200)}, expected 403 {"error":"missing_token"}`,
        );
      }
      const delta = (k: keyof typeof AUTH_STATS): number => after[k]! - before[k]!;
      const [checks, refusals] = [delta('ext_authz checks (gRPC calls to extauth)'), delta('bearer-check refusals')];
      if (on ? checks !== 0 || refusals !== 1 : checks !== 1 || refusals !== 0) {
        throw new Error(
          `/cached without a token (${name}): ${checks} ext_authz call(s) and ${refusals} bearer-check refusal(s), expected ` +
            `${on ? '0 and 1' : '1 and 0'}`,
        );
      }
      if (products) {
        // the GraphQL route answers, through graphql-check exactly when the Settings say so (counted when the stream ends)
        await untilAnswers(g.ports.http, '/graphql', 'flat', products.expected.flat, dead);
        const passes = async (): Promise<number> => (await envoyStats(g.ports.admin, [GRAPHQL_CHECK_PASSES]))[GRAPHQL_CHECK_PASSES]!;
        const before2 = await passes();
        await untilAnswers(g.ports.http, '/graphql', 'flat', products.expected.flat, dead);
        await sleep(200);
        const seen = (await passes()) - before2;
        if (seen !== (on ? 1 : 0)) throw new Error(`graphql-check passed ${seen} query(ies) of 1 on ${name}, expected ${on ? 1 : 0}`);
      }
      const backend = products;
      return {
        gw: g,
        up,
        ...(backend ? { products: backend } : {}),
        stop: async () => {
          await g.stop();
          await backend?.stop();
          await up.stop();
        },
      };
    } catch (err) {
      await gw?.stop();
      await products?.stop();
      await up.stop();
      throw err;
    }
  });
}

function scenario(o: {
  name: string;
  description: string;
  pair: Pair;
  variant: Variant;
  route: 'auth' | 'graphql';
  compareTo?: string[];
  aims?: Record<string, Aim>;
  group?: string;
  /** the request (auth route); undefined = a plain GET without Authorization */
  request?: (p: Provider) => LoadRequest | undefined;
  expectedStatus?: number;
  connections?: number;
}): LoadScenario {
  return {
    kind: 'load',
    name: o.name,
    description: o.description,
    ...(o.compareTo ? { compareTo: o.compareTo } : {}),
    ...(o.aims ? { aims: o.aims } : {}),
    ...(o.group ? { group: o.group } : {}),
    async setup(ctx): Promise<LoadTarget> {
      const p = await provider(ctx);
      try {
        const g = await gateway(ctx, p.value, o.pair, o.variant);
        const { gw, up, products } = g.value;
        const admin = gw.ports.admin;
        const release = async (): Promise<void> => {
          await g.release();
          await p.release();
        };
        const common = {
          port: gw.ports.http,
          ...(o.expectedStatus ? { expectedStatus: o.expectedStatus } : {}),
          ...(o.connections ? { connections: o.connections } : {}),
          stop: release,
        };
        if (o.route === 'graphql') {
          if (!products) throw new Error(`${o.pair}-${o.variant} has no GraphQL route`);
          const backend = backendCounters(products);
          return {
            ...common,
            path: '/graphql',
            request: graphqlRequest('flat'),
            processes: [...legateProcesses(gw), { label: 'products', role: 'upstream', pid: products.server.pid }],
            counters: async () => ({
              ...(await backend()),
              ...(await envoyExtProcCounters(admin)),
              'graphql-check passes': (await envoyStats(admin, [GRAPHQL_CHECK_PASSES]))[GRAPHQL_CHECK_PASSES]!,
            }),
          };
        }
        const request = o.request?.(p.value);
        return {
          ...common,
          path: '/cached/bench',
          ...(request ? { request } : {}),
          processes: [...legateProcesses(gw), { label: 'upstream', role: 'upstream', pid: up.pid }],
          counters: () => authCounters(admin),
        };
      } catch (err) {
        await p.release();
        throw err;
      }
    },
  };
}

const validToken = (p: Provider): LoadRequest => ({ headers: { authorization: `Bearer ${p.token}` } });
/** the filter's cost measured alone (bench/scenarios/wasm-envoy.ts) */
const ISOLATED: [string, string] = ['wasm-envoy-on', 'wasm-envoy-off'];
/** the two sides of a group share the server core: half the connections each, 32 in flight in all */
const HALF = 16;

export const missingTokenWasm = scenario({
  name: 'missing-token-wasm',
  description:
    'GET /cached without Authorization on refusal-on: refused 403 {"error":"missing_token"} by the bearer-check wasm filter in Envoy ' +
    '(no ext_authz call)',
  pair: 'refusal',
  variant: 'on',
  route: 'auth',
  compareTo: ['missing-token-extauth'],
  // aim: at least 3x the refusals per second of ext_authz + extauth
  aims: { 'missing-token-extauth': { minRps: 3, alsoByCpu: true } },
  expectedStatus: 403,
});

export const missingTokenExtauth = scenario({
  name: 'missing-token-extauth',
  description:
    'the same request on refusal-off (Settings bearerCheck.enabled: false): the same 403, given by the extauth service through ext_authz',
  pair: 'refusal',
  variant: 'off',
  route: 'auth',
  expectedStatus: 403,
});

export const wasmAuthOn = scenario({
  name: 'wasm-auth-on',
  description:
    'GET /cached with a valid token on wasm-on (the filter checks and passes it, edge cache off; extauth answers from its cache), ' +
    'measured at the same time as wasm-auth-off, 16 connections each',
  pair: 'wasm',
  variant: 'on',
  route: 'auth',
  compareTo: ['wasm-auth-off'],
  // aim: at most 5% less throughput on a valid request
  aims: { 'wasm-auth-off': { minRps: 0.95, alsoByCpu: true, isolated: ISOLATED } },
  group: 'wasm-auth',
  request: validToken,
  connections: HALF,
});

export const wasmAuthOff = scenario({
  name: 'wasm-auth-off',
  description: 'the same on wasm-off (no filter), measured at the same time as wasm-auth-on',
  pair: 'wasm',
  variant: 'off',
  route: 'auth',
  group: 'wasm-auth',
  request: validToken,
  connections: HALF,
});

// At saturation p50 is mostly queueing (~ connections / req/s), so the latency the filter adds to a request
// is measured with one connection, where nothing queues (and one scenario after the other: measured at the
// same time, each request would also wait for the other side's work).
export const wasmAuthOnC1 = scenario({
  name: 'wasm-auth-on-c1',
  description: 'wasm-auth-on with one connection, alone: the latency of a valid request through the filter',
  pair: 'wasm',
  variant: 'on',
  route: 'auth',
  compareTo: ['wasm-auth-off-c1'],
  // aim: under 50 µs added to a valid request's p50
  aims: { 'wasm-auth-off-c1': { maxAddedP50Us: 50, isolated: ISOLATED } },
  request: validToken,
  connections: 1,
});

export const wasmAuthOffC1 = scenario({
  name: 'wasm-auth-off-c1',
  description: 'wasm-auth-off with one connection, alone',
  pair: 'wasm',
  variant: 'off',
  route: 'auth',
  request: validToken,
  connections: 1,
});

export const wasmGraphqlOn = scenario({
  name: 'wasm-graphql-on',
  description:
    'POST /graphql {productsForHome{id title}} on wasm-on (graphql-check passes it to ext_proc), measured at the same time as ' +
    'wasm-graphql-off, 16 connections each',
  pair: 'wasm',
  variant: 'on',
  route: 'graphql',
  compareTo: ['wasm-graphql-off'],
  // the throughput aim, applied to graphql-check
  aims: { 'wasm-graphql-off': { minRps: 0.95, alsoByCpu: true, isolated: ['wasm-envoy-graphql-on', 'wasm-envoy-graphql-off'] } },
  group: 'wasm-graphql',
  connections: HALF,
});

export const wasmGraphqlOff = scenario({
  name: 'wasm-graphql-off',
  description: 'the same on wasm-off (no filter), measured at the same time as wasm-graphql-on',
  pair: 'wasm',
  variant: 'off',
  route: 'graphql',
  group: 'wasm-graphql',
  connections: HALF,
});

// GraphQL: the same two queries over the products REST backend (bench/graphql/) answered
//   - by Legate: POST /graphql through Envoy + ext_proc to the graphql extension (one `legate run`
//     serving both queries),
//   - by the peer a user would write instead (bench/graphql/peer.mjs: node:http + graphql 16, naive
//     resolvers, document cache), one Node process,
//   - by GraphQL Yoga, Apollo Server and Mercurius with graphql-jit (bench/graphql/*.mjs), when installed,
// plus the backend's list call direct (the limit). All servers, the backend included, on the server CPUs.
import { createRequire } from 'node:module';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { legateProcesses, startLegate, type Legate } from '../lib/legate.js';
import { get, getJson, send, waitFor } from '../lib/net.js';
import { graphqlVsYaml, productsGraphqlApiYaml, upstreamYaml } from '../lib/resources.js';
import { acquire, startNodeServer, type NodeServer } from '../lib/servers.js';
import {
  ScenarioSkipped,
  type BenchContext,
  type LoadRequest,
  type LoadScenario,
  type LoadTarget,
  type MeasuredProcess,
} from '../lib/types.js';

export const QUERIES = {
  flat: '{productsForHome{id title}}',
  nested: '{productsForHome{id author pages year}}',
} as const;
export type QueryName = keyof typeof QUERIES;

const API = 'bench-products';
const UPSTREAM = 'bench-products';

interface Product {
  id: number;
  title: string;
}
interface Details {
  id: number;
  author: string;
  pages: number;
  year: number;
}

export interface Backend {
  server: NodeServer<{ port: number; products: Product[] }>;
  /** the exact `data` each query must answer with */
  expected: Record<QueryName, unknown>;
  stop(): Promise<void>;
}

/** A products backend process and the answers expected from it. */
export async function startBackend(ctx: BenchContext, name = 'products upstream'): Promise<Backend> {
  const server = await startNodeServer<{ port: number; products: Product[] }>(ctx, name, 'graphql/products-upstream.mjs');
  const products = server.info.products;
  const details = await Promise.all(products.map((p) => getJson<Details>(server.info.port, `/details/${p.id}`)));
  return {
    server,
    expected: {
      flat: { data: { productsForHome: products.map((p) => ({ id: p.id, title: p.title })) } },
      nested: { data: { productsForHome: details.map((d) => ({ id: d.id, author: d.author, pages: d.pages, year: d.year })) } },
    },
    stop: () => server.stop(),
  };
}

/** The products backend shared by every GraphQL scenario. */
async function backend(ctx: BenchContext): Promise<{ value: Backend; release(): Promise<void> }> {
  return acquire(ctx, 'graphql-backend', () => startBackend(ctx));
}

/** Backend calls served so far (list and details), for the calls-per-request figures. */
export function backendCounters(b: Backend): () => Promise<Record<string, number>> {
  return async () => {
    const s = await getJson<{ list: number; details: number }>(b.server.info.port, '/__stats');
    return { 'backend list calls': s.list, 'backend details calls': s.details };
  };
}

export const graphqlRequest = (q: QueryName): LoadRequest => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json' },
  body: JSON.stringify({ query: QUERIES[q] }),
});

/** Waits until POST `path` answers 200 with exactly the expected JSON (parsed). */
export async function untilAnswers(
  port: number,
  urlPath: string,
  q: QueryName,
  expected: unknown,
  abortIf: () => string | undefined,
): Promise<void> {
  const r = graphqlRequest(q);
  let last = '';
  await waitFor(
    `POST ${urlPath} ${QUERIES[q]} to answer the expected data`,
    async () => {
      const res = await send(port, { method: 'POST', path: urlPath, headers: r.headers!, body: r.body! });
      last = `${res.status} ${res.text.slice(0, 300)}`;
      if (res.status !== 200) return undefined;
      return isDeepStrictEqual(JSON.parse(res.text), expected) ? true : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100, abortIf: () => abortIf() ?? undefined },
  ).catch((err: unknown) => {
    throw new Error(`${err instanceof Error ? err.message : String(err)}; last answer: ${last}`);
  });
}

/** A load target for query `q` against a server, holding references to what it shares. */
function target(
  b: Backend,
  port: number,
  q: QueryName,
  processes: MeasuredProcess[],
  notes: string[],
  releases: (() => Promise<void>)[],
): LoadTarget {
  return {
    port,
    path: '/graphql',
    request: graphqlRequest(q),
    processes: [...processes, { label: 'products', role: 'upstream', pid: b.server.pid }],
    counters: backendCounters(b),
    notes,
    stop: async () => {
      for (const r of [...releases].reverse()) await r();
    },
  };
}

// ---- the limit: the backend's list call, direct ----

export const graphqlRestDirect: LoadScenario = {
  kind: 'load',
  name: 'graphql-rest-direct',
  description:
    'GET /api/v1/products straight to the products backend (the REST call behind the flat query): the limit of the GraphQL scenarios',
  async setup(ctx) {
    const b = await backend(ctx);
    return {
      port: b.value.server.info.port,
      path: '/api/v1/products',
      processes: [{ label: 'products', role: 'upstream', pid: b.value.server.pid }],
      counters: backendCounters(b.value),
      notes: [`${b.value.server.info.products.length} products`],
      stop: () => b.release(),
    };
  },
};

// ---- Legate: Envoy + ext_proc + the graphql extension ----

async function legateGraphql(ctx: BenchContext, b: Backend): Promise<{ value: Legate; release(): Promise<void> }> {
  return acquire(ctx, 'graphql-legate', async () => {
    const files = {
      'upstream.yaml': upstreamYaml(b.server.info.port, UPSTREAM),
      'graphql.yaml': productsGraphqlApiYaml(API, UPSTREAM),
      'vs.yaml': graphqlVsYaml('graphql', '/graphql', API),
    };
    return startLegate(ctx, 'graphql', files, ctx.settings.serverCpus);
  });
}

/**
 * Envoy's own view of the ext_proc side streams: streams that failed (the client got a 500) and gRPC
 * connections opened to the graphql extension (`legate-graphql` is the cluster the controller renders).
 */
export async function envoyExtProcCounters(adminPort: number): Promise<Record<string, number>> {
  const r = await get(adminPort, `/stats?filter=${encodeURIComponent('(ext_proc\\.streams_failed|legate-graphql\\.upstream_cx_total)$')}`);
  const out = { 'ext_proc streams failed': 0, 'gRPC connections to the graphql extension opened': 0 };
  for (const line of r.text.split('\n')) {
    const m = /^(\S+): (\d+)$/.exec(line);
    if (!m) continue;
    if (m[1]!.endsWith('ext_proc.streams_failed')) out['ext_proc streams failed'] += Number(m[2]);
    else if (m[1]!.endsWith('legate-graphql.upstream_cx_total')) out['gRPC connections to the graphql extension opened'] += Number(m[2]);
  }
  return out;
}

function legateScenario(q: QueryName, aims: Record<string, number>): LoadScenario {
  return {
    kind: 'load',
    name: `graphql-legate-${q}`,
    description: `POST /graphql ${QUERIES[q]} through Legate (Envoy ext_proc -> the graphql extension -> the products backend)`,
    compareTo: [
      `graphql-peer-${q}`,
      `graphql-yoga-${q}`,
      `graphql-apollo-${q}`,
      `graphql-mercurius-${q}`,
      ...(q === 'nested' ? ['graphql-dataloader-nested'] : []),
      'graphql-rest-direct',
    ],
    aims,
    async setup(ctx) {
      const b = await backend(ctx);
      try {
        const gw = await legateGraphql(ctx, b.value);
        try {
          const g = gw.value;
          await untilAnswers(g.ports.http, '/graphql', q, b.value.expected[q], () =>
            g.proc.alive() ? undefined : `legate run exited:\n${g.proc.output().slice(-4000)}`,
          );
          const t = target(b.value, g.ports.http, q, legateProcesses(g), [], [b.release, gw.release]);
          const backendCalls = t.counters!;
          t.counters = async () => ({ ...(await backendCalls()), ...(await envoyExtProcCounters(g.ports.admin)) });
          return t;
        } catch (err) {
          await gw.release();
          throw err;
        }
      } catch (err) {
        await b.release();
        throw err;
      }
    },
  };
}

// ---- the peers: one Node process each ----

interface Peer {
  script: string;
  label: string;
  /** undefined when it can run here, else why not */
  unavailable?: (ctx: BenchContext) => string | undefined;
}

type PeerKind = 'peer' | 'yoga' | 'apollo' | 'mercurius' | 'dataloader';

/** undefined when `pkg` resolves from the project, else why the scenario is skipped */
const needs =
  (pkg: string) =>
  (ctx: BenchContext): string | undefined => {
    try {
      createRequire(path.join(ctx.root, 'package.json')).resolve(pkg);
      return undefined;
    } catch {
      return `${pkg} is not installed (npm ci installs the dev dependencies)`;
    }
  };

const PEERS: Record<PeerKind, Peer & { description: string }> = {
  peer: {
    script: 'graphql/peer.mjs',
    label: 'graphql-peer',
    description: 'a minimal graphql-js server (node:http + graphql 16, naive resolvers without dedup, document cache), one Node process',
  },
  yoga: {
    script: 'graphql/yoga.mjs',
    label: 'yoga',
    unavailable: needs('graphql-yoga'),
    description: 'GraphQL Yoga 5 (defaults, same naive resolvers), one Node process',
  },
  apollo: {
    script: 'graphql/apollo.mjs',
    label: 'apollo',
    unavailable: needs('@apollo/server'),
    description: 'Apollo Server 5 (standalone server, defaults, landing page off, same naive resolvers), one Node process',
  },
  mercurius: {
    script: 'graphql/mercurius.mjs',
    label: 'mercurius',
    unavailable: needs('mercurius'),
    description: 'Mercurius 16 on Fastify 5 (graphql-jit on, query cache, same naive resolvers), one Node process',
  },
  dataloader: {
    script: 'graphql/dataloader.mjs',
    label: 'graphql-dataloader',
    unavailable: needs('dataloader'),
    description:
      'the minimal graphql-js server with a per-request DataLoader for /details/{id} ' +
      "(1 + 5 backend calls for nested, as Legate's dedup), one Node process",
  },
};

function peerScenario(kind: PeerKind, q: QueryName): LoadScenario {
  const peer = PEERS[kind];
  return {
    kind: 'load',
    name: `graphql-${kind}-${q}`,
    description: `POST /graphql ${QUERIES[q]} to ${peer.description}`,
    ...(kind !== 'peer' ? { compareTo: [`graphql-peer-${q}`] } : {}),
    async setup(ctx) {
      const why = peer.unavailable?.(ctx);
      if (why) throw new ScenarioSkipped(why);
      const b = await backend(ctx);
      try {
        const server = await acquire(ctx, `graphql-${kind}`, () =>
          startNodeServer<{ port: number }>(ctx, peer.label, peer.script, { UPSTREAM_PORT: String(b.value.server.info.port) }).catch(
            (err: unknown) => {
              // a peer that cannot start on this Node is skipped, not a failure of the run
              throw kind !== 'peer' ? new ScenarioSkipped(`${peer.label} did not start: ${String(err).slice(0, 500)}`) : err;
            },
          ),
        );
        try {
          const s = server.value;
          await untilAnswers(s.info.port, '/graphql', q, b.value.expected[q], () =>
            s.proc.alive() ? undefined : `${peer.label} exited:\n${s.proc.output().slice(-4000)}`,
          );
          return target(b.value, s.info.port, q, [{ label: peer.label, role: 'app', pid: s.pid }], [], [b.release, server.release]);
        } catch (err) {
          await server.release();
          throw err;
        }
      } catch (err) {
        await b.release();
        throw err;
      }
    },
  };
}

// the aims: flat >= 1.0x the minimal server and Apollo; nested >= 1.5x the DataLoader server (the same
// backend calls) and >= 2.5x Apollo
export const graphqlLegateFlat = legateScenario('flat', { 'graphql-peer-flat': 1.0, 'graphql-apollo-flat': 1.0 });
export const graphqlLegateNested = legateScenario('nested', { 'graphql-dataloader-nested': 1.5, 'graphql-apollo-nested': 2.5 });
export const graphqlPeerFlat = peerScenario('peer', 'flat');
export const graphqlPeerNested = peerScenario('peer', 'nested');
export const graphqlYogaFlat = peerScenario('yoga', 'flat');
export const graphqlYogaNested = peerScenario('yoga', 'nested');
export const graphqlApolloFlat = peerScenario('apollo', 'flat');
export const graphqlApolloNested = peerScenario('apollo', 'nested');
export const graphqlMercuriusFlat = peerScenario('mercurius', 'flat');
export const graphqlMercuriusNested = peerScenario('mercurius', 'nested');
export const graphqlDataloaderNested = peerScenario('dataloader', 'nested');

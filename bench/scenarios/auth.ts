// Access-token auth (issue 4). One `legate run` with three routes to the shared upstream: /open (no
// auth), /cached (AuthConfig with introspection, default cacheTimeout) and /fresh (cacheTimeout 0s: every
// request introspects), and the example OAuth2 provider (oidc-provider) in its own process
// (bench/auth/provider.mjs, which counts the introspections it answers). Plus the provider's own
// introspection throughput, straight at it.
import { legateProcesses, startLegate, untilServed, type Legate } from '../lib/legate.js';
import { getJson, send, waitFor } from '../lib/net.js';
import {
  clientSecretYaml,
  introspectionAuthConfigYaml,
  routeYaml,
  upstreamYaml,
  vsWithRoutesYaml,
  wasmChecksSettingsYaml,
} from '../lib/resources.js';
import { acquire, startNodeServer, type NodeServer } from '../lib/servers.js';
import type { BenchContext, LoadRequest, LoadScenario, LoadTarget, MeasuredProcess, Upstream } from '../lib/types.js';

const DEMO_CLIENT = { id: 'legate-demo', secret: 'legate-demo-secret' };
export const INTROSPECTOR = { id: 'legate-extauth', secret: 'legate-extauth-secret' };
export const SCOPE = 'products:read';
/** Tokens the uncached scenarios rotate through: more than the connections, so no two requests in flight share one. */
const POOL = 256;

const basic = (c: { id: string; secret: string }): string => `Basic ${Buffer.from(`${c.id}:${c.secret}`).toString('base64')}`;
const FORM = 'application/x-www-form-urlencoded';

type ProviderServer = NodeServer<{ port: number; statsPort: number }>;

export interface Provider {
  server: ProviderServer;
  /** one token (auth-unprotected, auth-cached) */
  token: string;
  /** POOL distinct tokens (auth-uncached, provider-introspection) */
  pool: string[];
  stop(): Promise<void>;
}

async function issueToken(port: number): Promise<string> {
  const r = await send(port, {
    method: 'POST',
    path: '/token',
    headers: { authorization: basic(DEMO_CLIENT), 'content-type': FORM },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: SCOPE }).toString(),
  });
  if (r.status !== 200) throw new Error(`the provider's /token answered ${r.status}: ${r.text.slice(0, 300)}`);
  return (JSON.parse(r.text) as { access_token: string }).access_token;
}

/** The provider process and its tokens (shared by the auth scenarios and the wasm ones). */
export function provider(ctx: BenchContext): Promise<{ value: Provider; release(): Promise<void> }> {
  return acquire(ctx, 'oauth-provider', async () => {
    const server = await startNodeServer<{ port: number; statsPort: number }>(ctx, 'oauth provider', 'auth/provider.mjs', {
      TOKEN_TTL_SECONDS: '3600',
    });
    try {
      const port = server.info.port;
      const token = await issueToken(port);
      const pool: string[] = [];
      while (pool.length < POOL) pool.push(...(await Promise.all(Array.from({ length: 8 }, () => issueToken(port)))));
      return { server, token, pool: pool.slice(0, POOL), stop: () => server.stop() };
    } catch (err) {
      await server.stop();
      throw err;
    }
  });
}

const introspections = (p: Provider) => async (): Promise<Record<string, number>> => ({
  'provider introspections': (await getJson<{ introspections: number }>(p.server.info.statsPort, '/')).introspections,
});

const providerProcess = (p: Provider): MeasuredProcess => ({ label: 'provider', role: 'provider', pid: p.server.pid });

interface AuthGateway {
  gw: Legate;
  up: Upstream;
  stop(): Promise<void>;
}

/**
 * One `legate run` with the three routes (shared by auth-unprotected, auth-cached, auth-uncached), as
 * shipped (bearer-check's edge cache on); `edge: false` is the same with Settings
 * wasmChecks.bearerCheck.cacheEntries 0, so every request goes through ext_authz (auth-cached-no-edge).
 */
function gateway(ctx: BenchContext, p: Provider, edge = true): Promise<{ value: AuthGateway; release(): Promise<void> }> {
  return acquire(ctx, edge ? 'auth-legate' : 'auth-legate-no-edge', async () => {
    const up = await ctx.upstream();
    const url = `http://127.0.0.1:${p.server.info.port}/token/introspection`;
    const common = { url, clientId: INTROSPECTOR.id, secretName: 'bench-introspector', scopes: [SCOPE] };
    const files = {
      'upstream.yaml': upstreamYaml(up.port),
      'auth.yaml': [
        clientSecretYaml('bench-introspector', INTROSPECTOR.secret),
        introspectionAuthConfigYaml({ ...common, name: 'bench-cached' }),
        introspectionAuthConfigYaml({ ...common, name: 'bench-nocache', cacheTimeout: '0s' }),
      ].join('---\n'),
      'vs.yaml': vsWithRoutesYaml('auth', [routeYaml('/open'), routeYaml('/cached', 'bench-cached'), routeYaml('/fresh', 'bench-nocache')]),
      ...(edge ? {} : { 'settings.yaml': wasmChecksSettingsYaml({ bearerCheck: true, graphqlCheck: true, cacheEntries: 0 }) }),
    };
    const gw = await startLegate(ctx, edge ? 'auth' : 'auth-no-edge', files, ctx.settings.serverCpus);
    try {
      const dead = (): string | undefined => (gw.proc.alive() ? undefined : `legate run exited:\n${gw.proc.output().slice(-4000)}`);
      await untilServed(gw.ports.http, '/open/bench', undefined, up.body, 30_000, 100, dead);
      // the extauth service has its configs once a good token passes; without one it must deny
      for (const route of ['/cached/bench', '/fresh/bench']) {
        await waitFor(
          `${route} to let a valid token through`,
          async () => {
            const r = await send(gw.ports.http, { path: route, headers: { authorization: `Bearer ${p.token}` } });
            return r.status === 200 && r.text === up.body ? true : undefined;
          },
          { timeoutMs: 30_000, intervalMs: 100, abortIf: dead },
        );
        const denied = await send(gw.ports.http, { path: route });
        if (denied.status !== 403) throw new Error(`${route} without a token answered ${denied.status}, expected 403`);
      }
      return { gw, up, stop: () => gw.stop() };
    } catch (err) {
      await gw.stop();
      throw err;
    }
  });
}

function authScenario(o: {
  name: string;
  description: string;
  route: string;
  compareTo: string[];
  aims?: Record<string, number>;
  request: (p: Provider) => LoadRequest;
  notes: string[];
  /** bearer-check's edge cache (default on, as shipped) */
  edge?: boolean;
}): LoadScenario {
  return {
    kind: 'load',
    name: o.name,
    description: o.description,
    compareTo: o.compareTo,
    ...(o.aims ? { aims: o.aims } : {}),
    async setup(ctx): Promise<LoadTarget> {
      const p = await provider(ctx);
      try {
        const g = await gateway(ctx, p.value, o.edge ?? true);
        return {
          port: g.value.gw.ports.http,
          path: `${o.route}/bench`,
          request: o.request(p.value),
          processes: [
            ...legateProcesses(g.value.gw),
            { label: 'upstream', role: 'upstream', pid: g.value.up.pid },
            providerProcess(p.value),
          ],
          counters: introspections(p.value),
          notes: o.notes,
          stop: async () => {
            await g.release();
            await p.release();
          },
        };
      } catch (err) {
        await p.release();
        throw err;
      }
    },
  };
}

const oneToken = (p: Provider): LoadRequest => ({ headers: { authorization: `Bearer ${p.token}` } });

export const authUnprotected = authScenario({
  name: 'auth-unprotected',
  description:
    'GET through Legate on a route without auth, in the same legate run as auth-cached, with the same Authorization header (ignored): ' +
    'the pair of auth-cached',
  route: '/open',
  compareTo: ['legate-route'],
  request: oneToken,
  notes: [],
});

export const authCached = authScenario({
  name: 'auth-cached',
  description:
    'GET on a route protected by an AuthConfig (OAuth2 introspection, default cacheTimeout), one valid token reused, as shipped: after ' +
    'the first request bearer-check answers from its edge cache and ext_authz is skipped',
  route: '/cached',
  compareTo: ['auth-unprotected', 'legate-route', 'auth-cached-no-edge'],
  aims: { 'auth-unprotected': 0.45 },
  request: oneToken,
  notes: [],
});

export const authCachedNoEdge = authScenario({
  name: 'auth-cached-no-edge',
  description:
    'auth-cached with the edge cache off (Settings bearerCheck.cacheEntries: 0): every request is an ext_authz gRPC Check, answered ' +
    'from the extauth service cache',
  route: '/cached',
  compareTo: ['auth-unprotected'],
  request: oneToken,
  notes: [],
  edge: false,
});

export const authUncached = authScenario({
  name: 'auth-uncached',
  description:
    `GET on a route whose AuthConfig has cacheTimeout 0s: every request is introspected at the provider (${POOL} tokens in ` +
    `turn, so single-flight joins none)`,
  route: '/fresh',
  compareTo: ['provider-introspection', 'auth-cached'],
  request: (p) => ({ variants: p.pool.map((t) => ({ headers: { authorization: `Bearer ${t}` } })) }),
  notes: [],
});

export const providerIntrospection: LoadScenario = {
  kind: 'load',
  name: 'provider-introspection',
  description:
    `POST /token/introspection straight at the OAuth2 provider (oidc-provider), the call extauth makes (form ` +
    `token=...&token_type_hint=access_token, basic auth of legate-extauth), ${POOL} tokens in turn`,
  async setup(ctx) {
    const p = await provider(ctx);
    const check = await send(p.value.server.info.port, {
      method: 'POST',
      path: '/token/introspection',
      headers: { authorization: basic(INTROSPECTOR), 'content-type': FORM },
      body: new URLSearchParams({ token: p.value.token, token_type_hint: 'access_token' }).toString(),
    });
    if (check.status !== 200 || (JSON.parse(check.text) as { active?: boolean }).active !== true) {
      await p.release();
      throw new Error(`introspection of a fresh token answered ${check.status}: ${check.text.slice(0, 300)}`);
    }
    return {
      port: p.value.server.info.port,
      path: '/token/introspection',
      request: {
        method: 'POST',
        headers: { authorization: basic(INTROSPECTOR), 'content-type': FORM },
        variants: p.value.pool.map((t) => ({ body: new URLSearchParams({ token: t, token_type_hint: 'access_token' }).toString() })),
      },
      processes: [providerProcess(p.value)],
      counters: introspections(p.value),
      stop: () => p.release(),
    };
  },
};

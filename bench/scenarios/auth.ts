// Access-token auth. One `legate run` with routes to the shared upstream: /open (no
// auth), /cached (AuthConfig with introspection, default cacheTimeout), /fresh (cacheTimeout 0s: every
// request introspects), /jwt (a JWT AuthConfig, local JWK set, default cacheTimeout) and /jwt-verify
// (the same with cacheTimeout 0s: extauth verifies the signature on every check), and the example
// OAuth2 provider (oidc-provider) in its own process (bench/auth/provider.mjs, which counts the
// introspections it answers). JWTs are ES256 tokens signed here, with the key the AuthConfigs carry.
// Plus the provider's own introspection throughput, straight at it, and auth-new-token-workers: what a
// new token costs on a 2-worker Envoy with bearer-check's edge cache per worker or shared.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { sealCookieSession } from '../../extensions/extauth/steps/oauth2-code.js';
import { envoyConcurrency, envoyPath, envoyStats, legateProcesses, startLegate, untilServed, type Legate } from '../lib/legate.js';
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
import type {
  BenchContext,
  Figure,
  FiguresScenario,
  LoadRequest,
  LoadScenario,
  LoadTarget,
  MeasuredProcess,
  Upstream,
} from '../lib/types.js';

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

// ---- JWT access tokens, signed here

const JWT_ISSUER = 'https://bench.legate.test';
const JWT_AUDIENCE = 'bench-api';

interface JwtSigner {
  /** the public JWK set (JSON) the AuthConfigs carry as localJwks */
  jwks: string;
  /** a new token (its own jti) valid for two hours, scope SCOPE */
  sign(): Promise<string>;
}

let signer: Promise<JwtSigner> | undefined;

/** One ES256 key per bench run. */
function jwtSigner(): Promise<JwtSigner> {
  signer ??= (async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'bench-1', alg: 'ES256', use: 'sig' };
    return {
      jwks: JSON.stringify({ keys: [jwk] }),
      sign: () =>
        new SignJWT({ scope: SCOPE })
          .setProtectedHeader({ alg: 'ES256', kid: 'bench-1', typ: 'at+jwt' })
          .setIssuer(JWT_ISSUER)
          .setAudience(JWT_AUDIENCE)
          .setSubject('bench')
          .setJti(crypto.randomUUID())
          .setIssuedAt()
          .setExpirationTime('2h')
          .sign(privateKey),
    };
  })();
  return signer;
}

let benchJwt: Promise<string> | undefined;
/** The one JWT the load scenarios reuse. */
const oneJwt = (): Promise<string> => (benchJwt ??= jwtSigner().then((j) => j.sign()));

function jwtAuthConfigYaml(name: string, jwks: string, cacheTimeout?: string): string {
  return `apiVersion: enterprise.legate.dev/v1
kind: AuthConfig
metadata: { name: ${name}, namespace: legate-system }
spec:
  configs:
    - oauth2:
        accessTokenValidation:
          jwt:
            localJwks: { inlineString: ${JSON.stringify(jwks)} }
            issuer: ${JWT_ISSUER}
            audiences: [${JWT_AUDIENCE}]
          requiredScopes: { scope: [${SCOPE}] }${cacheTimeout !== undefined ? `\n          cacheTimeout: ${cacheTimeout}` : ''}
`;
}

/** Host of the VirtualService whose virtual host verifies JWTs in Envoy (jwtStaged, jwt_authn): the auth-jwt-envoy scenario. */
const JWT_ENVOY_HOST = 'jwt-envoy.bench.test';

/**
 * A VirtualService on JWT_ENVOY_HOST with Gloo's `jwtStaged.beforeExtAuth` (one provider, the bench key as a local
 * JWKS, issuer and audience) and one route to the upstream: Envoy's own jwt_authn filter verifies the token, no
 * ext_authz call.
 */
function jwtEnvoyVsYaml(jwks: string): string {
  return `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: auth-jwt-envoy, namespace: default }
spec:
  virtualHost:
    domains: [${JWT_ENVOY_HOST}]
    options:
      jwtStaged:
        beforeExtAuth:
          providers:
            bench:
              issuer: ${JWT_ISSUER}
              audiences: [${JWT_AUDIENCE}]
              jwks: { local: { key: ${JSON.stringify(jwks)} } }
    routes:
${routeYaml('/')}
`;
}

/** The OIDC route's session key (a Secret the AuthConfig's cipherConfig names) and a logged-in session cookie. */
const OIDC_KEY = '0123456789abcdef0123456789abcdef';
const OIDC_COOKIE = `__session=${sealCookieSession(Buffer.from(OIDC_KEY).toString('base64'), '__session', {
  idToken: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJiZW5jaCJ9.c2ln',
  accessToken: 'bench-access-token',
  expiresAt: Date.now() + 365 * 86_400_000,
})}`;

/** A browser-login AuthConfig (the demo provider's web client) whose sessions are sealed with OIDC_KEY. */
function oidcAuthConfigYaml(providerPort: number): string {
  return `apiVersion: v1
kind: Secret
metadata: { name: bench-oidc-key, namespace: legate-system }
stringData: { key: ${OIDC_KEY} }
---
apiVersion: enterprise.legate.dev/v1
kind: AuthConfig
metadata: { name: bench-oidc, namespace: legate-system }
spec:
  configs:
    - oauth2:
        oidcAuthorizationCode:
          appUrl: http://localhost:8080/
          callbackPath: /oidc/callback
          clientId: legate-web
          disableClientSecret: true
          issuerUrl: http://127.0.0.1:${providerPort}
          headers: { idTokenHeader: x-id-token }
          session:
            cookieOptions: { notSecure: true }
            cipherConfig: { keyRef: { name: bench-oidc-key, namespace: legate-system } }
`;
}

const EXT_AUTHZ_CALLS = 'cluster.legate-extauth.upstream_rq_total';

/** What the server side did per request: introspections at the provider, ext_authz checks Envoy made. */
const counters = (p: Provider, gw: Legate) => async (): Promise<Record<string, number>> => ({
  'provider introspections': (await getJson<{ introspections: number }>(p.server.info.statsPort, '/')).introspections,
  'ext_authz checks': (await envoyStats(gw.ports.admin, [EXT_AUTHZ_CALLS]))[EXT_AUTHZ_CALLS]!,
});

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
 * How a `legate run` of the auth scenarios is built: `shipped` as shipped (bearer-check's edge cache on,
 * its table shared by the workers); `no-edge` with Settings wasmChecks.bearerCheck.cacheEntries 0, so
 * every request goes through ext_authz; the `edge-*` ones are the auth-edge group's own instances
 * (shipped, shipped, and with `sharedCache: false`: a table per worker).
 */
type AuthVariant = 'shipped' | 'no-edge' | 'edge-shared' | 'edge-per-worker' | 'edge-open';

const PER_WORKER_SETTINGS = `apiVersion: legate.dev/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec:
  wasmChecks:
    bearerCheck: { sharedCache: false }
`;

/**
 * One `legate run` with the five routes (shared by auth-unprotected, auth-cached, auth-uncached,
 * auth-jwt, auth-jwt-verify), built as `variant` says.
 */
function gateway(ctx: BenchContext, p: Provider, variant: AuthVariant): Promise<{ value: AuthGateway; release(): Promise<void> }> {
  const name = variant === 'shipped' ? 'auth' : `auth-${variant}`;
  return acquire(ctx, `${name}-legate`, async () => {
    const edge = variant !== 'no-edge';
    // the group's instances are measured at the same time: each charges an upstream process of its own
    const own = variant.startsWith('edge-')
      ? await startNodeServer<{ port: number; body: string }>(ctx, `upstream (${name})`, 'upstream.mjs')
      : undefined;
    const up: Upstream = own !== undefined ? { port: own.info.port, pid: own.pid, body: own.info.body } : await ctx.upstream();
    const url = `http://127.0.0.1:${p.server.info.port}/token/introspection`;
    const common = { url, clientId: INTROSPECTOR.id, secretName: 'bench-introspector', scopes: [SCOPE] };
    const jwt = await jwtSigner();
    const files = {
      'upstream.yaml': upstreamYaml(up.port),
      'auth.yaml': [
        clientSecretYaml('bench-introspector', INTROSPECTOR.secret),
        introspectionAuthConfigYaml({ ...common, name: 'bench-cached' }),
        introspectionAuthConfigYaml({ ...common, name: 'bench-nocache', cacheTimeout: '0s' }),
        jwtAuthConfigYaml('bench-jwt', jwt.jwks),
        jwtAuthConfigYaml('bench-jwt-verify', jwt.jwks, '0s'),
        oidcAuthConfigYaml(p.server.info.port),
      ].join('---\n'),
      'vs.yaml': vsWithRoutesYaml('auth', [
        routeYaml('/open'),
        routeYaml('/cached', 'bench-cached'),
        routeYaml('/fresh', 'bench-nocache'),
        // before /jwt, which is its prefix
        routeYaml('/jwt-verify', 'bench-jwt-verify'),
        routeYaml('/jwt', 'bench-jwt'),
        routeYaml('/oidc', 'bench-oidc'),
      ]),
      'jwt-envoy.yaml': jwtEnvoyVsYaml(jwt.jwks),
      ...(edge ? {} : { 'settings.yaml': wasmChecksSettingsYaml({ bearerCheck: true, graphqlCheck: true, cacheEntries: 0 }) }),
      ...(variant === 'edge-per-worker' ? { 'settings.yaml': PER_WORKER_SETTINGS } : {}),
    };
    const gw = await startLegate(ctx, name, files, ctx.settings.serverCpus);
    try {
      const dead = (): string | undefined => (gw.proc.alive() ? undefined : `legate run exited:\n${gw.proc.output().slice(-4000)}`);
      await untilServed(gw.ports.http, '/open/bench', undefined, up.body, 30_000, 100, dead);
      // the extauth service has its configs once a good token passes; without one it must deny
      const jwtToken = await oneJwt();
      for (const route of ['/cached/bench', '/fresh/bench', '/jwt/bench', '/jwt-verify/bench']) {
        const t = route.startsWith('/jwt') ? jwtToken : p.token;
        await waitFor(
          `${route} to let a valid token through`,
          async () => {
            const r = await send(gw.ports.http, { path: route, headers: { authorization: `Bearer ${t}` } });
            return r.status === 200 && r.text === up.body ? true : undefined;
          },
          { timeoutMs: 30_000, intervalMs: 100, abortIf: dead },
        );
        const denied = await send(gw.ports.http, { path: route });
        if (denied.status !== 403) throw new Error(`${route} without a token answered ${denied.status}, expected 403`);
      }
      await waitFor(
        'the jwtStaged virtual host to let a valid JWT through',
        async () => {
          const r = await send(gw.ports.http, {
            path: '/bench',
            headers: { host: JWT_ENVOY_HOST, authorization: `Bearer ${jwtToken}` },
          });
          return r.status === 200 && r.text === up.body ? true : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100, abortIf: dead },
      );
      const unsigned = await send(gw.ports.http, { path: '/bench', headers: { host: JWT_ENVOY_HOST } });
      if (unsigned.status !== 401) throw new Error(`the jwtStaged virtual host without a JWT answered ${unsigned.status}, expected 401`);
      await waitFor(
        '/oidc to let a session cookie through',
        async () => {
          const r = await send(gw.ports.http, { path: '/oidc/bench', headers: { cookie: OIDC_COOKIE } });
          return r.status === 200 && r.text === up.body ? true : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100, abortIf: dead },
      );
      const login = await send(gw.ports.http, { path: '/oidc/bench' });
      if (login.status !== 302) throw new Error(`/oidc without a session answered ${login.status}, expected 302 (the login)`);
      return {
        gw,
        up,
        stop: async () => {
          await gw.stop();
          await own?.stop();
        },
      };
    } catch (err) {
      await gw.stop();
      await own?.stop();
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
  request: (p: Provider, jwt: string) => LoadRequest;
  notes: string[];
  /** how its legate run is built (default: as shipped, shared by the scenarios that use it) */
  variant?: AuthVariant;
  /** measured at the same time as the other scenarios of the group, each on its own legate run */
  group?: string;
  connections?: number;
  /** Host header (default: wrk's own) */
  host?: string;
}): LoadScenario {
  return {
    kind: 'load',
    name: o.name,
    description: o.description,
    compareTo: o.compareTo,
    ...(o.aims ? { aims: o.aims } : {}),
    ...(o.group ? { group: o.group } : {}),
    async setup(ctx): Promise<LoadTarget> {
      const p = await provider(ctx);
      try {
        const g = await gateway(ctx, p.value, o.variant ?? 'shipped');
        return {
          ...(o.connections !== undefined ? { connections: o.connections } : {}),
          port: g.value.gw.ports.http,
          path: `${o.route}/bench`,
          ...(o.host !== undefined ? { host: o.host } : {}),
          request: o.request(p.value, await oneJwt()),
          processes: [
            ...legateProcesses(g.value.gw),
            { label: 'upstream', role: 'upstream', pid: g.value.up.pid },
            providerProcess(p.value),
          ],
          counters: counters(p.value, g.value.gw),
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
const oneJwtRequest = (_p: Provider, jwt: string): LoadRequest => ({ headers: { authorization: `Bearer ${jwt}` } });

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
  aims: { 'auth-unprotected': 0.9 },
  request: oneToken,
  notes: [],
});

export const authOidcSession = authScenario({
  name: 'auth-oidc-session',
  description:
    'GET on a route protected by oidcAuthorizationCode, logged in: a sealed session cookie, opened by the extauth service once and ' +
    'granted to the edge cache (credential-check), which then skips ext_authz and sets the ID token header itself',
  route: '/oidc',
  compareTo: ['auth-unprotected', 'auth-cached-no-edge'],
  aims: { 'auth-unprotected': 0.6 },
  request: () => ({ headers: { cookie: OIDC_COOKIE } }),
  notes: ['the cookie is sealed by the bench with the AuthConfig cipher key (no browser login)'],
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
  variant: 'no-edge',
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

export const authJwt = authScenario({
  name: 'auth-jwt',
  description:
    'GET on a route protected by a JWT AuthConfig (local JWK set, ES256, default cacheTimeout), one valid JWT reused, as shipped: ' +
    'extauth verifies it once and grants the edge cache until min(exp, cacheTimeout), so bearer-check skips ext_authz afterwards',
  route: '/jwt',
  compareTo: ['auth-unprotected', 'auth-jwt-no-edge'],
  aims: { 'auth-unprotected': 0.9 },
  request: oneJwtRequest,
  notes: [],
});

export const authJwtNoEdge = authScenario({
  name: 'auth-jwt-no-edge',
  description:
    'auth-jwt with the edge cache off (Settings bearerCheck.cacheEntries: 0): every request is an ext_authz gRPC Check, answered ' +
    "from extauth's cache of verified JWTs (no signature verification after the first)",
  route: '/jwt',
  compareTo: ['auth-unprotected', 'auth-cached-no-edge'],
  aims: { 'auth-unprotected': 0.4 },
  request: oneJwtRequest,
  notes: [],
  variant: 'no-edge',
});

export const authJwtEnvoy = authScenario({
  name: 'auth-jwt-envoy',
  description:
    "GET on a virtual host with Gloo's jwtStaged (beforeExtAuth, one provider, the same ES256 key as a local JWKS, issuer and " +
    "audience), one valid JWT reused: verified by Envoy's own jwt_authn filter on every request, no ext_authz call",
  route: '',
  host: JWT_ENVOY_HOST,
  compareTo: ['auth-unprotected', 'auth-jwt'],
  aims: { 'auth-unprotected': 0.85 },
  request: oneJwtRequest,
  notes: ['the VirtualService of the jwtStaged host is in the same legate run as auth-unprotected (another domain)'],
});

export const authJwtVerify = authScenario({
  name: 'auth-jwt-verify',
  description:
    'GET on a JWT route with cacheTimeout 0s (edge cache off for it, extauth verification cache off): every request is an ' +
    'ext_authz Check in which extauth verifies the ES256 signature with jose',
  route: '/jwt-verify',
  compareTo: ['auth-unprotected', 'auth-jwt-no-edge'],
  request: oneJwtRequest,
  notes: [],
});

// ---- the edge-cache hit alone: shared table, per-worker table and no check, measured at the same time

const EDGE_GROUP_CONNECTIONS = 12;

export const authEdgeOpen = authScenario({
  name: 'auth-edge-open',
  description:
    "group auth-edge: GET /open (no check: neither bearer-check nor ext_authz runs) on a legate run of its own built as auth-cached's, " +
    'the same Authorization header; measured at the same time as auth-edge-shared and auth-edge-per-worker',
  route: '/open',
  compareTo: [],
  request: oneToken,
  notes: [],
  variant: 'edge-open',
  group: 'auth-edge',
  connections: EDGE_GROUP_CONNECTIONS,
});

export const authEdgeShared = authScenario({
  name: 'auth-edge-shared',
  description: 'group auth-edge: auth-cached (edge cache on, table shared by the workers, as shipped) on a legate run of its own',
  route: '/cached',
  compareTo: ['auth-edge-open', 'auth-edge-per-worker'],
  aims: { 'auth-edge-open': 0.9 },
  request: oneToken,
  notes: [],
  variant: 'edge-shared',
  group: 'auth-edge',
  connections: EDGE_GROUP_CONNECTIONS,
});

export const authEdgePerWorker = authScenario({
  name: 'auth-edge-per-worker',
  description:
    'group auth-edge: auth-cached with Settings bearerCheck.sharedCache: false (a table per Envoy worker) on a legate run of its own',
  route: '/cached',
  compareTo: ['auth-edge-open'],
  request: oneToken,
  notes: [],
  variant: 'edge-per-worker',
  group: 'auth-edge',
  connections: EDGE_GROUP_CONNECTIONS,
});

// ---- a new token on a 2-worker Envoy

/** New tokens measured per mode, and the connections each one is sent over. */
const NEW_TOKENS = 20;
const NEW_TOKEN_CONNECTIONS = 8;
const WORKERS = 2;

/** One GET on a connection of its own (no keep-alive), so the kernel picks the Envoy worker; status and ms. */
function freshConnection(port: number, pathAndQuery: string, token: string): Promise<{ status: number; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port, path: pathAndQuery, headers: { authorization: `Bearer ${token}` }, agent: false, timeout: 10_000 },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0 }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${pathAndQuery} timed out`)));
    req.on('error', reject);
  });
}

async function connectionsByWorker(gw: Legate): Promise<number[]> {
  const r = await send(gw.ports.admin, {
    path: `/stats?filter=${encodeURIComponent(`_${gw.ports.http}\\.worker_\\d+\\.downstream_cx_total$`)}`,
  });
  const out = Array.from({ length: WORKERS }, () => 0);
  for (const m of r.text.matchAll(/worker_(\d+)\.downstream_cx_total: (\d+)/g)) out[Number(m[1])] = (out[Number(m[1])] ?? 0) + Number(m[2]);
  return out;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : 0;
};

/**
 * `legate run` whose Envoy has two workers: `legate run` takes the Envoy binary from LEGATE_ENVOY, so it
 * is pointed (for this start only) at a wrapper that adds --concurrency 2.
 */
async function startTwoWorkerLegate(ctx: BenchContext, name: string, files: Record<string, string>): Promise<Legate> {
  const wrapper = path.join(ctx.workDir, 'envoy-2-workers');
  if (!fs.existsSync(wrapper)) {
    fs.writeFileSync(wrapper, `#!/bin/sh\nexec '${envoyPath(ctx.root)}' "$@" --concurrency ${WORKERS}\n`, { mode: 0o755 });
  }
  const before = process.env['LEGATE_ENVOY'];
  process.env['LEGATE_ENVOY'] = wrapper;
  try {
    return await startLegate(ctx, name, files, ctx.settings.serverCpus);
  } finally {
    if (before === undefined) delete process.env['LEGATE_ENVOY'];
    else process.env['LEGATE_ENVOY'] = before;
  }
}

interface NewTokenRun {
  /** ext_authz checks per token: one request, then the other connections at once */
  afterFirst: number;
  /** ext_authz checks per token: every connection at once */
  allAtOnce: number;
  firstMs: number;
  restMs: number;
  connections: number[];
}

async function newTokenRun(ctx: BenchContext, shared: boolean): Promise<NewTokenRun> {
  const up = await ctx.upstream();
  const jwt = await jwtSigner();
  const files: Record<string, string> = {
    'upstream.yaml': upstreamYaml(up.port),
    'auth.yaml': jwtAuthConfigYaml('bench-jwt', jwt.jwks),
    'vs.yaml': vsWithRoutesYaml('auth', [routeYaml('/open'), routeYaml('/jwt', 'bench-jwt')]),
    ...(shared
      ? {}
      : {
          'settings.yaml': `apiVersion: legate.dev/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec:
  wasmChecks:
    bearerCheck: { sharedCache: false }
`,
        }),
  };
  const gw = await startTwoWorkerLegate(ctx, shared ? 'new-token-shared' : 'new-token-per-worker', files);
  try {
    const dead = (): string | undefined => (gw.proc.alive() ? undefined : `legate run exited:\n${gw.proc.output().slice(-4000)}`);
    await untilServed(gw.ports.http, '/open/bench', undefined, up.body, 30_000, 100, dead);
    const ready = await jwt.sign();
    await waitFor(
      '/jwt/bench to let a valid JWT through',
      async () =>
        (await send(gw.ports.http, { path: '/jwt/bench', headers: { authorization: `Bearer ${ready}` } })).status === 200
          ? true
          : undefined,
      { timeoutMs: 30_000, intervalMs: 100, abortIf: dead },
    );
    const workers = await envoyConcurrency(gw.ports.admin);
    if (workers !== WORKERS) throw new Error(`Envoy runs ${workers} workers, expected ${WORKERS}`);
    const checks = async (): Promise<number> => (await envoyStats(gw.ports.admin, [EXT_AUTHZ_CALLS]))[EXT_AUTHZ_CALLS]!;
    const cx0 = await connectionsByWorker(gw);
    const fan = async (token: string, n: number): Promise<number[]> => {
      const replies = await Promise.all(Array.from({ length: n }, () => freshConnection(gw.ports.http, '/jwt/bench', token)));
      const bad = replies.find((r) => r.status !== 200);
      if (bad) throw new Error(`a new token's request answered ${bad.status}`);
      return replies.map((r) => r.ms);
    };
    const firstMs: number[] = [];
    const restMs: number[] = [];
    let c0 = await checks();
    for (let k = 0; k < NEW_TOKENS; k++) {
      const t = await jwt.sign();
      firstMs.push(...(await fan(t, 1)));
      restMs.push(...(await fan(t, NEW_TOKEN_CONNECTIONS - 1)));
    }
    const afterFirst = ((await checks()) - c0) / NEW_TOKENS;
    c0 = await checks();
    for (let k = 0; k < NEW_TOKENS; k++) await fan(await jwt.sign(), NEW_TOKEN_CONNECTIONS);
    const allAtOnce = ((await checks()) - c0) / NEW_TOKENS;
    const cx1 = await connectionsByWorker(gw);
    return { afterFirst, allAtOnce, firstMs: median(firstMs), restMs: median(restMs), connections: cx1.map((c, i) => c - cx0[i]!) };
  } finally {
    await gw.stop();
  }
}

export const authNewTokenWorkers: FiguresScenario = {
  kind: 'figures',
  name: 'auth-new-token-workers',
  description:
    `ext_authz checks a new token costs on Envoy with ${WORKERS} workers (a JWT route, edge cache on): ${NEW_TOKENS} new tokens, ` +
    `each sent once and then over ${NEW_TOKEN_CONNECTIONS - 1} fresh connections at once, then ${NEW_TOKENS} more each over ` +
    `${NEW_TOKEN_CONNECTIONS} connections at once; bearer-check's table per worker (sharedCache: false) vs shared (the default)`,
  async run(ctx) {
    const perWorker = await newTokenRun(ctx, false);
    const shared = await newTokenRun(ctx, true);
    const figures: Figure[] = [];
    for (const [label, r] of [
      ['per-worker tables', perWorker],
      ['shared table', shared],
    ] as const) {
      figures.push(
        {
          name: `${label}: ext_authz checks per new token, first request then ${NEW_TOKEN_CONNECTIONS - 1} connections`,
          value: Math.round(r.afterFirst * 100) / 100,
          note: `connections per worker ${r.connections.join(' / ')}`,
        },
        {
          name: `${label}: ext_authz checks per new token, ${NEW_TOKEN_CONNECTIONS} connections at once`,
          value: Math.round(r.allAtOnce * 100) / 100,
        },
        {
          name: `${label}: p50 of a new token's first request / of the connections after it`,
          value: `${r.firstMs.toFixed(2)} / ${r.restMs.toFixed(2)}`,
          unit: 'ms',
        },
      );
    }
    return {
      kind: 'figures',
      figures,
      notes: [
        'one ext_authz check per new token is the floor once the first answer is stored; requests of a new token that reach ' +
          'both workers at the same moment each still ask (there is no cross-worker waiting)',
      ],
    };
  },
};

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

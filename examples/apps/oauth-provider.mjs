// Example OAuth2 provider for the access-token demo and the tests: a real authorization server built
// with `oidc-provider` (panva), with the client-credentials grant, token introspection (RFC 7662) and
// revocation (RFC 7009) enabled. Tokens are opaque.
//
//   node examples/apps/oauth-provider.mjs        # listens on 127.0.0.1:$PORT (default 9010)
//
// Browser login (authorization code + PKCE, refresh tokens, an OIDC ID token): the web client below, a
// login form (oidc-provider's dev interactions: any user name, any password; `alice` is the demo user) and
// no consent screen for it (the demo grants its scopes). Its redirect URI: WEB_REDIRECT_URI
// (http://localhost:8080/callback). ID_TOKEN_TTL_SECONDS (300) sets ID and access token lifetimes.
//
// Clients (override the secrets with the env vars in brackets):
//   legate-demo / legate-demo-secret      [DEMO_CLIENT_SECRET]     the demo app: gets tokens with
//                                                                   scopes products:read products:write
//   legate-extauth / legate-extauth-secret [EXTAUTH_CLIENT_SECRET] the resource server (Legate's extauth):
//                                                                   may introspect and revoke any token
//   legate-web / legate-web-secret        [WEB_CLIENT_SECRET]      the browser app (authorization code)
// Other env: HOST (127.0.0.1), TOKEN_TTL_SECONDS (300: lifetime of client-credentials tokens), ISSUER.
//
// Get a token and use it:
//   curl -s -u legate-demo:legate-demo-secret -d grant_type=client_credentials -d scope=products:read \
//     http://127.0.0.1:9010/token
//   curl -s -u legate-extauth:legate-extauth-secret -d token=<access_token> http://127.0.0.1:9010/token/introspection
//
// Importable too: startProvider({ port, clients, ttlSeconds, store }) -> { port, issuer, urls, stop() }.
// Pass the same `store` (createStore()) to a restarted provider to keep its issued tokens valid, the
// way a provider with a database behaves across restarts. The store is in memory: demo use only.
import crypto from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Provider from 'oidc-provider';

export const SCOPES = ['products:read', 'products:write'];

/** The demo's clients. `introspector: true` marks a resource server allowed to introspect any token. */
export const DEFAULT_CLIENTS = [
  {
    clientId: 'legate-demo',
    clientSecret: process.env.DEMO_CLIENT_SECRET || 'legate-demo-secret',
    scope: SCOPES.join(' '),
  },
  {
    clientId: 'legate-extauth',
    clientSecret: process.env.EXTAUTH_CLIENT_SECRET || 'legate-extauth-secret',
    introspector: true,
  },
  webClient(process.env.WEB_REDIRECT_URI ? [process.env.WEB_REDIRECT_URI] : ['http://localhost:8080/callback']),
];

/**
 * The browser app's client (authorization code, refresh tokens) with these redirect URIs, and where RP-initiated
 * logout (the end_session_endpoint, /session/end) may send the browser back to (default: each origin's `/`).
 */
export function webClient(
  redirectUris,
  clientSecret = process.env.WEB_CLIENT_SECRET || 'legate-web-secret',
  clientId = 'legate-web',
  postLogoutRedirectUris = [...new Set(redirectUris.map((u) => `${new URL(u).origin}/`))],
) {
  return { clientId, clientSecret, web: true, redirectUris, postLogoutRedirectUris, scope: 'openid email profile offline_access' };
}

/** The demo's users: any name logs in; these have claims. */
const USERS = { alice: { email: 'alice@example.com', name: 'Alice Example' } };

/** A token store that outlives a provider instance (see startProvider's `store`). */
export function createStore() {
  return new Map();
}

const MAX_STORE_ENTRIES = 200_000;

// oidc-provider's adapter interface over a Map, with expiry. Grant members are tracked so
// revokeByGrantId works; client-credentials tokens have no grant.
function adapterFor(store) {
  const now = () => Date.now();
  const get = (key) => {
    const e = store.get(key);
    if (!e) return undefined;
    if (e.expiresAt <= now()) {
      store.delete(key);
      return undefined;
    }
    return e.value;
  };
  const put = (key, value, expiresIn) => {
    if (store.size >= MAX_STORE_ENTRIES) {
      const t = now();
      for (const [k, e] of store) if (e.expiresAt <= t) store.delete(k);
      while (store.size >= MAX_STORE_ENTRIES) store.delete(store.keys().next().value);
    }
    store.set(key, { value, expiresAt: typeof expiresIn === 'number' ? now() + expiresIn * 1000 : Number.POSITIVE_INFINITY });
  };
  return class MemoryAdapter {
    constructor(name) {
      this.name = name;
    }
    key(id) {
      return `${this.name}:${id}`;
    }
    async upsert(id, payload, expiresIn) {
      const key = this.key(id);
      put(key, payload, expiresIn);
      if (payload.grantId) {
        const gk = `grant:${payload.grantId}`;
        const members = get(gk) ?? [];
        members.push(key);
        put(gk, members, expiresIn);
      }
      if (payload.uid) put(`sessionUid:${payload.uid}`, id, expiresIn);
      if (payload.userCode) put(`userCode:${payload.userCode}`, id, expiresIn);
    }
    async find(id) {
      return get(this.key(id));
    }
    async findByUid(uid) {
      const id = get(`sessionUid:${uid}`);
      return id === undefined ? undefined : this.find(id);
    }
    async findByUserCode(userCode) {
      const id = get(`userCode:${userCode}`);
      return id === undefined ? undefined : this.find(id);
    }
    async consume(id) {
      const v = get(this.key(id));
      if (v) v.consumed = Math.floor(now() / 1000);
    }
    async destroy(id) {
      store.delete(this.key(id));
    }
    async revokeByGrantId(grantId) {
      const gk = `grant:${grantId}`;
      for (const key of get(gk) ?? []) store.delete(key);
      store.delete(gk);
    }
  };
}

export function signingKeys() {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { keys: [{ ...privateKey.export({ format: 'jwk' }), use: 'sig', alg: 'RS256', kid: crypto.randomUUID() }] };
}

const log = (level, msg, fields = {}) =>
  process.stdout.write(`${JSON.stringify({ level, time: new Date().toISOString(), msg, component: 'oauth-provider', ...fields })}\n`);

/**
 * Starts the provider. Options: port (0 = any; default 9010), host (127.0.0.1), clients (see
 * DEFAULT_CLIENTS and webClient()), ttlSeconds (client-credentials token lifetime, default 300),
 * idTokenTtlSeconds (ID and access tokens of the browser login, default 300), issuer (default
 * http://host:port), store (createStore(); default a fresh one), quiet (no log lines).
 */
export async function startProvider(options = {}) {
  const host = options.host ?? '127.0.0.1';
  const clients = options.clients ?? DEFAULT_CLIENTS;
  const ttlSeconds = options.ttlSeconds ?? 300;
  const store = options.store ?? createStore();
  const quiet = options.quiet ?? false;
  const introspectors = new Set(clients.filter((c) => c.introspector).map((c) => c.clientId));
  const webIds = new Set(clients.filter((c) => c.web).map((c) => c.clientId));
  const idTokenTtlSeconds = options.idTokenTtlSeconds ?? 300;

  let handler = (_req, res) => {
    res.writeHead(503).end();
  };
  const server = http.createServer((req, res) => handler(req, res));
  server.keepAliveTimeout = 30_000;
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 9010, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = server.address().port;
  const issuer = options.issuer ?? `http://${host}:${port}`;

  // a resource server may introspect/revoke any token; any other client only its own
  const allowed = async (_ctx, client, token) => introspectors.has(client.clientId) || token.clientId === client.clientId;
  const provider = new Provider(issuer, {
    clients: clients.map((c) => ({
      client_id: c.clientId,
      // a client with `jwks` authenticates by private_key_jwt (RFC 7523): a JWT signed with its key, no secret
      ...(c.jwks ? { jwks: c.jwks } : { client_secret: c.clientSecret }),
      grant_types: c.web ? ['authorization_code', 'refresh_token'] : c.introspector ? [] : ['client_credentials'],
      response_types: c.web ? ['code'] : [],
      redirect_uris: c.web ? c.redirectUris : [],
      ...(c.web ? { post_logout_redirect_uris: c.postLogoutRedirectUris ?? [] } : {}),
      token_endpoint_auth_method: c.jwks ? 'private_key_jwt' : 'client_secret_basic',
      ...(c.scope ? { scope: c.scope } : {}),
    })),
    scopes: ['openid', 'offline_access', 'email', 'profile', ...SCOPES, ...(options.extraScopes ?? [])],
    claims: { openid: ['sub'], email: ['email'], profile: ['name'] },
    // the ID token carries the granted scopes' claims (email, name), as Dex's and Keycloak's do
    conformIdTokenClaims: false,
    findAccount: async (_ctx, id) => ({
      accountId: id,
      claims: async () => ({ sub: id, ...(USERS[id] ?? { email: `${id}@example.com`, name: id }) }),
    }),
    // the demo's web client is first-party: its scopes are granted without a consent screen
    loadExistingGrant: async (ctx) => {
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      if (!webIds.has(ctx.oidc.client.clientId)) return undefined;
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope('openid email profile offline_access');
      grant.addOIDCClaims(['sub', 'email', 'name']);
      await grant.save();
      return grant;
    },
    // refresh tokens for the web client whether or not it asked for offline_access
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    features: {
      // the login form (any user name and password)
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true, allowedPolicy: allowed },
      revocation: { enabled: true, allowedPolicy: allowed },
      // RP-initiated logout (end_session_endpoint /session/end): a page asks "sign out?", then back to the app
      rpInitiatedLogout: { enabled: true },
    },
    ttl: {
      ClientCredentials: ttlSeconds,
      AccessToken: idTokenTtlSeconds,
      IdToken: idTokenTtlSeconds,
      RefreshToken: 86_400,
      Grant: 86_400,
      Session: 86_400,
      Interaction: 600,
    },
    adapter: adapterFor(store),
    jwks: options.jwks ?? signingKeys(),
    cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
  });
  provider.on('server_error', (_ctx, err) => quiet || log('error', 'provider error', { error: err?.message }));
  handler = provider.callback();

  const urls = {
    discovery: `${issuer}/.well-known/openid-configuration`,
    authorization: `${issuer}/auth`,
    token: `${issuer}/token`,
    introspection: `${issuer}/token/introspection`,
    revocation: `${issuer}/token/revocation`,
  };
  if (!quiet)
    log('info', 'oauth provider listening', {
      address: `${host}:${port}`,
      issuer,
      ...urls,
      clients: clients.map((c) => c.clientId),
      ttlSeconds,
    });

  let stopped;
  return {
    port,
    issuer,
    urls,
    store,
    provider,
    /** Closes the listener and every open connection (keep-alive ones too). */
    stop() {
      stopped ??= new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return stopped;
    },
  };
}

const isMain = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const running = await startProvider({
    port: Number(process.env.PORT ?? 9010),
    host: process.env.HOST ?? '127.0.0.1',
    ttlSeconds: Number(process.env.TOKEN_TTL_SECONDS ?? 300),
    idTokenTtlSeconds: Number(process.env.ID_TOKEN_TTL_SECONDS ?? 300),
    ...(process.env.ISSUER ? { issuer: process.env.ISSUER } : {}),
  });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => running.stop().then(() => process.exit(0)));
}

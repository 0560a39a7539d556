// The browser login step's provider-facing options, against a stub provider that checks what it is sent:
// private_key_jwt client authentication (the assertion verified with jose), the JWK set's on-demand refresh
// policy after a key rotation, access token claims to upstream headers, query parameters from filter metadata, and
// a Redis session over TLS with the CA from tlsCertMountPath (a real redis-server with a TLS port).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { exportJWK, jwtVerify, SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CodeFlowStepConfig } from '../../common/auth-config.js';
import { CodeFlowStepSchema } from '../../common/auth-config.js';
import { createLogger } from '../../common/log.js';
import { Authorizer, type EdgeGrant, type Outcome } from '../../extensions/extauth/authorizer.js';
import { PlainRequest } from '../../extensions/extauth/request.js';
import { sealCookieSession } from '../../extensions/extauth/steps/oauth2-code.js';

const KEY = Buffer.alloc(32, 9).toString('base64');
const client = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const CLIENT_PEM = client.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

/** The stub provider: discovery, a JWK set (one signing key, rotatable), a token endpoint. */
interface Stub {
  issuer: string;
  server: http.Server;
  signing: { key: KeyObject; kid: string };
  jwksFetches: number;
  /** the last token request's query */
  tokenQuery: URLSearchParams | undefined;
  /** the last token request's form */
  form: URLSearchParams | undefined;
  /** the last client assertion's verdict */
  assertion: { ok: boolean; payload?: Record<string, unknown>; error?: string } | undefined;
  nonce: string;
}

function newSigning(kid: string): { key: KeyObject; kid: string } {
  return { key: generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey, kid };
}

async function startStub(): Promise<Stub> {
  const stub: Stub = {
    issuer: '',
    server: http.createServer(),
    signing: newSigning('k1'),
    jwksFetches: 0,
    tokenQuery: undefined,
    form: undefined,
    assertion: undefined,
    nonce: '',
  };
  stub.server.on('request', (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      void (async () => {
        const json = (doc: unknown): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
        if (req.url === '/.well-known/openid-configuration')
          return json({
            issuer: stub.issuer,
            authorization_endpoint: `${stub.issuer}/auth`,
            token_endpoint: `${stub.issuer}/token`,
            jwks_uri: `${stub.issuer}/jwks`,
          });
        if (req.url === '/jwks') {
          stub.jwksFetches++;
          const jwk = await exportJWK(stub.signing.key);
          delete jwk.d;
          return json({ keys: [{ ...jwk, kid: stub.signing.kid, alg: 'ES256', use: 'sig' }] });
        }
        if (req.url?.startsWith('/token')) {
          stub.tokenQuery = new URL(req.url, stub.issuer).searchParams;
          const form = new URLSearchParams(body);
          stub.form = form;
          const assertion = form.get('client_assertion');
          if (assertion !== null) {
            try {
              const { payload } = await jwtVerify(assertion, client.publicKey, {
                issuer: 'web',
                subject: 'web',
                audience: `${stub.issuer}/token`,
                algorithms: ['ES256'],
              });
              stub.assertion = { ok: true, payload };
            } catch (err) {
              stub.assertion = { ok: false, error: (err as Error).message };
              return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}');
            }
          }
          const now = Math.floor(Date.now() / 1000);
          const idToken = await new SignJWT({ nonce: stub.nonce, email: 'ada@example.com' })
            .setProtectedHeader({ alg: 'ES256', kid: stub.signing.kid })
            .setIssuer(stub.issuer)
            .setSubject('ada')
            .setAudience('web')
            .setIssuedAt(now)
            .setExpirationTime(now + 3600)
            .sign(stub.signing.key);
          return json({ access_token: 'opaque-at', token_type: 'Bearer', expires_in: 3600, id_token: idToken });
        }
        res.writeHead(404).end();
      })();
    });
  });
  await new Promise<void>((r) => stub.server.listen(0, '127.0.0.1', r));
  stub.issuer = `http://127.0.0.1:${(stub.server.address() as AddressInfo).port}`;
  return stub;
}

function step(issuer: string, extra: Partial<CodeFlowStepConfig> = {}): CodeFlowStepConfig {
  return CodeFlowStepSchema.parse({
    type: 'oauth2-code',
    flow: 'oidc',
    clientId: 'web',
    issuerUrl: issuer,
    appUrl: 'http://app.test/',
    callbackPath: '/callback',
    session: { store: 'cookie', cookieName: '__session', cookieKey: KEY, allowRefreshing: false, cookie: { secure: false } },
    ...extra,
  });
}

let stub: Stub;
let authz: Authorizer;

type Metadata = Record<string, Record<string, unknown>>;

async function check(
  configId: string,
  path: string,
  cookie?: string,
  filterMetadata: Metadata = {},
): Promise<{ outcome: Outcome; grant: EdgeGrant }> {
  const grant: EdgeGrant = { key: '', until: 0 };
  const headers: Record<string, string> = cookie ? { cookie } : {};
  const request = new PlainRequest({ configId, method: 'GET', scheme: 'http', host: 'app.test', path, headers, filterMetadata });
  return { outcome: await authz.checkRequest(request, grant), grant };
}

const headerOf = (grant: EdgeGrant, name: string): string[] =>
  (grant.answer?.denial?.headers ?? []).filter((h) => h.name === name).map((h) => h.value);

/** A whole login without a browser: the redirect, then the callback with its code and state cookie. */
async function login(configId: string, metadata: Metadata = {}): Promise<{ outcome: Outcome; grant: EdgeGrant }> {
  const start = await check(configId, '/orders', undefined, metadata);
  expect(start.outcome).toBe('redirect');
  const location = new URL(headerOf(start.grant, 'location')[0]!);
  stub.nonce = location.searchParams.get('nonce')!;
  const stateCookie = headerOf(start.grant, 'set-cookie')[0]!.split(';')[0]!;
  return check(configId, `/callback?code=c0de&state=${location.searchParams.get('state')}`, stateCookie, metadata);
}

beforeAll(async () => {
  stub = await startStub();
  authz = new Authorizer({ logger: createLogger('extauth', { level: 'error', write: () => undefined }) });
  const problems = authz.apply([
    { name: 'ns.pkjwt', steps: [step(stub.issuer, { privateKeyJwt: { signingKey: CLIENT_PEM, validForMs: 30_000 } })] },
    { name: 'ns.never', steps: [step(stub.issuer, { clientSecret: 's3cret' })] },
    { name: 'ns.always', steps: [step(stub.issuer, { clientSecret: 's3cret', jwksOnDemandRefresh: 'always' })] },
    { name: 'ns.max1', steps: [step(stub.issuer, { clientSecret: 's3cret', jwksOnDemandRefresh: { maxPerPollInterval: 1 } })] },
    {
      name: 'ns.automap',
      steps: [
        step(stub.issuer, {
          clientSecret: 's3cret',
          jwksOnDemandRefresh: 'always', // its own provider (the set cached by ns.never's is stale by now)
          tokenEndpointQueryParams: { fixed: '1' },
          queryParamsFromMetadata: 'solo_authconfig_oidc',
        }),
      ],
    },
    {
      name: 'ns.claims',
      steps: [
        step(stub.issuer, {
          clientSecret: 's3cret',
          accessTokenClaimsToHeaders: [
            { claim: 'sub', header: 'x-user', append: false },
            { claim: 'roles', header: 'x-roles', append: true },
          ],
        }),
      ],
    },
  ]).problems;
  expect(problems).toEqual([]);
});

afterAll(async () => {
  authz?.stop();
  await new Promise<void>((r) => stub?.server.close(() => r()));
});

describe('privateKeyJwt', () => {
  it('authenticates the code exchange with a client_assertion the provider verifies (RFC 7523), no secret', async () => {
    const { outcome, grant } = await login('ns.pkjwt');
    expect(outcome).toBe('redirect');
    expect(headerOf(grant, 'set-cookie').some((c) => c.startsWith('__session='))).toBe(true);
    expect(stub.assertion?.ok, stub.assertion?.error).toBe(true);
    const form = stub.form!;
    expect(form.get('client_id')).toBe('web');
    expect(form.get('client_assertion_type')).toBe('urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
    expect(form.get('client_secret')).toBeNull();
    const p = stub.assertion!.payload!;
    expect(p['exp'] as number).toBe((p['iat'] as number) + 30);
    expect(typeof p['jti']).toBe('string');
  });
});

describe('jwksCacheRefreshPolicy', () => {
  it('never (the default): a key the cached set does not hold is refused until the next poll', async () => {
    // the set cached by the first login (it shares the provider with ns.pkjwt) holds the current key
    expect((await login('ns.never')).outcome).toBe('redirect');
    stub.signing = newSigning('n2');
    const fetches = stub.jwksFetches;
    expect((await login('ns.never')).outcome).toBe('invalid_token');
    expect(stub.jwksFetches).toBe(fetches);
  });

  it('always: an unknown kid refetches the set', async () => {
    stub.signing = newSigning('a1');
    expect((await login('ns.always')).outcome).toBe('redirect');
    stub.signing = newSigning('a2');
    const fetches = stub.jwksFetches;
    expect((await login('ns.always')).outcome).toBe('redirect');
    expect(stub.jwksFetches).toBe(fetches + 1);
  });

  it('maxIdpReqPerPollingInterval: at most that many refetches until the next poll', async () => {
    stub.signing = newSigning('m1');
    expect((await login('ns.max1')).outcome).toBe('redirect');
    stub.signing = newSigning('m2');
    expect((await login('ns.max1')).outcome).toBe('redirect');
    stub.signing = newSigning('m3');
    const fetches = stub.jwksFetches;
    expect((await login('ns.max1')).outcome).toBe('invalid_token');
    expect(stub.jwksFetches).toBe(fetches);
  });
});

describe('accessToken.claimsToHeaders', () => {
  const session = (accessToken: string): string =>
    `__session=${sealCookieSession(KEY, '__session', { accessToken, expiresAt: Date.now() + 600_000 })}`;

  it("maps a JWT access token's claims to upstream headers (a non-string claim as JSON, append kept)", async () => {
    const at = new UnsecuredJWT({ sub: 'ada', roles: ['admin', 'dev'] }).encode();
    const { outcome, grant } = await check('ns.claims', '/orders', session(at));
    expect(outcome).toBe('allow');
    expect(grant.answer?.upstreamHeaders).toEqual([
      { name: 'x-user', value: 'ada' },
      { name: 'x-roles', value: '["admin","dev"]', append: true },
    ]);
  });

  it('maps nothing from an opaque access token', async () => {
    const { outcome, grant } = await check('ns.claims', '/orders', session('opaque-token'));
    expect(outcome).toBe('allow');
    expect(grant.answer?.upstreamHeaders ?? []).toEqual([]);
  });
});

describe('autoMapFromMetadata', () => {
  it("adds the namespace's filter metadata fields to the authorization and token requests' query parameters", async () => {
    const metadata = { solo_authconfig_oidc: { tenant: 'acme', max_age: 300, nested: { x: 1 } }, other: { no: 'x' } };
    const start = await check('ns.automap', '/orders', undefined, metadata);
    const q = new URL(headerOf(start.grant, 'location')[0]!).searchParams;
    expect(q.get('tenant')).toBe('acme');
    expect(q.get('max_age')).toBe('300');
    expect(q.get('nested')).toBeNull();
    expect(q.get('no')).toBeNull();
    expect((await login('ns.automap', metadata)).outcome).toBe('redirect');
    expect(Object.fromEntries(stub.tokenQuery!)).toEqual({ fixed: '1', tenant: 'acme', max_age: '300' });
  });
});

describe('session.redis.options.tlsCertMountPath', () => {
  let dir: string;
  let redis: ChildProcess | undefined;
  let port = 0;

  beforeAll(async () => {
    dir = mkdtempSync(`${tmpdir()}/legate-redis-tls-`);
    const subject = ['-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'];
    const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${dir}/server.key`];
    spawnSync('openssl', ['req', '-x509', ...key, '-days', '1', ...subject, '-out', `${dir}/server.crt`], { stdio: 'ignore' });
    copyFileSync(`${dir}/server.crt`, `${dir}/ca.crt`);
    port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as AddressInfo).port;
        probe.close(() => resolve(p));
      });
    });
    const args = ['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
    const tls = ['--tls-cert-file', `${dir}/server.crt`, '--tls-key-file', `${dir}/server.key`, '--tls-auth-clients', 'no'];
    redis = spawn('redis-server', [...args, ...tls, '--dir', dir], { stdio: 'ignore' });
    for (let i = 0; i < 100; i++) {
      const up = await new Promise<boolean>((resolve) => {
        const c = net.connect(port, '127.0.0.1', () => resolve(c.destroy() !== undefined));
        c.on('error', () => resolve(false));
      });
      if (up) break;
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  afterAll(() => {
    redis?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  const redisStep = (tlsCertDir?: string): CodeFlowStepConfig =>
    step(stub.issuer, {
      clientSecret: 's3cret',
      jwksOnDemandRefresh: 'always',
      session: {
        store: 'redis',
        cookieName: 'sid',
        redis: { host: '127.0.0.1', port, db: 0, tls: true, keyPrefix: 't:', ...(tlsCertDir ? { tlsCertDir } : {}) },
        allowRefreshing: false,
        preExpiryBufferMs: 2000,
        failOnFetchFailure: true,
        cookie: { maxAgeSeconds: 60, secure: false, httpOnly: true, path: '/', sameSite: 'lax' },
      },
    });

  it("stores the session in Redis over TLS, the server's certificate verified with the mounted ca.crt", async () => {
    expect(authz.apply([{ name: 'ns.redis-tls', steps: [redisStep(dir)] }]).problems).toEqual([]);
    // the client connects in the background (no offline queue): until then a login is unavailable
    for (let i = 0; i < 50 && (await check('ns.redis-tls', '/orders')).outcome !== 'redirect'; i++)
      await new Promise((r) => setTimeout(r, 100));
    const { outcome, grant } = await login('ns.redis-tls');
    expect(outcome).toBe('redirect');
    expect(headerOf(grant, 'set-cookie').some((c) => /^sid=[A-Za-z0-9_-]{43};/.test(c))).toBe(true);
  });

  it('without the CA the server is not trusted: the login is unavailable, not a session', async () => {
    expect(authz.apply([{ name: 'ns.redis-untrusted', steps: [redisStep()] }]).problems).toEqual([]);
    // as long as the trusted one above took to connect, and more
    for (let i = 0; i < 10; i++) {
      expect((await check('ns.redis-untrusted', '/orders')).outcome).toBe('unavailable');
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  it("a mount path without a readable ca.crt is the config's error", () => {
    const { problems } = authz.apply([{ name: 'ns.redis-nodir', steps: [redisStep(`${dir}/missing`)] }]);
    expect(problems.join()).toMatch(/ns\.redis-nodir: session\.redis tlsCertMountPath: cannot read .*missing\/ca\.crt/);
  });
});

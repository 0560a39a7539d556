// The JWT access-token step against keys generated here and a JWK set served on loopback: allowed
// tokens, scopes from `scope` and `scp`, `exp`/`nbf` with clock skew, `iss`/`aud`, the algorithm
// allow-list (`none`, HS with the public key), unknown `kid` (one rate-limited refetch, rotation),
// the JWKS endpoint down / slow / answering garbage, local keys (PEM, JWK set), config validation by
// the shared schema, and that no log line carries a token.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, UnsecuredJWT, type CryptoKey, type JWK } from 'jose';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AuthConfigConfig, JwtStepConfig } from '../../common/contract.js';
import { createLogger } from '../../common/log.js';
import { Authorizer, type EdgeGrant, type Outcome } from '../../extensions/extauth/authorizer.js';

interface KeyPair {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
  publicPem: string;
}

async function keyPair(kid: string, alg: string): Promise<KeyPair> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { kid, alg, privateKey, publicJwk: { ...jwk, kid, alg, use: 'sig' }, publicPem: await exportSPKI(publicKey) };
}

const ISSUER = 'https://idp.test';
const AUDIENCE = 'api.test';
const now = () => Math.floor(Date.now() / 1000);

/** A signed access token; `claims` override the defaults (null removes one). */
async function sign(key: KeyPair, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
  const body: Record<string, unknown> = {
    iss: ISSUER,
    aud: AUDIENCE,
    sub: 'user-1',
    iat: now(),
    exp: now() + 300,
    scope: 'products:read',
    ...claims,
  };
  for (const [k, v] of Object.entries(body)) if (v === null) delete body[k];
  const t = await new SignJWT(body).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt', ...header }).sign(key.privateKey);
  tokens.add(t);
  return t;
}

// ---- the JWKS endpoint

type Mode = 'ok' | 'down' | 'garbage' | 'no-keys' | 'hang';
let mode: Mode = 'ok';
let served: JWK[] = [];
let fetches = 0;
let jwksServer: http.Server;
let jwksUrl: string;

const lines: string[] = [];
const tokens = new Set<string>();
let rs: KeyPair;
let es: KeyPair;
let ed: KeyPair;
let rotated: KeyPair;
let stranger: KeyPair;

beforeAll(async () => {
  [rs, es, ed, rotated] = await Promise.all([
    keyPair('rs-1', 'RS256'),
    keyPair('es-1', 'ES256'),
    keyPair('ed-1', 'EdDSA'),
    keyPair('rs-2', 'PS256'),
  ]);
  stranger = await keyPair('rs-1', 'RS256'); // same kid as rs, another key
  jwksServer = http.createServer((_req, res) => {
    fetches++;
    if (mode === 'hang') return; // never answers
    if (mode === 'down') return void res.writeHead(503).end('down');
    res.writeHead(200, { 'content-type': 'application/json' });
    if (mode === 'garbage') return void res.end('<html>not json');
    if (mode === 'no-keys') return void res.end(JSON.stringify({ keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }));
    res.end(JSON.stringify({ keys: served }));
  });
  await new Promise<void>((r) => jwksServer.listen(0, '127.0.0.1', r));
  jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks`;
});

afterAll(async () => {
  jwksServer.closeAllConnections();
  await new Promise<void>((r) => jwksServer.close(() => r()));
  const all = lines.join('\n');
  // every value any log line carries (a short malformed token such as 'abc' can appear inside a hash by chance)
  const values = lines.flatMap((l) => Object.values(JSON.parse(l) as Record<string, unknown>).map(String));
  for (const t of tokens) {
    expect(values).not.toContain(t);
    if (t.length >= 16) expect(all).not.toContain(t);
    const signature = t.split('.')[2] ?? '';
    if (signature.length > 16) expect(all).not.toContain(signature); // nor its signature
  }
});

// long enough that a few checks (RSA signing included) fit inside it on a loaded machine
const COOLDOWN_MS = 1000;

let authz: Authorizer;
beforeEach(() => {
  mode = 'ok';
  served = [rs.publicJwk, es.publicJwk, ed.publicJwk];
  fetches = 0;
  authz = new Authorizer({
    logger: createLogger('extauth', { level: 'debug', write: (l) => lines.push(l) }),
    jwksTimeoutMs: 300,
    jwksCooldownMs: COOLDOWN_MS,
  });
});
afterEach(() => authz.stop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pastCooldown = (): Promise<unknown> => sleep(COOLDOWN_MS + 50);
const decide = (configId: string, t: string | undefined): Promise<Outcome> =>
  Promise.resolve(authz.check(configId, t === undefined ? undefined : `Bearer ${t}`));

function remote(name: string, extra: Partial<JwtStepConfig> = {}): AuthConfigConfig {
  return {
    name,
    version: 'v1',
    steps: [
      {
        type: 'oauth2-jwt',
        remoteJwks: { url: jwksUrl, refreshIntervalMs: 60_000 },
        issuer: ISSUER,
        audiences: [AUDIENCE],
        requiredScopes: [],
        cacheTimeoutMs: 0,
        ...(extra as object),
      },
    ],
  };
}

/** Applies configs and waits for the JWK set fetched at apply time. */
async function load(...configs: AuthConfigConfig[]): Promise<void> {
  expect(authz.apply(configs).problems).toEqual([]);
  await eventually(() => expect(authz.stats().jwksFetches).toBeGreaterThan(0));
  await sleep(50);
}

async function eventually(check: () => void, ms = 2000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      check();
      return;
    } catch (err) {
      if (Date.now() > until) throw err;
      await sleep(20);
    }
  }
}

const denials = () => lines.filter((l) => l.includes('"request denied"')).map((l) => JSON.parse(l) as Record<string, unknown>);

describe('JWT step: good tokens', () => {
  it('allows RS256, ES256 and EdDSA tokens; the JWK set is fetched once, not per request', async () => {
    await load(remote('ns.jwt'));
    expect(fetches).toBe(1);
    for (const key of [rs, es, ed]) expect(await decide('ns.jwt', await sign(key))).toBe('allow');
    for (let i = 0; i < 20; i++) expect(await decide('ns.jwt', await sign(rs))).toBe('allow');
    expect(fetches).toBe(1);
    expect(authz.stats()).toMatchObject({ jwksFetches: 1, jwksFetchErrors: 0, introspections: 0 });
  });

  it('checks required scopes from `scope` (space-separated) or `scp` (array)', async () => {
    await load(remote('ns.jwt', { requiredScopes: ['products:read', 'products:write'] }));
    expect(await decide('ns.jwt', await sign(rs, { scope: 'products:read products:write' }))).toBe('allow');
    expect(await decide('ns.jwt', await sign(rs, { scope: null, scp: ['products:write', 'products:read'] }))).toBe('allow');
    expect(await decide('ns.jwt', await sign(rs, { scope: 'products:read' }))).toBe('insufficient_scope');
    expect(await decide('ns.jwt', await sign(rs, { scope: null, scp: ['products:read products:write'] }))).toBe('insufficient_scope');
    expect(await decide('ns.jwt', await sign(rs, { scope: 'products:readers products:write' }))).toBe('insufficient_scope');
  });

  it('tolerates a small clock skew on exp and nbf', async () => {
    await load(remote('ns.jwt'));
    expect(await decide('ns.jwt', await sign(rs, { exp: now() - 10 }))).toBe('allow');
    expect(await decide('ns.jwt', await sign(rs, { nbf: now() + 10 }))).toBe('allow');
  });

  it('any of the audiences will do; no issuer or audience configured checks none', async () => {
    await load(remote('ns.aud', { audiences: ['other', AUDIENCE] }), remote('ns.open', { issuer: undefined, audiences: [] }));
    expect(await decide('ns.aud', await sign(rs, { aud: [AUDIENCE, 'x'] }))).toBe('allow');
    expect(await decide('ns.open', await sign(rs, { iss: 'https://elsewhere', aud: 'elsewhere' }))).toBe('allow');
  });

  it('offers nothing to the edge cache with cacheTimeoutMs 0', async () => {
    await load(remote('ns.jwt'));
    const grant: EdgeGrant = { key: '', until: 0 };
    expect(await Promise.resolve(authz.check('ns.jwt', `Bearer ${await sign(rs)}`, false, grant))).toBe('allow');
    expect(grant).toEqual({ key: '', until: 0 });
  });
});

describe('JWT step: edge grant and the cache of verified tokens', () => {
  const check = (configId: string, t: string, grant?: EdgeGrant) => authz.check(configId, `Bearer ${t}`, false, grant);

  it('grants the edge cache until exp, never past cacheTimeoutMs, and only for allows', async () => {
    await load(remote('ns.jwt', { cacheTimeoutMs: 60_000, requiredScopes: ['products:read'] }));
    const long: EdgeGrant = { key: '', until: 0 };
    const t0 = Date.now();
    expect(await check('ns.jwt', await sign(rs, { exp: now() + 300 }), long)).toBe('allow');
    expect(long.key).toBe('ns.jwt@v1');
    expect(long.until).toBeGreaterThanOrEqual(t0 + 60_000);
    expect(long.until).toBeLessThanOrEqual(Date.now() + 60_000);
    const exp = now() + 20;
    const short: EdgeGrant = { key: '', until: 0 };
    expect(await check('ns.jwt', await sign(rs, { exp }), short)).toBe('allow');
    expect(short).toEqual({ key: 'ns.jwt@v1', until: exp * 1000 });
    // past exp but within the clock skew: allowed, never cached
    const late: EdgeGrant = { key: '', until: 0 };
    expect(await check('ns.jwt', await sign(rs, { exp: now() - 5 }), late)).toBe('allow');
    expect(late.until).toBe(0);
    const scoped: EdgeGrant = { key: '', until: 0 };
    expect(await check('ns.jwt', await sign(rs, { scope: 'other' }), scoped)).toBe('insufficient_scope');
    expect(scoped.until).toBe(0);
  });

  it('verifies a token once, then answers from the cache synchronously with the same grant', async () => {
    await load(remote('ns.jwt', { cacheTimeoutMs: 60_000, requiredScopes: ['products:read'] }));
    const t = await sign(rs);
    const first: EdgeGrant = { key: '', until: 0 };
    const pending = check('ns.jwt', t, first);
    expect(typeof pending).toBe('object'); // a Promise: the signature is verified
    expect(await pending).toBe('allow');
    const again: EdgeGrant = { key: '', until: 0 };
    expect(check('ns.jwt', t, again)).toBe('allow'); // synchronous
    expect(again).toEqual(first);
    expect(authz.stats()).toMatchObject({ jwtVerifications: 1, jwtCacheHits: 1, jwtCacheEntries: 1 });
    // what the cache keeps are verified claims: scopes are still judged per step
    const scoped = await sign(rs, { scope: 'other' });
    expect(await check('ns.jwt', scoped)).toBe('insufficient_scope');
    expect(check('ns.jwt', scoped)).toBe('insufficient_scope');
    // a token that fails verification is never kept
    const [h, p] = t.split('.');
    const forged = `${h}.${p}.${Buffer.alloc(64, 1).toString('base64url')}`;
    tokens.add(forged);
    expect(await check('ns.jwt', forged)).toBe('invalid_token');
    expect(await check('ns.jwt', forged)).toBe('invalid_token');
    expect(authz.stats().jwtCacheEntries).toBe(2);
  });

  it('keeps nothing with cacheTimeoutMs 0 or jwtCacheMaxEntries 0', async () => {
    await load(remote('ns.nocache'));
    const t = await sign(rs);
    expect(await check('ns.nocache', t)).toBe('allow');
    expect(typeof check('ns.nocache', t)).toBe('object');
    const off = new Authorizer({ logger: createLogger('extauth', { level: 'error', write: () => {} }), jwtCacheMaxEntries: 0 });
    try {
      expect(off.apply([remote('ns.jwt', { cacheTimeoutMs: 60_000 })]).problems).toEqual([]);
      await eventually(() => expect(off.stats().jwksFetches).toBeGreaterThan(0));
      await sleep(50);
      expect(await off.check('ns.jwt', `Bearer ${t}`)).toBe('allow');
      expect(typeof off.check('ns.jwt', `Bearer ${t}`)).toBe('object');
      expect(off.stats()).toMatchObject({ jwtVerifications: 2, jwtCacheHits: 0, jwtCacheEntries: 0 });
    } finally {
      off.stop();
    }
  });

  it('is bounded by jwtCacheMaxEntries', async () => {
    const small = new Authorizer({ logger: createLogger('extauth', { level: 'error', write: () => {} }), jwtCacheMaxEntries: 3 });
    try {
      expect(small.apply([remote('ns.jwt', { cacheTimeoutMs: 60_000 })]).problems).toEqual([]);
      await eventually(() => expect(small.stats().jwksFetches).toBeGreaterThan(0));
      await sleep(50);
      for (let i = 0; i < 10; i++) expect(await small.check('ns.jwt', `Bearer ${await sign(rs, { jti: `t${i}` })}`)).toBe('allow');
      expect(small.stats().jwtCacheEntries).toBe(3);
    } finally {
      small.stop();
    }
  });

  it('forgets a token at its exp', async () => {
    await load(remote('ns.jwt', { cacheTimeoutMs: 60_000 }));
    // two seconds ahead: with one, a check late in the current second (a loaded machine) already saw it expire
    const exp = now() + 2;
    const t = await sign(rs, { exp });
    expect(await check('ns.jwt', t)).toBe('allow');
    expect(check('ns.jwt', t)).toBe('allow');
    await sleep(Math.max(0, (exp + 1) * 1000 - Date.now()) + 100);
    // verified again (and allowed within the clock skew, but no longer cached)
    const later = check('ns.jwt', t);
    expect(typeof later).toBe('object');
    expect(await later).toBe('allow');
    expect(authz.stats().jwtCacheEntries).toBe(0);
  });

  it('verifies again once the JWK set changed: a removed key stops its cached tokens', async () => {
    await load(remote('ns.jwt', { cacheTimeoutMs: 60_000 }));
    const t = await sign(rs);
    expect(await check('ns.jwt', t)).toBe('allow');
    expect(check('ns.jwt', t)).toBe('allow');
    // the provider drops rs-1 and publishes a new key; a token with the new kid makes the set refetch
    served = [rotated.publicJwk, es.publicJwk, ed.publicJwk];
    await pastCooldown(); // past the kid-miss cooldown
    expect(await check('ns.jwt', await sign(rotated))).toBe('allow');
    const after = check('ns.jwt', t);
    expect(typeof after).toBe('object');
    expect(await after).toBe('invalid_token');
  });
});

describe('JWT step: bad tokens are invalid_token, with the reason logged', () => {
  it('denies expired, not yet valid, wrong issuer, wrong audience', async () => {
    await load(remote('ns.jwt'));
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ exp: now() - 120 }, 'jwt expired'],
      [{ nbf: now() + 120 }, 'jwt claim nbf check_failed'],
      [{ iss: 'https://evil.test' }, 'jwt claim iss check_failed'],
      [{ aud: 'other-api' }, 'jwt claim aud check_failed'],
    ];
    for (const [claims, detail] of cases) {
      lines.length = 0;
      authz.apply([]);
      await load(remote(`ns.${detail.replace(/ /g, '-')}`));
      expect(await decide(`ns.${detail.replace(/ /g, '-')}`, await sign(rs, claims)), detail).toBe('invalid_token');
      expect(denials()[0]).toMatchObject({ reason: 'invalid_token', detail });
    }
  });

  it('allows a token without exp, as Gloo (exp is checked when present)', async () => {
    await load(remote('ns.jwt'));
    expect(await decide('ns.jwt', await sign(rs, { exp: null }))).toBe('allow');
  });

  it('dynamicMetadataFromClaims: the claims as dynamic metadata, and no edge grant (it would skip them)', async () => {
    await load(remote('ns.meta', { dynamicMetadataFromClaims: { issuer: 'iss', who: 'sub', nothing: 'absent' }, cacheTimeoutMs: 60_000 }));
    const token = await sign(rs);
    for (let i = 0; i < 2; i++) {
      // the second answer comes from the step's cache of verified tokens
      const grant: EdgeGrant = { key: '', until: 0 };
      expect(await authz.check('ns.meta', `Bearer ${token}`, false, grant)).toBe('allow');
      expect(grant.answer?.metadata).toEqual({ issuer: ISSUER, who: 'user-1' });
      expect(grant.until).toBe(0);
    }
  });

  it('denies what is no JWT at all without any fetch', async () => {
    await load(remote('ns.jwt'));
    const before = fetches;
    for (const t of ['abc', 'a.b', 'a.b.c.d', '.b.c', 'a.b.c', 'eyJhbGciOiJSUzI1NiJ9.e30.c2ln']) {
      tokens.add(t);
      expect(await decide('ns.jwt', t), t).toBe('invalid_token');
    }
    expect(fetches).toBe(before);
    expect(await decide('ns.jwt', undefined)).toBe('missing_token');
  });

  it('refuses alg none and an HMAC made with the public key (algorithm confusion)', async () => {
    await load(remote('ns.jwt'), remote('ns.none'));
    const none = new UnsecuredJWT({ iss: ISSUER, aud: AUDIENCE, exp: now() + 300 }).encode();
    tokens.add(none);
    expect(await decide('ns.none', none)).toBe('invalid_token');
    const hmacKey = new TextEncoder().encode(rs.publicPem);
    const hs = await new SignJWT({ iss: ISSUER, aud: AUDIENCE, exp: now() + 300 })
      .setProtectedHeader({ alg: 'HS256', kid: rs.kid })
      .sign(hmacKey);
    tokens.add(hs);
    lines.length = 0;
    expect(await decide('ns.jwt', hs)).toBe('invalid_token');
    expect(denials()[0]).toMatchObject({ detail: 'jwt alg not allowed' });
    expect(denials()).toHaveLength(1);
  });

  it('refuses a token signed by another key under a known kid, and a tampered payload', async () => {
    await load(remote('ns.jwt'));
    expect(await decide('ns.jwt', await sign(stranger))).toBe('invalid_token');
    const good = await sign(rs, { scope: 'products:read' });
    const [h, , s] = good.split('.');
    const claims = { iss: ISSUER, aud: AUDIENCE, exp: now() + 300, scope: 'admin' };
    const forged = `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
    tokens.add(forged);
    expect(await decide('ns.jwt', forged)).toBe('invalid_token');
  });
});

describe('JWT step: unknown kid and key rotation', () => {
  it('an unknown kid refetches once; more unknown kids within the cooldown do not fetch', async () => {
    await load(remote('ns.jwt'));
    await pastCooldown(); // past the cooldown of the fetch at apply time
    const unknown = await keyPair('nobody', 'RS256');
    const base = fetches;
    expect(await decide('ns.jwt', await sign(unknown))).toBe('invalid_token');
    expect(fetches).toBe(base + 1);
    for (let i = 0; i < 10; i++) expect(await decide('ns.jwt', await sign(unknown))).toBe('invalid_token');
    expect(fetches).toBe(base + 1);
    expect(denials().at(-1)).toMatchObject({ detail: 'no key for the jwt kid' });
  });

  it('picks up a rotated key on the first token that uses it', async () => {
    await load(remote('ns.jwt'));
    await pastCooldown();
    served = [rotated.publicJwk]; // the provider rotates: rs-1 retired, rs-2 (PS256) published
    expect(await decide('ns.jwt', await sign(rotated))).toBe('allow');
    expect(fetches).toBe(2);
    expect(await decide('ns.jwt', await sign(rs))).toBe('invalid_token'); // retired (within cooldown: no fetch)
    expect(fetches).toBe(2);
  });

  it('concurrent checks with a new kid share one fetch', async () => {
    await load(remote('ns.jwt'));
    await pastCooldown();
    served = [rs.publicJwk, rotated.publicJwk];
    const ts = await Promise.all(Array.from({ length: 10 }, () => sign(rotated)));
    expect(await Promise.all(ts.map((t) => decide('ns.jwt', t)))).toEqual(Array(10).fill('allow'));
    expect(fetches).toBe(2);
  });
});

describe('JWT step: the JWKS endpoint failing', () => {
  for (const bad of ['down', 'garbage', 'no-keys', 'hang'] as const) {
    it(`${bad} before any set was loaded: unavailable, one error line, at most one fetch per cooldown`, async () => {
      mode = bad;
      lines.length = 0;
      authz.apply([remote('ns.jwt')]);
      await eventually(() => expect(authz.stats().jwksFetchErrors).toBe(1), 1500);
      for (let i = 0; i < 5; i++) expect(await decide('ns.jwt', await sign(rs))).toBe('unavailable');
      expect(fetches).toBe(1);
      const errors = lines.filter((l) => l.includes('JWKS fetch failed'));
      expect(errors).toHaveLength(1);
      expect(denials()[0]).toMatchObject({ reason: 'unavailable', detail: 'JWKS unavailable' });
      // recovers by itself: the next check after the cooldown fetches again
      mode = 'ok';
      await pastCooldown();
      expect(await decide('ns.jwt', await sign(rs))).toBe('allow');
      expect(fetches).toBe(2);
    });
  }

  it('down after a set was loaded: the last good set keeps verifying', async () => {
    await load(remote('ns.jwt'));
    mode = 'down';
    await pastCooldown();
    const unknown = await keyPair('new', 'ES256');
    expect(await decide('ns.jwt', await sign(unknown))).toBe('unavailable'); // a kid miss we could not refetch
    expect(await decide('ns.jwt', await sign(rs))).toBe('allow');
  });

  it('an endpoint that refuses connections', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    authz.apply([remote('ns.jwt', { remoteJwks: { url: `http://127.0.0.1:${port}/jwks`, refreshIntervalMs: 60_000 } })]);
    await eventually(() => expect(authz.stats().jwksFetchErrors).toBe(1));
    expect(await decide('ns.jwt', await sign(rs))).toBe('unavailable');
    expect(lines.some((l) => l.includes('JWKS endpoint unreachable: ECONNREFUSED'))).toBe(true);
  });
});

describe('JWT step: local keys and config validation', () => {
  it('verifies against an inline PEM public key and an inline JWK set, without any fetch', async () => {
    const pem: AuthConfigConfig = {
      name: 'ns.pem',
      steps: [{ type: 'oauth2-jwt', localJwks: { inlineString: es.publicPem }, audiences: [], requiredScopes: [], cacheTimeoutMs: 0 }],
    };
    const set: AuthConfigConfig = {
      name: 'ns.set',
      steps: [
        {
          type: 'oauth2-jwt',
          localJwks: { inlineString: JSON.stringify({ keys: [rs.publicJwk] }) },
          audiences: [],
          requiredScopes: [],
          cacheTimeoutMs: 0,
        },
      ],
    };
    expect(authz.apply([pem, set]).problems).toEqual([]);
    expect(await decide('ns.pem', await sign(es))).toBe('allow');
    expect(await decide('ns.pem', await sign(rs))).toBe('invalid_token'); // an RSA token against an EC key
    expect(await decide('ns.set', await sign(rs))).toBe('allow');
    expect(await decide('ns.set', await sign(ed))).toBe('invalid_token');
    expect(fetches).toBe(0);
    expect(authz.summaries()['ns.pem']!.steps[0]).toEqual({
      type: 'oauth2-jwt',
      localJwks: true,
      audiences: [],
      requiredScopes: [],
      cacheTimeoutMs: 0,
    });
  });

  it('refuses bad JWT steps with reasons from the shared schema', () => {
    const step = (s: Record<string, unknown>) => ({ name: `ns.${Object.keys(s).join('-')}`, steps: [{ type: 'oauth2-jwt', ...s }] });
    const { problems } = authz.apply([
      step({}),
      step({ remoteJwks: { url: 'ftp://x/jwks', refreshIntervalMs: 60_000 } }),
      step({ localJwks: { inlineString: '{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}' } }),
      step({ localJwks: { inlineString: 'nope' }, remoteJwks: { url: jwksUrl, refreshIntervalMs: 60_000 } }),
    ]);
    expect(problems).toHaveLength(4);
    expect(problems.join('\n')).toContain('set exactly one of remoteJwks, localJwks');
    expect(problems.join('\n')).toContain('remoteJwks.url: must be an http or https URL');
    expect(problems.join('\n')).toContain('symmetric (oct) key');
    expect(authz.summaries()).toEqual({});
    expect(fetches).toBe(0);
  });

  it('a removed config stops its endpoint being fetched; configs sharing an endpoint share one set', async () => {
    await load(remote('ns.a'), remote('ns.b', { requiredScopes: ['products:read'] }));
    expect(fetches).toBe(1);
    expect(await decide('ns.b', await sign(rs))).toBe('allow');
    authz.apply([]);
    expect(authz.stats().jwksFetches).toBe(0);
  });
});

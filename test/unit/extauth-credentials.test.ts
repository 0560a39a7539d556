// The credential checks of the basicAuth, hmacAuth, ldap and opaAuth steps: apr1 and sha1 hashes against
// htpasswd's and Gloo's documented values, HMAC signatures, the LDAP client against a real slapd, and Rego
// compiled by the real opa to wasm.
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BasicAuthStepSchema, LdapStepSchema } from '../../common/auth-config.js';
import { createLogger } from '../../common/log.js';
import { Authorizer, type EdgeGrant } from '../../extensions/extauth/authorizer.js';
import { PlainRequest } from '../../extensions/extauth/request.js';
import { verifyHmac } from '../../extensions/extauth/hmac.js';
import { LDAP_CACHE_MS, LdapAuthenticator, LdapPool, escapeDnValue } from '../../extensions/extauth/ldap.js';
import { OpaWasmPolicy, opaInput, opaInputJson } from '../../extensions/extauth/opa.js';
import { apr1Hash, parseBasic, sha1Hash, verifyPassword } from '../../extensions/extauth/passwords.js';
import { GLOO_GUIDE_LDIF, SLAPD, startLdap, type LdapServer } from '../support/ldap.js';

describe('basic auth hashes', () => {
  it('apr1 matches htpasswd -m (Gloo guide: user/password, salt TYiryv0/)', () => {
    expect(apr1Hash('password', 'TYiryv0/')).toBe('8BvzLUO9IfGPGGsPnAgSu1');
    expect(apr1Hash('', 'ab')).toBe('S8K6Sgp3W8c9Jb6LxgywZ.');
    // the salt is cut at 8 characters, as Apache does
    expect(apr1Hash('a much longer password here!', 'xx12345678')).toBe('ksOzA5I6DKtp3PLJt9xuk/');
  });
  it("sha1 is Gloo's hex sha1(password + salt), compared case-insensitively", () => {
    expect(sha1Hash('password', 'TYiryv0/')).toBe('010eb058a59f4ac5ba05639b0263cf91b4345fd6');
    expect(verifyPassword('sha1', 'password', 'TYiryv0/', '010EB058A59F4AC5BA05639B0263CF91B4345FD6')).toBe(true);
    expect(verifyPassword('sha1', 'passwore', 'TYiryv0/', '010eb058a59f4ac5ba05639b0263cf91b4345fd6')).toBe(false);
    expect(verifyPassword('apr', 'password', 'TYiryv0/', '8BvzLUO9IfGPGGsPnAgSu1')).toBe(true);
    expect(verifyPassword('apr', 'Password', 'TYiryv0/', '8BvzLUO9IfGPGGsPnAgSu1')).toBe(false);
  });
  it('parses Basic credentials (scheme in any case, password may hold colons)', () => {
    expect(parseBasic('basic dXNlcjpwYXNzd29yZA==')).toEqual({ user: 'user', password: 'password' });
    expect(parseBasic(`Basic ${Buffer.from('a:b:c').toString('base64')}`)).toEqual({ user: 'a', password: 'b:c' });
    expect(parseBasic('Bearer abc')).toBeUndefined();
    expect(parseBasic(`Basic ${Buffer.from(':x').toString('base64')}`)).toBeUndefined();
    expect(parseBasic('Basic !!!')).toBeUndefined();
  });
});

describe('basicAuth edge grants', () => {
  it('grants an allow on Authorization as long as the verified credential is remembered; never one on Proxy-Authorization', async () => {
    const authz = new Authorizer({ logger: createLogger('extauth', { level: 'error', write: () => undefined }) });
    try {
      const users = { user: { salt: 'TYiryv0/', hashedPassword: '8BvzLUO9IfGPGGsPnAgSu1' } };
      const step = BasicAuthStepSchema.parse({ type: 'basic-auth', encryption: 'apr', users });
      expect(authz.apply([{ name: 'ns.basic', version: 'v1', steps: [step] }]).problems).toEqual([]);
      const check = async (headers: Record<string, string>): Promise<EdgeGrant & { outcome: unknown }> => {
        const grant: EdgeGrant = { key: '', until: 0 };
        const { authorization, ...rest } = headers;
        const parts = { configId: 'ns.basic', headers: rest, ...(authorization !== undefined ? { authorization } : {}) };
        const outcome = await authz.checkRequest(new PlainRequest(parts), grant);
        return { ...grant, outcome };
      };
      const good = `Basic ${Buffer.from('user:password').toString('base64')}`;
      const t0 = Date.now();
      const first = await check({ authorization: good });
      expect(first).toMatchObject({ outcome: 'allow', key: 'ns.basic@v1', credential: 'authorization' });
      expect(first.until).toBeGreaterThanOrEqual(t0 + 60_000);
      expect((await check({ authorization: good })).until).toBe(first.until);
      const proxied = await check({ 'proxy-authorization': good });
      expect(proxied.outcome).toBe('allow');
      expect(proxied.until).toBe(0);
      const wrong = await check({ authorization: `Basic ${Buffer.from('user:nope').toString('base64')}` });
      expect(wrong.outcome).toBe('invalid_credentials');
      expect(wrong.until).toBe(0);
    } finally {
      authz.stop();
    }
  });
});

describe('hmac signatures', () => {
  const creds = { alice: 'alice-secret' };
  const date = new Date().toUTCString();
  const req = { method: 'GET', path: '/api/pets?x=1', headers: { date, 'x-extra': 'v' } };
  const sign = (text: string, secret = 'alice-secret', alg = 'sha1') => createHmac(alg, secret).update(text).digest('base64');
  const text = `date: ${date}\nget /api/pets?x=1`;
  it('accepts a correct hmac-sha1 signature over date and @request-target', () => {
    const auth = `hmac username="alice", algorithm="hmac-sha1", headers="date @request-target", signature="${sign(text)}"`;
    expect(verifyHmac(auth, req, creds)).toEqual({ verdict: 'ok', user: 'alice' });
  });
  it('refuses a wrong secret, an unknown user, a stale or unsigned date, a missing header', () => {
    const auth = (s: string, u = 'alice', h = 'date @request-target') =>
      `hmac username="${u}", algorithm="hmac-sha1", headers="${h}", signature="${s}"`;
    expect(verifyHmac(auth(sign(text, 'other')), req, creds).verdict).toBe('bad_signature');
    expect(verifyHmac(auth(sign(text), 'bob'), req, creds).verdict).toBe('unknown_user');
    expect(verifyHmac(auth(sign(text)), req, creds, Date.now() + 600_000).verdict).toBe('stale');
    expect(verifyHmac(auth(sign('get /api/pets?x=1'), 'alice', '@request-target'), req, creds).verdict).toBe('unsigned_date');
    expect(verifyHmac(auth(sign(text), 'alice', 'date x-missing'), req, creds).verdict).toBe('malformed');
    expect(verifyHmac('hmac garbage', req, creds).verdict).toBe('malformed');
    expect(verifyHmac(undefined, req, creds).verdict).toBe('missing');
  });
  it('accepts hmac-sha256', () => {
    const signature = sign(text, 'alice-secret', 'sha256');
    const auth = `hmac username="alice", algorithm="hmac-sha256", headers="date @request-target", signature="${signature}"`;
    expect(verifyHmac(auth, req, creds).verdict).toBe('ok');
  });
});

describe.skipIf(!SLAPD)('ldap client against slapd', () => {
  let server: LdapServer;
  beforeAll(async () => {
    server = await startLdap({ suffix: 'dc=solo,dc=io', ldif: GLOO_GUIDE_LDIF });
  }, 60_000);
  afterAll(async () => {
    await server?.close();
  });
  const config = (over: Record<string, unknown> = {}) =>
    LdapStepSchema.parse({
      type: 'ldap',
      url: server.url,
      userDnTemplate: 'uid=%s,ou=people,dc=solo,dc=io',
      allowedGroups: ['cn=managers,ou=groups,dc=solo,dc=io'],
      ...over,
    });

  it('escapes the user name into the DN', () => {
    expect(escapeDnValue('a,b=c+d')).toBe('a\\,b\\=c\\+d');
    expect(escapeDnValue(' #x ')).toBe('\\ #x\\ ');
  });

  it("binds as the user and checks memberOf (Gloo's guide: rick is a manager, marco is not)", async () => {
    const pool = new LdapPool(server.url, 2, 1);
    const auth = new LdapAuthenticator(config(), pool);
    expect((await auth.authenticate('rick', 'rickpwd')).verdict).toBe('allow');
    expect((await auth.authenticate('marco', 'marcopwd')).verdict).toBe('forbidden');
    expect((await auth.authenticate('john', 'doe')).verdict).toBe('invalid_credentials');
    expect((await auth.authenticate('rick', 'wrong')).verdict).toBe('invalid_credentials');
    expect((await auth.authenticate('rick', '')).verdict).toBe('invalid_credentials');
    expect((await auth.authenticate('rick,ou=people', 'rickpwd')).verdict).toBe('invalid_credentials');
    expect(auth.cached('rick', 'rickpwd')?.verdict).toBe('allow');
    expect(pool.size.open).toBeLessThanOrEqual(2);
    pool.close();
  });

  it('grants the edge cache an allow keyed on the Authorization value for as long as its cached outcome', async () => {
    const authz = new Authorizer({ logger: createLogger('extauth', { level: 'error', write: () => undefined }) });
    try {
      expect(authz.apply([{ name: 'ns.ldap', version: 'v1', steps: [config()] }]).problems).toEqual([]);
      const check = async (authorization: string): Promise<EdgeGrant & { outcome: string }> => {
        const grant: EdgeGrant = { key: '', until: 0 };
        const outcome = await authz.checkRequest(new PlainRequest({ configId: 'ns.ldap', authorization }), grant);
        return { ...grant, outcome };
      };
      const rick = `Basic ${Buffer.from('rick:rickpwd').toString('base64')}`;
      const t0 = Date.now();
      const bound = await check(rick);
      expect(bound).toMatchObject({ outcome: 'allow', key: 'ns.ldap@v1', credential: 'authorization' });
      expect(bound.headers).toBeUndefined();
      expect(bound.until).toBeGreaterThanOrEqual(t0 + LDAP_CACHE_MS);
      expect(bound.until).toBeLessThanOrEqual(Date.now() + LDAP_CACHE_MS);
      // from the outcome cache: the same deadline, never a new one
      expect((await check(rick)).until).toBe(bound.until);
      const marco = await check(`Basic ${Buffer.from('marco:marcopwd').toString('base64')}`);
      expect(marco.outcome).toBe('access_denied');
      expect(marco.until).toBe(0);
    } finally {
      authz.stop();
    }
  });

  it('checks groups with a service account; with disableGroupChecking any valid user passes', async () => {
    const pool = new LdapPool(server.url, 2, 0);
    const sa = { username: server.rootDn, password: server.rootPassword, checkGroupsWithServiceAccount: true };
    const withSa = new LdapAuthenticator(config({ serviceAccount: sa }), pool);
    expect((await withSa.authenticate('rick', 'rickpwd')).verdict).toBe('allow');
    expect((await withSa.authenticate('scottc', 'scottcpwd')).verdict).toBe('forbidden');
    const any = new LdapAuthenticator(config({ disableGroupChecking: true, allowedGroups: [] }), pool);
    expect((await any.authenticate('marco', 'marcopwd')).verdict).toBe('allow');
    pool.close();
  });

  it('is unavailable (never allowed) while the server is down, and recovers', async () => {
    const pool = new LdapPool(server.url, 2, 0);
    const auth = new LdapAuthenticator(config(), pool);
    await server.stop();
    const down = await auth.authenticate('rick', 'rickpwd');
    expect(down.verdict).toBe('unavailable');
    expect(JSON.stringify(down)).not.toContain('rickpwd');
    await server.start();
    expect((await auth.authenticate('rick', 'rickpwd')).verdict).toBe('allow');
    pool.close();
  }, 60_000);
});

const OPA_BIN = process.env['LEGATE_OPA'] || path.join(process.cwd(), '.cache/opa/bin/opa');
describe.skipIf(!fs.existsSync(OPA_BIN))('opaAuth policies compiled to wasm', () => {
  beforeAll(() => {
    process.env['LEGATE_OPA'] = OPA_BIN;
  });
  const guide = `package test

default allow = false
allow {
    startswith(input.http_request.path, "/api/pets")
    input.http_request.method == "GET"
}
`;
  const req = (method: string, p: string) => opaInput({ method, path: p, host: 'h', scheme: 'http', headers: { 'x-team': 'shop' } });

  it("evaluates Gloo's guide policy (Rego v0) with its query", async () => {
    const policy = await OpaWasmPolicy.load({ 'policy.rego': guide }, 'data.test.allow == true');
    expect(policy.evaluate(req('GET', '/api/pets/1'))).toBe(true);
    expect(policy.evaluate(req('DELETE', '/api/pets/1'))).toBe(false);
    expect(policy.evaluate(req('GET', '/other'))).toBe(false);
  }, 60_000);

  it('takes Rego v1 and a query over headers; only a true result allows', async () => {
    const v1 = 'package team\n\nallow if input.http_request.headers["x-team"] == "shop"\n\nlabel := "yes"\n';
    expect((await OpaWasmPolicy.load({ 'team.rego': v1 }, 'data.team.allow')).evaluate(req('GET', '/'))).toBe(true);
    // a query whose value cannot be `true` never allows: opa's type check refuses it
    await expect(OpaWasmPolicy.load({ 'team.rego': v1 }, 'data.team.label')).rejects.toThrow(/rego_type_error/);
    // several expressions: allowed when they all hold
    const many = await OpaWasmPolicy.load({ 'team.rego': v1 }, 'x := input.http_request.method\nx == "GET"');
    expect(many.evaluate(req('GET', '/'))).toBe(true);
    expect(many.evaluate(req('PUT', '/'))).toBe(false);
  }, 60_000);

  it('decides the same from the JSON input of the per-check path (one serialization, no JSON round trip)', async () => {
    const policy = await OpaWasmPolicy.load({ 'policy.rego': guide }, 'data.test.allow == true');
    const http = (method: string, p: string) => ({ method, path: p, host: 'h', scheme: 'http', headers: { 'x-team': 'shop', 'x-é': 'ü' } });
    expect(JSON.parse(opaInputJson(http('GET', '/x')))).toEqual(opaInput(http('GET', '/x')));
    for (const [method, p] of [
      ['GET', '/api/pets/1'],
      ['DELETE', '/api/pets/1'],
      ['GET', '/other'],
      ['GET', `/api/pets/${'é'.repeat(40_000)}`],
    ] as const) {
      expect(policy.evaluateJson(opaInputJson(http(method, p))), `${method} ${p.slice(0, 20)}`).toBe(
        policy.evaluate(opaInput(http(method, p))),
      );
    }
    // repeated: the policy's memory is reused, decisions stay right
    for (let i = 0; i < 2000; i++) expect(policy.evaluateJson(opaInputJson(http(i % 2 ? 'GET' : 'PUT', '/api/pets/1')))).toBe(i % 2 === 1);
  }, 60_000);

  it('refuses Rego that does not compile, with opa’s reason', async () => {
    await expect(OpaWasmPolicy.load({ 'bad.rego': 'package bad\n\nallow {{ nope' }, 'data.bad.allow')).rejects.toThrow(
      /rego_parse_error|parse/,
    );
  }, 60_000);
});

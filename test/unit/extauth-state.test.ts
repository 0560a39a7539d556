// The AuthorizationRequest state Gloo shares between the steps of one check: the JWT access token (`jwt`,
// `jwtAccessToken`), the userinfo answer (`introspection`), a passthrough server's state; read by opaAuth's
// input.state and sent by passThroughAuth. Also Gloo's `jwt: {}` step over the JWT filter's metadata, and the
// filter metadata decoded from a real CheckRequest.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuthConfigConfig } from '../../common/contract.js';
import { createLogger } from '../../common/log.js';
import { lookupService, loadEnvoyService } from '../../extensions/common/grpc.js';
import { Authorizer, type EdgeGrant } from '../../extensions/extauth/authorizer.js';
import { PlainRequest, type PlainRequestParts } from '../../extensions/extauth/request.js';
import { parseCheckRequest } from '../../extensions/extauth/wire.js';

const OPA_BIN = process.env['LEGATE_OPA'] || path.join(process.cwd(), '.cache/opa/bin/opa');

/** Gloo's guide policy (OPA Authorization, "Validate JWTs with Open Policy Agent"), unchanged. */
const CHECK_JWT = `package test

default allow = false

allow {
    [header, payload, signature] = io.jwt.decode(input.state.jwt)
    payload["email"] = "admin@example.com"
}
allow {
    [header, payload, signature] = io.jwt.decode(input.state.jwt)
    payload["email"] = "user@example.com"
    not startswith(input.http_request.path, "/owners")
}
`;

const lines: string[] = [];
const logger = createLogger('extauth', { level: 'info', write: (l) => lines.push(l) });

let privateKey: CryptoKey;
let jwks: string;
const sign = (claims: Record<string, unknown>): Promise<string> =>
  new SignJWT({ iss: 'https://idp.test', exp: Math.floor(Date.now() / 1000) + 300, ...claims })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
    .sign(privateKey);

// the userinfo endpoint and a passthrough server
let server: http.Server;
let base = '';
let userinfoCalls = 0;
let userinfoDown = false;
let lastPassthroughBody: Record<string, unknown> = {};

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  privateKey = pair.privateKey;
  jwks = JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] });
  server = http.createServer((req, res): void => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url === '/userinfo') {
        userinfoCalls++;
        if (userinfoDown) {
          res.writeHead(503).end();
          return;
        }
        // answers for the user the token names
        const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
        const sub = (JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString() || '{}') as { sub?: string }).sub;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ sub, email: sub === 'admin' ? 'admin@example.com' : 'user@example.com' }));
        return;
      }
      lastPassthroughBody = body ? (JSON.parse(body) as Record<string, unknown>) : {};
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ state: { team: 'shop' } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});

function authorizer(config: AuthConfigConfig): Authorizer {
  const a = new Authorizer({ logger });
  const { problems } = a.apply([config]);
  expect(problems).toEqual([]);
  return a;
}

async function check(a: Authorizer, parts: PlainRequestParts): Promise<{ outcome: string; grant: EdgeGrant }> {
  const grant: EdgeGrant = { key: '', until: 0 };
  const outcome = await a.checkRequest(new PlainRequest({ configId: 'ns.c', method: 'GET', host: 'h', scheme: 'http', ...parts }), grant);
  return { outcome, grant };
}

describe.skipIf(!fs.existsSync(OPA_BIN))('state shared by the steps of a check', () => {
  beforeAll(() => {
    process.env['LEGATE_OPA'] = OPA_BIN;
  });

  it("(jwt || apikey) && opa: Gloo's check-jwt policy decides on input.state.jwt", async () => {
    const a = authorizer({
      name: 'ns.c',
      booleanExpr: '(jwt || apikey) && opa',
      steps: [
        { type: 'oauth2-jwt', name: 'jwt', localJwks: { inlineString: jwks }, audiences: [], requiredScopes: [], cacheTimeoutMs: 0 },
        // an API key sets no `jwt` state: the policy denies it
        { type: 'api-key', name: 'apikey', headerName: 'api-key', keySha256: ['a'.repeat(64)] },
        { type: 'opa', name: 'opa', query: 'data.test.allow == true', modules: { 'check-jwt.rego': CHECK_JWT } } as never,
      ],
    });
    const admin = `Bearer ${await sign({ email: 'admin@example.com' })}`;
    const user = `Bearer ${await sign({ email: 'user@example.com' })}`;
    const r0 = await check(a, { authorization: admin, path: '/owners/1' });
    expect(r0.outcome).toBe('allow');
    expect((await check(a, { authorization: user, path: '/vets' })).outcome).toBe('allow');
    expect((await check(a, { authorization: user, path: '/owners/1' })).outcome).toBe('access_denied');
    expect((await check(a, { path: '/vets' })).outcome).not.toBe('allow');
    a.stop();
  }, 60_000);

  it('userinfoUrl: the answer is input.state.introspection, fetched once per token, and its failure denies', async () => {
    const policy = 'package ui\n\nallow if input.state.introspection.email == "admin@example.com"\n';
    const jwtStep = { type: 'oauth2-jwt', localJwks: { inlineString: jwks }, audiences: [], requiredScopes: [], cacheTimeoutMs: 60_000 };
    const a = authorizer({
      name: 'ns.c',
      steps: [
        { ...jwtStep, userinfoUrl: `${base}/userinfo` } as never,
        { type: 'opa', query: 'data.ui.allow', modules: { 'ui.rego': policy } } as never,
      ],
    });
    const admin = await sign({ sub: 'admin' });
    userinfoCalls = 0;
    expect((await check(a, { authorization: `Bearer ${await sign({ sub: 'u1' })}`, path: '/' })).outcome).toBe('access_denied');
    expect((await check(a, { authorization: `Bearer ${admin}`, path: '/' })).outcome).toBe('allow');
    const again = await check(a, { authorization: `Bearer ${admin}`, path: '/' });
    expect(again.outcome).toBe('allow');
    expect(userinfoCalls).toBe(2); // the admin's answer was kept for cacheTimeout
    expect(again.grant.until).toBe(0); // never to the edge cache: it would skip the policy
    userinfoDown = true;
    const other = await sign({ sub: 'u2' });
    expect((await check(a, { authorization: `Bearer ${other}`, path: '/' })).outcome).toBe('unavailable');
    expect(lines.some((l) => l.includes('userinfo request failed') && !l.includes(other))).toBe(true);
    userinfoDown = false;
    a.stop();
  }, 60_000);

  it('passThroughAuth: sends the state and the filter metadata; readStateFromResponse is later steps’ state', async () => {
    const policy = 'package pt\n\nallow if input.state.team == "shop"\n';
    const a = authorizer({
      name: 'ns.c',
      steps: [
        { type: 'oauth2-jwt', localJwks: { inlineString: jwks }, audiences: [], requiredScopes: [], cacheTimeoutMs: 0 },
        {
          type: 'passthrough-http',
          url: `${base}/auth`,
          passThroughState: true,
          passThroughFilterMetadata: true,
          readStateFromResponse: true,
        } as never,
        { type: 'opa', query: 'data.pt.allow', modules: { 'pt.rego': policy } } as never,
      ],
    });
    const token = await sign({ email: 'user@example.com' });
    const filterMetadata = { 'envoy.filters.http.jwt_authn': { p: { sub: 'x' } } };
    expect((await check(a, { authorization: `Bearer ${token}`, path: '/', filterMetadata })).outcome).toBe('allow');
    const state = lastPassthroughBody['state'] as Record<string, unknown>;
    expect(state['jwt']).toBe(token);
    expect((state['jwtAccessToken'] as Record<string, unknown>)['email']).toBe('user@example.com');
    expect(lastPassthroughBody['filterMetadata']).toEqual(filterMetadata);
    a.stop();
  }, 60_000);
});

describe.skipIf(!fs.existsSync(OPA_BIN))('opaAuth builtins the wasm target leaves to the host', () => {
  it('a builtin extauth does not provide denies, and the log names it', async () => {
    process.env['LEGATE_OPA'] = OPA_BIN;
    const policy = 'package h\n\nallow if http.send({"method": "GET", "url": "http://127.0.0.1:1/"}).status_code == 200\n';
    const a = authorizer({ name: 'ns.c', steps: [{ type: 'opa', query: 'data.h.allow', modules: { 'h.rego': policy } } as never] });
    expect((await check(a, { path: '/' })).outcome).toBe('access_denied');
    expect(lines.some((l) => l.includes('not implemented: built-in function') && l.includes('http.send'))).toBe(true);
    a.stop();
  }, 60_000);
});

describe("Gloo's jwt step (Envoy's JWT filter verified the token)", () => {
  it('allows with a verified payload in the JWT filter metadata, denies without', async () => {
    const a = authorizer({ name: 'ns.c', booleanExpr: 'jwt', steps: [{ type: 'envoy-jwt', name: 'jwt' }] });
    const verified = { 'envoy.filters.http.jwt_authn': { 'vh/beforeExtAuth/kc': { sub: 'u1', iss: 'https://kc' } } };
    expect((await check(a, { path: '/', filterMetadata: verified })).outcome).toBe('allow');
    expect((await check(a, { path: '/' })).outcome).toBe('missing_token');
    expect((await check(a, { path: '/', filterMetadata: { 'envoy.filters.http.jwt_authn': {} } })).outcome).toBe('missing_token');
    a.stop();
  });

  it('reads the filter metadata of a CheckRequest as Envoy encodes it', () => {
    const rpc = lookupService(loadEnvoyService('envoy/service/auth/v3/external_auth.proto'), 'envoy.service.auth.v3.Authorization');
    const bytes = rpc.service['Check']!.requestSerialize({
      attributes: {
        request: { http: { method: 'GET', path: '/', headers: { authorization: 'Bearer x' } } },
        context_extensions: { config_id: 'ns.c' },
        metadata_context: {
          filter_metadata: {
            'envoy.filters.http.jwt_authn': {
              fields: {
                'vh/beforeExtAuth/kc': {
                  structValue: {
                    fields: {
                      sub: { stringValue: 'u1' },
                      exp: { numberValue: 1795311444 },
                      admin: { boolValue: true },
                      groups: { listValue: { values: [{ stringValue: 'a' }, { nullValue: 'NULL_VALUE' }] } },
                    },
                  },
                },
              },
            },
          },
        },
      },
    });
    const r = parseCheckRequest(bytes);
    expect(r.configId).toBe('ns.c');
    expect(r.filterMetadata).toEqual({
      'envoy.filters.http.jwt_authn': { 'vh/beforeExtAuth/kc': { sub: 'u1', exp: 1795311444, admin: true, groups: ['a', null] } },
    });
    expect(r.method).toBe('GET');
  });
});

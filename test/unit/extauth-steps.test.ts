// The step seam: the shared pool (reference counting across config updates), the request a step sees
// (decoded lazily from the CheckRequest bytes), and the answers a step shapes (encoded CheckResponses).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuthConfigConfig } from '../../common/contract.js';
import { createLogger } from '../../common/log.js';
import { lookupService, loadEnvoyService } from '../../extensions/common/grpc.js';
import { Authorizer } from '../../extensions/extauth/authorizer.js';
import { SharedPool, PoolLease } from '../../extensions/extauth/pool.js';
import { PlainRequest, cookieValue } from '../../extensions/extauth/request.js';
import { encodeAnswer } from '../../extensions/extauth/service.js';
import { STEP_FACTORIES } from '../../extensions/extauth/steps/index.js';
import { parseCheckRequest } from '../../extensions/extauth/wire.js';
import { STEP_TYPES } from '../../common/auth-config.js';

const check = lookupService(loadEnvoyService('envoy/service/auth/v3/external_auth.proto'), 'envoy.service.auth.v3.Authorization').service[
  'Check'
]!;
const serialize = check.responseSerialize as (v: object) => Buffer;
interface HeaderOption {
  header: { key: string; value: string };
  append_action?: string;
}
interface StructValue {
  stringValue?: string;
  numberValue?: number;
  boolValue?: boolean;
  listValue?: { values: StructValue[] };
}
/** The parts of a decoded CheckResponse these tests read. */
interface CheckResponseMsg {
  status: { code: number };
  ok_response: { headers: HeaderOption[]; headers_to_remove: string[]; response_headers_to_add: HeaderOption[] };
  denied_response: { status: { code: string }; headers: HeaderOption[] };
  dynamic_metadata: { fields: Record<string, StructValue> };
}
const decode = (b: Buffer): CheckResponseMsg => check.responseDeserialize(b) as CheckResponseMsg;

describe('SharedPool', () => {
  it('creates a client once per key, and disposes it when the last reference goes', () => {
    const pool = new SharedPool();
    const disposed: string[] = [];
    let created = 0;
    const make = (): { id: number } => ({ id: ++created });
    const a = new PoolLease(pool);
    const b = new PoolLease(pool);
    const x = a.get('k:1', make, () => disposed.push('k:1'));
    expect(b.get('k:1', make, () => disposed.push('k:1'))).toBe(x);
    b.get('k:2', make, () => disposed.push('k:2'));
    expect(created).toBe(2);
    a.releaseAll();
    expect(disposed).toEqual([]);
    b.releaseAll();
    expect(disposed.sort()).toEqual(['k:1', 'k:2']);
    expect(pool.size).toBe(0);
  });

  it('has a factory for every step type of the shared schema', () => {
    expect(Object.keys(STEP_FACTORIES).sort()).toEqual([...STEP_TYPES].sort());
  });
});

describe('Authorizer: shared clients across config updates', () => {
  let server: http.Server;
  let url = '';
  let fetches = 0;
  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      fetches++;
      res.setHeader('content-type', 'application/json');
      // an RSA public key (RFC 7517 appendix A.1)
      res.end(
        JSON.stringify({
          keys: [
            {
              kty: 'RSA',
              n:
                '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMs' +
                'tn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5' +
                'hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw',
              e: 'AQAB',
              alg: 'RS256',
              kid: '2011-04-29',
            },
          ],
        }),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const jwt = (name: string, audience: string): AuthConfigConfig => ({
    name,
    steps: [
      { type: 'oauth2-jwt', remoteJwks: { url, refreshIntervalMs: 60_000 }, audiences: [audience], requiredScopes: [], cacheTimeoutMs: 0 },
    ],
  });
  const until = async (f: () => boolean): Promise<void> => {
    for (let i = 0; i < 100 && !f(); i++) await new Promise((r) => setTimeout(r, 20));
  };

  it('a changed config reuses the JWK set it shares with the old one; a removal closes it', async () => {
    const authz = new Authorizer({ logger: createLogger('t', { level: 'error', write: () => undefined }) });
    try {
      fetches = 0;
      expect(authz.apply([jwt('ns.a', 'one'), jwt('ns.b', 'one')]).problems).toEqual([]);
      await until(() => fetches > 0);
      await new Promise((r) => setTimeout(r, 50));
      expect(fetches).toBe(1); // one set for both configs
      expect(authz.apply([jwt('ns.a', 'two')]).problems).toEqual([]);
      await new Promise((r) => setTimeout(r, 50));
      expect(fetches).toBe(1); // reused: no new fetch
      expect(authz.stats().jwksFetches).toBe(1);
      authz.apply([]);
      expect(authz.stats().jwksFetches).toBe(0); // disposed
    } finally {
      authz.stop();
    }
  });
});

describe('the request a step sees', () => {
  const encode = (msg: object): Buffer => check.requestSerialize(msg);

  it('decodes method, scheme, host, path with query, body and peer from the CheckRequest only when asked', () => {
    const input = parseCheckRequest(
      encode({
        attributes: {
          source: { address: { socket_address: { address: '10.1.2.3', port_value: 5555 } } },
          request: {
            http: {
              method: 'POST',
              headers: { authorization: 'Bearer t', cookie: 'a=1; legate-session=xyz', 'x-y': 'z' },
              path: '/cb?code=c1&state=s1',
              host: 'app.example.com',
              scheme: 'https',
              body: '{"k":1}',
              raw_body: Buffer.from([1, 2, 3]),
            },
          },
          context_extensions: { config_id: 'ns.c' },
        },
      }),
    );
    expect(input.configId).toBe('ns.c');
    expect(input.method).toBe('POST');
    expect(input.scheme).toBe('https');
    expect(input.host).toBe('app.example.com');
    expect(input.path).toBe('/cb?code=c1&state=s1');
    expect(input.body).toBe('{"k":1}');
    expect([...input.rawBody!]).toEqual([1, 2, 3]);
    expect(input.sourceAddress).toBe('10.1.2.3');
    expect(input.header('authorization')).toBe('Bearer t');
    expect(input.allHeaders).toEqual({ authorization: 'Bearer t', cookie: 'a=1; legate-session=xyz', 'x-y': 'z' });
    expect(cookieValue(input.header('cookie'), 'legate-session')).toBe('xyz');
    expect(input.stable()).toBe(input);
  });

  it('is empty where Envoy sent nothing; a reusable plain request is copied when kept', () => {
    const input = parseCheckRequest(encode({}));
    expect([input.method, input.path, input.host, input.scheme, input.sourceAddress]).toEqual(['', '', '', '', '']);
    expect(input.body).toBeUndefined();
    const scratch = new PlainRequest({}, true).reset('ns.a', 'Bearer x', false, { 'api-key': 'k' });
    const kept = scratch.stable();
    scratch.reset('ns.b', undefined, false, {});
    expect([kept.configId, kept.authorization, kept.header('api-key')]).toEqual(['ns.a', 'Bearer x', 'k']);
  });
});

describe('answers a step shapes', () => {
  it('an allow carries upstream headers, removals, response headers (Set-Cookie) and dynamic metadata', () => {
    const r = decode(
      encodeAnswer(serialize, 'allow', {
        upstreamHeaders: [{ name: 'x-id-token', value: 'eyJ' }],
        removeHeaders: ['cookie'],
        responseHeaders: [{ name: 'set-cookie', value: 'a=1', append: true }],
        metadata: { sub: 'u1', groups: ['a'], n: 2, ok: true },
      })!,
    );
    expect(r['status'].code).toBe(0);
    const ok = r['ok_response'];
    expect(ok.headers[0]?.header).toMatchObject({ key: 'x-id-token', value: 'eyJ' });
    expect(ok.headers[0]?.append_action).toBe('OVERWRITE_IF_EXISTS_OR_ADD');
    expect(ok.headers_to_remove).toEqual(['cookie']);
    expect(ok.response_headers_to_add[0]?.header).toMatchObject({ key: 'set-cookie', value: 'a=1' });
    expect(ok.response_headers_to_add[0]?.append_action).toBe('APPEND_IF_EXISTS_OR_ADD');
    const fields = r['dynamic_metadata'].fields;
    expect(fields['sub']?.stringValue).toBe('u1');
    expect(fields['groups']?.listValue?.values[0]?.stringValue).toBe('a');
    expect(fields['n']?.numberValue).toBe(2);
    expect(fields['ok']?.boolValue).toBe(true);
  });

  it('a denial answers with its own status, headers and body (a redirect); without one, the default stays', () => {
    const r = decode(
      encodeAnswer(serialize, 'invalid_token', {
        denial: {
          status: 302,
          headers: [
            { name: 'location', value: 'https://idp/authorize?x=1' },
            { name: 'set-cookie', value: 's=1', append: true },
          ],
          body: '',
        },
      })!,
    );
    expect(r['status'].code).toBe(7);
    expect(r['denied_response'].status.code).toBe('Found');
    expect(r['denied_response'].headers.map((h: { header: { key: string } }) => h.header.key)).toEqual(['location', 'set-cookie']);
    expect(encodeAnswer(serialize, 'invalid_token', { upstreamHeaders: [{ name: 'a', value: 'b' }] })).toBeUndefined();
  });
});

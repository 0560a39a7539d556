// opaAuth policies that read request headers, through the real Envoy and OPA (built by `make opa`): the controller
// finds the headers each policy reads in its Rego, Envoy's ext_authz sends extauth only those (allowed_headers),
// and a policy still sees every header it reads; one reading headers dynamically brings every header back.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startGateway, type Gateway } from '../support/gateway.js';
import { appBehindAuth, startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually } from '../support/util.js';

const OPA = process.env['LEGATE_OPA'] || path.join(ROOT, '.cache/opa/bin/opa');

// Rego v0, as Gloo's guide writes it
const TEAM = `package team

default allow = false
allow {
    startswith(input.http_request.path, "/team")
    input.http_request.headers["x-team"] == "shop"
}
`;

// Rego v1, reading the Authorization header through check_request
const BEARER = `package bearer

import rego.v1

default allow := false

allow if {
	input.check_request.attributes.request.http.headers.authorization == "Bearer let-me-in"
}
`;

// any header named by another one: every header must reach extauth
const ANY = `package anyheader

default allow = false
allow {
    name := input.http_request.headers["x-which"]
    input.http_request.headers[name] == "yes"
}
`;

const indent = (text: string): string =>
  text
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');

function policy(name: string, rego: string, query: string): string {
  return `apiVersion: v1
kind: ConfigMap
metadata: { name: ${name}, namespace: legate-system }
data:
  policy.rego: |
${indent(rego)}
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: ${name}, namespace: legate-system }
spec:
  configs:
  - opaAuth:
      modules: [{ name: ${name}, namespace: legate-system }]
      query: "${query}"
`;
}

let gw: Gateway;
let app: EchoUpstream;

/** The patterns of ext_authz allowed_headers in Envoy's config; undefined when it sends every header. */
async function allowedHeaders(): Promise<string[] | undefined> {
  const dump = await (await fetch(`http://127.0.0.1:${gw.ports.admin}/config_dump?resource=dynamic_listeners`)).text();
  const m = /"allowed_headers":\s*\{\s*"patterns":\s*(\[[^\]]*\])/.exec(dump);
  return m ? (JSON.parse(m[1]!) as { exact: string }[]).map((p) => p.exact) : undefined;
}

describe.skipIf(!fs.existsSync(OPA))('opaAuth policies reading headers', () => {
  beforeAll(async () => {
    app = await startEcho('app');
    gw = await startGateway(
      {
        'auth.yaml': `${policy('team', TEAM, 'data.team.allow == true')}---
${policy('bearer', BEARER, 'data.bearer.allow')}---
${appBehindAuth(app.port, [
  ['/team', 'team'],
  ['/bearer', 'bearer'],
])}`,
      },
      { env: { LEGATE_OPA: OPA } },
    );
    await gw.until('/team', (r) => r.status === 200, { headers: { 'x-team': 'shop' } }, 60_000);
  }, 120_000);

  afterAll(async () => {
    await gw?.stop();
    await app?.close();
  });

  it('Envoy sends extauth only the headers the policies read', async () => {
    expect(await allowedHeaders()).toEqual(['authorization', 'x-team']);
  });

  it('each policy sees the headers it reads', async () => {
    expect((await gw.request('/team', { headers: { 'x-team': 'shop' } })).status).toBe(200);
    expect((await gw.request('/team', { headers: { 'x-team': 'pets' } })).status).toBe(403);
    expect((await gw.request('/team')).status).toBe(403);
    expect((await gw.request('/bearer', { headers: { authorization: 'Bearer let-me-in' } })).status).toBe(200);
    expect((await gw.request('/bearer', { headers: { authorization: 'Bearer nope' } })).status).toBe(403);
  });

  it('a policy reading headers dynamically gets every header, the others keep working', async () => {
    gw.write('any.yaml', policy('anyheader', ANY, 'data.anyheader.allow == true'));
    gw.write(
      'auth.yaml',
      `${policy('team', TEAM, 'data.team.allow == true')}---
${policy('bearer', BEARER, 'data.bearer.allow')}---
${appBehindAuth(app.port, [
  ['/team', 'team'],
  ['/bearer', 'bearer'],
  ['/any', 'anyheader'],
])}`,
    );
    const asked = { headers: { 'x-which': 'x-color', 'x-color': 'yes' } };
    await gw.until('/any', (r) => r.status === 200, asked, 60_000);
    await eventually('every header to be sent', async () => ((await allowedHeaders()) === undefined ? true : undefined), 20_000);
    expect((await gw.request('/any', { headers: { 'x-which': 'x-color', 'x-color': 'no' } })).status).toBe(403);
    expect((await gw.request('/team', { headers: { 'x-team': 'shop' } })).status).toBe(200);
    expect((await gw.request('/bearer', { headers: { authorization: 'Bearer let-me-in' } })).status).toBe(200);
  }, 90_000);
});

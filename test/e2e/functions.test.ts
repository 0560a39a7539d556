// AWS Lambda end to end: Gloo's "AWS Lambda" guide (the Secret as `glooctl create secret aws` writes it, the
// Upstream, the VirtualService routing / to logicalName echo) through the real Envoy's aws_lambda filter to a stand-in
// for the Lambda API on loopback (HTTPS), which checks what AWS would: the SigV4 signature (recomputed here with
// node:crypto from the test's secret key), the Invoke path with the function's ARN, the invocation type, the body.
// The Upstream carries what Gloo's discovery would have listed (lambdaFunctions), the account its ARNs need, and
// Legate's `endpoint` pointing the cluster at the stand-in instead of lambda.us-east-1.amazonaws.com:443.
import { createHash, createHmac } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';

const ACCESS_KEY = 'AKIAIOSFODNN7EXAMPLE';
const SECRET_KEY = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const SESSION_TOKEN = 'legate-e2e-session-token';
const ACCOUNT = '123456789012';
const ARN = `arn:aws:lambda:us-east-1:${ACCOUNT}:function:echo`;
const b64 = (s: string): string => Buffer.from(s).toString('base64');

interface Invocation {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

const fixtures = path.join(import.meta.dirname, 'fixtures');
const invocations: Invocation[] = [];
let lambda: https.Server;
let gw: Gateway;

/** RFC 3986 percent-encoding, as SigV4 wants it. */
const uriEncode = (s: string): string => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * Recomputes the SigV4 signature of a request as the Lambda API does (the path as it arrived, encoded once more per
 * segment; the signed headers as they arrived; the body's SHA-256) and says whether its Authorization header matches.
 */
function signatureValid(inv: Invocation, secretKey: string): boolean {
  const auth =
    /^AWS4-HMAC-SHA256 Credential=[^/]+\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(
      inv.headers['authorization'] ?? '',
    );
  if (!auth) return false;
  const [, date, region, service, signedHeaders, signature] = auth as unknown as [string, string, string, string, string, string];
  const [rawPath = '', rawQuery = ''] = inv.url.split('?');
  const canonicalQuery = rawQuery
    .split('&')
    .filter(Boolean)
    .map((kv) => kv.split('=').map((p) => uriEncode(decodeURIComponent(p))))
    .sort()
    .map(([k, v = '']) => `${k}=${v}`)
    .join('&');
  const canonicalHeaders = signedHeaders
    .split(';')
    .map((name) => `${name}:${(inv.headers[name] ?? '').trim()}\n`)
    .join('');
  const canonical = [
    inv.method,
    rawPath.split('/').map(uriEncode).join('/'),
    canonicalQuery,
    canonicalHeaders,
    signedHeaders,
    createHash('sha256').update(inv.body).digest('hex'),
  ].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', inv.headers['x-amz-date'], scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
  let key = createHmac('sha256', `AWS4${secretKey}`).update(date).digest();
  for (const part of [region, service, 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
  return createHmac('sha256', key).update(toSign).digest('hex') === signature;
}

const last = (fn: string): Invocation | undefined => invocations.findLast((i) => i.url === `/2015-03-31/functions/${ARN}${fn}/invocations`);

beforeAll(async () => {
  // the Lambda API: the echo function returns what it was sent; the `api` alias answers as API Gateway integrations do
  lambda = https.createServer(
    {
      cert: fs.readFileSync(path.join(fixtures, 'secure.example.com.crt')),
      key: fs.readFileSync(path.join(fixtures, 'secure.example.com.key')),
    },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const inv: Invocation = {
          method: req.method ?? '',
          url: req.url ?? '',
          headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
          body: Buffer.concat(chunks).toString('utf8'),
        };
        invocations.push(inv);
        if (inv.headers['x-amz-invocation-type'] === 'Event') {
          res.writeHead(202).end();
        } else if (inv.url.includes(':function:echo:api/')) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({ statusCode: 201, headers: { 'x-from-lambda': 'yes' }, body: `event of ${JSON.parse(inv.body).method}` }),
          );
        } else {
          res.writeHead(200, { 'content-type': 'application/json' }).end(inv.body);
        }
      });
    },
  );
  await new Promise<void>((resolve) => lambda.listen(0, '127.0.0.1', resolve));
  const port = (lambda.address() as AddressInfo).port;

  gw = await startGateway({
    'secret.yaml': `
apiVersion: v1
kind: Secret
metadata:
  name: aws-creds
  namespace: gloo-system
type: Opaque
data:
  aws_access_key_id: ${b64(ACCESS_KEY)}
  aws_secret_access_key: ${b64(SECRET_KEY)}
  aws_session_token: ${b64(SESSION_TOKEN)}
`,
    'upstream.yaml': `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata:
  name: aws-upstream
  namespace: gloo-system
spec:
  aws:
    region: us-east-1
    secretRef:
      name: aws-creds
      namespace: gloo-system
    awsAccountId: "${ACCOUNT}"
    lambdaFunctions:
      - { logicalName: echo, lambdaFunctionName: echo }
      - { logicalName: echo-v2, lambdaFunctionName: echo, qualifier: "2" }
      - { logicalName: echo-api, lambdaFunctionName: echo, qualifier: api }
    endpoint: 127.0.0.1:${port}
`,
    'vs.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata:
  name: aws-route
  namespace: gloo-system
spec:
  virtualHost:
    domains:
    - '*'
    routes:
    - matchers:
      - exact: /
      routeAction:
        single:
          destinationSpec:
            aws:
              logicalName: echo
          upstream:
            name: aws-upstream
            namespace: gloo-system
`,
    'more.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: more, namespace: gloo-system }
spec:
  virtualHost:
    domains: [more.example.com]
    routes:
      - matchers: [{ prefix: /async }]
        routeAction:
          single:
            upstream: { name: aws-upstream, namespace: gloo-system }
            destinationSpec: { aws: { logicalName: echo-v2, invocationStyle: ASYNC } }
      - matchers: [{ prefix: /split }]
        routeAction:
          multi:
            destinations:
              - destination:
                  upstream: { name: aws-upstream, namespace: gloo-system }
                  destinationSpec: { aws: { logicalName: echo } }
              - destination:
                  upstream: { name: aws-upstream, namespace: gloo-system }
                  destinationSpec: { aws: { logicalName: echo-v2 } }
      - matchers: [{ prefix: /event }]
        routeAction:
          single:
            upstream: { name: aws-upstream, namespace: gloo-system }
            destinationSpec: { aws: { logicalName: echo-api, requestTransformation: true, unwrapAsApiGateway: true } }
`,
    'wrapped.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: wrapped, namespace: gloo-system }
spec:
  virtualHost:
    domains: [wrapped.example.com]
    routes:
      - routeAction:
          single:
            upstream: { name: aws-upstream, namespace: gloo-system }
            destinationSpec: { aws: { logicalName: echo, wrapAsApiGateway: true } }
`,
  });
  await gw.until('/', (r) => r.status === 200, { method: 'POST', body: '{}' }, 30_000);
});

afterAll(async () => {
  await gw?.stop();
  await new Promise<void>((resolve) => (lambda ? lambda.close(() => resolve()) : resolve()));
});

describe('AWS Lambda', () => {
  it("invokes the guide's echo function, signed with the Secret's credentials", async () => {
    const body = '{"key1":"value1", "key2":"value2"}';
    const r = await gw.request('/', { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(200);
    expect(r.text).toBe(body);
    const inv = last('');
    expect(inv).toBeDefined();
    expect(inv!.method).toBe('POST');
    expect(inv!.body).toBe(body);
    expect(inv!.headers['x-amz-invocation-type']).toBe('RequestResponse');
    expect(inv!.headers['x-amz-security-token']).toBe(SESSION_TOKEN);
    expect(inv!.headers['authorization']).toMatch(
      new RegExp(`^AWS4-HMAC-SHA256 Credential=${ACCESS_KEY}/\\d{8}/us-east-1/lambda/aws4_request, `),
    );
    expect(inv!.headers['authorization']).toMatch(/SignedHeaders=[^,]*host;[^,]*x-amz-date/);
    expect(signatureValid(inv!, SECRET_KEY)).toBe(true);
    // the check itself fails on a wrong key, a changed body, a changed path
    expect(signatureValid(inv!, 'not-the-secret')).toBe(false);
    expect(signatureValid({ ...inv!, body: `${body} ` }, SECRET_KEY)).toBe(false);
    expect(signatureValid({ ...inv!, url: inv!.url.replace('echo', 'other') }, SECRET_KEY)).toBe(false);
  });

  it('invokes a qualified function asynchronously (invocation type Event)', async () => {
    const r = await gw.request('/async', { host: 'more.example.com', method: 'POST', body: 'fire and forget' });
    expect(r.status).toBeLessThan(300);
    const inv = last(':2');
    expect(inv).toBeDefined();
    expect(inv!.headers['x-amz-invocation-type']).toBe('Event');
    expect(inv!.body).toBe('fire and forget');
    expect(signatureValid(inv!, SECRET_KEY)).toBe(true);
  });

  it('sends a JSON event and unwraps the answer with requestTransformation and unwrapAsApiGateway', async () => {
    const r = await gw.request('/event/x?q=1', {
      host: 'more.example.com',
      method: 'PUT',
      body: 'hello',
      headers: { 'x-test': 'yes', 'content-type': 'text/plain' },
    });
    expect(r.status).toBe(201);
    expect(r.headers.get('x-from-lambda')).toBe('yes');
    expect(r.text).toBe('event of PUT');
    const inv = last(':api');
    const event = JSON.parse(inv!.body) as Record<string, unknown>;
    expect(event).toMatchObject({
      raw_path: '/event/x?q=1',
      method: 'PUT',
      body: 'hello',
      query_string_parameters: { q: '1' },
      is_base64_encoded: false,
    });
    expect((event['headers'] as Record<string, string>)['x-test']).toBe('yes');
    expect(signatureValid(inv!, SECRET_KEY)).toBe(true);
  });

  it('invokes the function of the weighted destination Envoy picks', async () => {
    const before = invocations.length;
    for (let i = 0; i < 30; i++) {
      const r = await gw.request('/split', { host: 'more.example.com', method: 'POST', body: `split ${i}` });
      expect(r.text).toBe(`split ${i}`);
    }
    const seen = invocations.slice(before);
    expect(seen).toHaveLength(30);
    const paths = new Set(seen.map((i) => i.url));
    expect(paths).toEqual(new Set([`/2015-03-31/functions/${ARN}/invocations`, `/2015-03-31/functions/${ARN}:2/invocations`]));
    expect(seen.every((i) => i.headers['x-amz-invocation-type'] === 'RequestResponse' && signatureValid(i, SECRET_KEY))).toBe(true);
  });

  it('shows no secret key or session token in the Proxy or the served config', () => {
    const shown = [gw.ctl('get', 'proxies', '-o', 'json').stdout, gw.ctl('proxy', 'served-config').stdout];
    expect(shown[0]).toContain(ARN);
    expect(shown[1]).toContain('aws_lambda');
    for (const text of shown) {
      expect(text).not.toContain(SECRET_KEY);
      expect(text).not.toContain(SESSION_TOKEN);
    }
  });

  it('refuses wrapAsApiGateway with the reason, and reports the statuses', () => {
    const vs = JSON.parse(gw.ctl('get', 'vs', 'wrapped', '-n', 'gloo-system', '-o', 'json').stdout);
    const status = Object.values(vs.status.statuses as Record<string, { state: string; reason: string }>)[0]!;
    expect(status.state).toBe('Rejected');
    expect(status.reason).toContain('wrapAsApiGateway: Envoy');
    const up = JSON.parse(gw.ctl('get', 'upstream', 'aws-upstream', '-n', 'gloo-system', '-o', 'json').stdout);
    expect(Object.values(up.status.statuses as Record<string, { state: string }>)[0]!.state).toBe('Accepted');
    expect(gw.ctl('get', 'upstreams', '-n', 'gloo-system').stdout).toContain('aws us-east-1 functions=echo,echo-v2,echo-api');
  });
});

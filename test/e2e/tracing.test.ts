// Tracing end to end, as a Gloo user sets it up: a Gateway's httpConnectionManagerSettings.tracing with
// openTelemetryConfig (and, on a second Gateway, zipkinConfig) pointing at a collector Upstream, here a real
// Jaeger (built from its Go module: test/tracing/jaeger.ts). One request to a GraphQL route behind extauth
// makes one trace: Envoy's spans, extauth's span (child of Envoy's ext_authz call), the graphql service's span
// (child of Envoy's ext_proc call), and the GraphQL backend gets the graphql span's context; the route's
// options.tracing.routeDescriptor names Envoy's span.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJaeger, type Jaeger, type JaegerSpan, type JaegerTrace } from '../tracing/jaeger.js';
import { startGateway, type Gateway } from '../support/gateway.js';
import { eventually, freePort } from '../support/util.js';

const KEY = `k-${crypto.randomBytes(16).toString('hex')}`;

let jaeger: Jaeger;
let gw: Gateway;
let backend: http.Server;
let zipkinPort: number;
let datadogPort: number;
/** what the GraphQL backend got: the x-user the resolver forwards, and the trace headers */
const calls: { user: string; headers: http.IncomingHttpHeaders }[] = [];

const resources = (backendPort: number): string => `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: books, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${backendPort} }] }
---
apiVersion: v1
kind: Secret
metadata: { name: client-a, namespace: gloo-system }
data: { api-key: ${Buffer.from(KEY).toString('base64')} }
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: apikey, namespace: gloo-system }
spec:
  configs:
    - apiKeyAuth:
        headerName: api-key
        apiKeySecretRefs: [{ name: client-a, namespace: gloo-system }]
---
apiVersion: graphql.gloo.solo.io/v1beta1
kind: GraphQLApi
metadata: { name: bookinfo, namespace: gloo-system }
spec:
  executableSchema:
    executor:
      local:
        resolutions:
          Query|whoami:
            restResolver:
              upstreamRef: { name: books, namespace: gloo-system }
              request: { headers: { ':path': /whoami, x-user: '{$headers.x-user}' } }
              response: { resultRoot: '{$body.user}' }
    schemaDefinition: |
      type Query {
        whoami: String @resolve(name: "Query|whoami")
      }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: default, namespace: gloo-system }
spec:
  virtualHost:
    domains: ["*"]
    routes:
      - matchers: [{ prefix: /graphql }]
        graphqlApiRef: { name: bookinfo, namespace: gloo-system }
        options:
          extauth: { configRef: { name: apikey, namespace: gloo-system } }
          tracing: { routeDescriptor: whoami }
      - matchers: [{ prefix: /rest/ }]
        routeAction: { single: { upstream: { name: books, namespace: gloo-system } } }
        options: { prefixRewrite: / }
`;

// Gloo's guides: the collector Upstream (OTLP over gRPC needs useHttp2) and the Gateway's tracing settings
const collectors = (j: Jaeger): string => `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: opentelemetry-collector, namespace: gloo-system }
spec:
  # REQUIRED FOR OPENTELEMETRY COLLECTION
  useHttp2: true
  static:
    hosts:
      - addr: 127.0.0.1
        port: ${j.ports.otlpGrpc}
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: zipkin, namespace: gloo-system }
spec:
  static:
    hosts:
      - addr: 127.0.0.1
        port: ${j.ports.zipkin}
`;

const gateways = (httpPort: number, zipkin: number, datadog: number): string => `
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: gateway-proxy, namespace: gloo-system }
spec:
  bindAddress: "::"
  bindPort: ${httpPort}
  httpGateway:
    options:
      httpConnectionManagerSettings:
        tracing:
          openTelemetryConfig:
            collectorUpstreamRef:
              namespace: "gloo-system"
              name: "opentelemetry-collector"
---
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: gateway-proxy-zipkin, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${zipkin}
  httpGateway:
    options:
      httpConnectionManagerSettings:
        tracing:
          verbose: true
          zipkinConfig:
            collectorEndpoint: /api/v2/spans
            collectorEndpointVersion: HTTP_JSON
            collectorUpstreamRef:
              name: zipkin
              namespace: gloo-system
---
# Envoy 1.40 still has the Datadog tracer: rendered, and Envoy takes it (no agent here: its reports fail)
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: gateway-proxy-datadog, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${datadog}
  httpGateway:
    options:
      httpConnectionManagerSettings:
        tracing:
          datadogConfig:
            collectorUpstreamRef: { name: books, namespace: gloo-system }
            serviceName: gateway
`;

/** A GraphQL query as the client POSTs it to `port`. */
function query(port: number, user: string, apiKey = KEY): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ query: '{ whoami }' });
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/graphql',
        method: 'POST',
        // a new connection each time: one kept alive from before the traced Gateway applied stays on the old listener
        agent: false,
        headers: { 'content-type': 'application/json', 'api-key': apiKey, 'x-user': user, 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const norm = (id: string): string => id.replace(/^0+/, '');

const serviceOf = (t: JaegerTrace, s: JaegerSpan): string => t.processes[s.processID]?.serviceName ?? '';
const parentOf = (s: JaegerSpan): string | undefined => s.references?.find((r) => r.refType === 'CHILD_OF')?.spanID;

/**
 * The trace Jaeger has under `traceId` once it is whole: spans of every service in `services`, and every
 * span's parent there too (Envoy and the extensions export on their own schedules).
 */
async function traceWith(traceId: string, services: string[]): Promise<JaegerTrace> {
  return eventually(
    `trace ${traceId} with spans of ${services.join(', ')}`,
    async () => {
      const found = (await jaeger.traces('legate-graphql')).find((t) => norm(t.traceID) === norm(traceId));
      if (!found) return undefined;
      const have = new Set(found.spans.map((s) => serviceOf(found, s)));
      const ids = new Set(found.spans.map((s) => s.spanID));
      const whole = found.spans.every((s) => parentOf(s) === undefined || ids.has(parentOf(s)!));
      return whole && services.every((s) => have.has(s)) ? found : undefined;
    },
    45_000,
  );
}

beforeAll(async () => {
  jaeger = await startJaeger();
  backend = http.createServer((req, res) => {
    calls.push({ user: String(req.headers['x-user'] ?? ''), headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ user: req.headers['x-user'] ?? null }));
  });
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', () => r()));
  zipkinPort = await freePort();
  datadogPort = await freePort();
  gw = await startGateway(
    { 'app.yaml': resources((backend.address() as AddressInfo).port), 'collectors.yaml': collectors(jaeger) },
    { args: ['--otlp-endpoint', `http://127.0.0.1:${jaeger.ports.otlpHttp}`] },
  );
  gw.write('gateways.yaml', gateways(gw.ports.http, zipkinPort, datadogPort));
  await eventually('the traced listeners', async () => ((await query(gw.ports.http, 'ready')).status === 200 ? true : undefined), 60_000);
  await eventually('the zipkin listener', async () => ((await query(zipkinPort, 'ready')).status === 200 ? true : undefined), 30_000);
  await eventually('the datadog listener', async () => ((await query(datadogPort, 'ready')).status === 200 ? true : undefined), 30_000);
}, 900_000);

afterAll(async () => {
  await gw?.stop();
  await jaeger?.stop();
  await new Promise<void>((r) => (backend ? backend.close(() => r()) : r()));
});

describe('tracing through Envoy, extauth and the graphql service', () => {
  it('OpenTelemetry: one trace holds the spans of Envoy, extauth and graphql, each extension a child of Envoy', async () => {
    const r = await query(gw.ports.http, 'otel-1');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ data: { whoami: 'otel-1' } });
    const call = calls.find((c) => c.user === 'otel-1');
    // the backend call carries the graphql span's context
    const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(call?.headers['traceparent']));
    expect(m, String(call?.headers['traceparent'])).not.toBeNull();
    const [, traceId, parentSpan] = m!;

    const envoy = 'gateway-proxy.gloo-system';
    const trace = await traceWith(traceId!, [envoy, 'legate-extauth', 'legate-graphql']);
    const spans = trace.spans;
    const byId = new Map(spans.map((s) => [s.spanID, s]));
    const extauth = spans.find((s) => serviceOf(trace, s) === 'legate-extauth')!;
    const graphql = spans.find((s) => serviceOf(trace, s) === 'legate-graphql')!;
    expect(extauth.operationName).toBe('envoy.service.auth.v3.Authorization/Check');
    expect(graphql.operationName).toBe('envoy.service.ext_proc.v3.ExternalProcessor/Process');
    expect(graphql.spanID).toBe(parentSpan);
    // each extension's parent is an Envoy span (its gRPC call), itself in the request's span tree
    for (const s of [extauth, graphql]) {
      const parent = byId.get(parentOf(s) ?? '');
      expect(parent, `${s.operationName}'s parent`).toBeDefined();
      expect(serviceOf(trace, parent!)).toBe(envoy);
    }
    expect(byId.get(parentOf(extauth)!)!.operationName).toContain('Authorization');
    expect(byId.get(parentOf(graphql)!)!.operationName).toContain('ExternalProcessor');
    // one root: Envoy's ingress span
    const roots = spans.filter((s) => parentOf(s) === undefined);
    expect(roots.map((s) => serviceOf(trace, s))).toEqual([envoy]);
    // the route's routeDescriptor names it
    expect(roots[0]!.operationName).toBe('whoami');
    expect(extauth.tags?.find((t) => t.key === 'legate.extauth.outcome')?.value).toBe('allow');
  });

  it('a request extauth denies is traced too, and never reaches graphql', async () => {
    const r = await query(gw.ports.http, 'denied', 'wrong-key');
    expect(r.status).toBe(401);
    expect(calls.some((c) => c.user === 'denied')).toBe(false);
    const outcome = await eventually(
      'the denied check in jaeger',
      async () => {
        for (const t of await jaeger.traces('legate-extauth')) {
          for (const s of t.spans) {
            const v = s.tags?.find((x) => x.key === 'legate.extauth.outcome')?.value;
            if (v === 'invalid_api_key') return v;
          }
        }
        return undefined;
      },
      30_000,
    );
    expect(outcome).toBe('invalid_api_key');
  });

  it('Zipkin: Envoy reports to the zipkin receiver (B3), and the extensions continue the same trace', async () => {
    const r = await query(zipkinPort, 'zipkin-1');
    expect(r.status).toBe(200);
    const call = calls.find((c) => c.user === 'zipkin-1');
    const traceId = String(call?.headers['x-b3-traceid'] ?? '');
    expect(traceId).toMatch(/^[0-9a-f]{16,32}$/);
    expect(call?.headers['x-b3-sampled']).toBe('1');
    // Envoy's Zipkin tracer names its service after the proxy (the bootstrap's node cluster)
    const trace = await traceWith(traceId, ['gateway-proxy', 'legate-extauth', 'legate-graphql']);
    const graphql = trace.spans.find((s) => serviceOf(trace, s) === 'legate-graphql')!;
    expect(graphql.spanID).toBe(call?.headers['x-b3-spanid']);
    const parent = trace.spans.find((s) => s.spanID === parentOf(graphql));
    expect(parent && serviceOf(trace, parent)).toBe('gateway-proxy');
  });

  it('renders the providers the Gateways ask for (Datadog too: its listener serves)', async () => {
    const dump = await (await fetch(`http://127.0.0.1:${gw.ports.admin}/config_dump?resource=dynamic_listeners`)).text();
    expect(dump).toContain('envoy.tracers.opentelemetry');
    expect(dump).toContain('opentelemetry-collector_gloo-system');
    expect(dump).toContain('envoy.tracers.zipkin');
    expect(dump).toContain('/api/v2/spans');
    expect(dump).toContain('envoy.tracers.datadog');
  });
});

// The extensions' spans: which trace contexts they continue (W3C traceparent, B3 single and multi header),
// what they pass on, and the OTLP/HTTP JSON they export.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../common/log.js';
import { Tracer, extractContext, otlpEndpoint } from '../../extensions/common/tracing.js';

const headers = (h: Record<string, string>) => ({ header: (n: string) => h[n] });
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('extractContext', () => {
  it('continues a sampled W3C context', () => {
    expect(extractContext(headers({ traceparent: `00-${TRACE}-${SPAN}-01` }))).toEqual({ traceId: TRACE, spanId: SPAN });
  });

  it('ignores an unsampled, malformed or all-zero one', () => {
    expect(extractContext(headers({ traceparent: `00-${TRACE}-${SPAN}-00` }))).toBeUndefined();
    expect(extractContext(headers({ traceparent: 'garbage' }))).toBeUndefined();
    expect(extractContext(headers({ traceparent: `00-${'0'.repeat(32)}-${SPAN}-01` }))).toBeUndefined();
    expect(extractContext(headers({}))).toBeUndefined();
  });

  it("continues Zipkin's B3 headers, a 64-bit trace id padded as collectors store it", () => {
    const short = 'a3ce929d0e0e4736';
    expect(extractContext(headers({ 'x-b3-traceid': short, 'x-b3-spanid': SPAN, 'x-b3-sampled': '1' }))).toEqual({
      traceId: `0000000000000000${short}`,
      spanId: SPAN,
      b3: { traceId: short },
    });
    expect(extractContext(headers({ b3: `${TRACE}-${SPAN}-1` }))).toEqual({ traceId: TRACE, spanId: SPAN, b3: { traceId: TRACE } });
    expect(extractContext(headers({ 'x-b3-traceid': short, 'x-b3-spanid': SPAN, 'x-b3-sampled': '0' }))).toBeUndefined();
    expect(extractContext(headers({ b3: `${TRACE}-${SPAN}-0` }))).toBeUndefined();
  });
});

describe('otlpEndpoint', () => {
  it('takes the flag, then the OpenTelemetry environment variables; none means off', () => {
    expect(otlpEndpoint('http://a:4318', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://b:4318' })).toBe('http://a:4318');
    expect(otlpEndpoint(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://b:4318' })).toBe('http://b:4318');
    expect(otlpEndpoint(undefined, {})).toBeUndefined();
  });
});

describe('Tracer', () => {
  let server: http.Server;
  const bodies: { url: string; body: unknown }[] = [];
  let port = 0;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let text = '';
      req.on('data', (d: Buffer) => (text += d.toString()));
      req.on('end', () => {
        bodies.push({ url: req.url ?? '', body: JSON.parse(text) });
        res.end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('makes a child span of a sampled call only, passes its context on, and exports it over OTLP/HTTP JSON', async () => {
    const tracer = new Tracer({
      endpoint: `http://127.0.0.1:${port}/`,
      serviceName: 'legate-test',
      logger: createLogger('test', { level: 'error' }),
    });
    expect(tracer.startServerSpan('x', headers({ traceparent: `00-${TRACE}-${SPAN}-00` }))).toBeUndefined();
    const span = tracer.startServerSpan('Check', headers({ 'x-b3-traceid': TRACE, 'x-b3-spanid': SPAN, 'x-b3-sampled': '1' }))!;
    expect(span.propagation()).toEqual({
      traceparent: `00-${TRACE}-${span.spanId}-01`,
      'x-b3-traceid': TRACE,
      'x-b3-spanid': span.spanId,
      'x-b3-parentspanid': SPAN,
      'x-b3-sampled': '1',
    });
    span.set('outcome', 'allow').set('count', 2).end();
    span.end();
    await tracer.stop();
    expect(bodies).toHaveLength(1);
    expect(bodies[0]!.url).toBe('/v1/traces');
    const rs = (bodies[0]!.body as { resourceSpans: { resource: unknown; scopeSpans: { spans: Record<string, unknown>[] }[] }[] })
      .resourceSpans[0]!;
    expect(rs.resource).toEqual({ attributes: [{ key: 'service.name', value: { stringValue: 'legate-test' } }] });
    const [s] = rs.scopeSpans[0]!.spans;
    expect(s).toMatchObject({
      traceId: TRACE,
      spanId: span.spanId,
      parentSpanId: SPAN,
      name: 'Check',
      kind: 2,
      status: { code: 1 },
      attributes: [
        { key: 'outcome', value: { stringValue: 'allow' } },
        { key: 'count', value: { intValue: '2' } },
      ],
    });
    expect(BigInt(s!['endTimeUnixNano'] as string)).toBeGreaterThanOrEqual(BigInt(s!['startTimeUnixNano'] as string));
  });
});

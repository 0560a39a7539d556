// Spans of the extension services, in the trace Envoy started. Envoy's gRPC client sends the context of its
// own span (the ext_authz or ext_proc call) in the call's headers: W3C `traceparent` (the OpenTelemetry and
// Datadog tracers) or Zipkin's B3 headers. A service that was given a collector (`--otlp-endpoint`) makes a
// server span, child of that context, for each sampled call, passes its context on to the calls it makes
// (GraphQL backends), and exports its spans in batches over OTLP/HTTP (JSON) to the collector.
//
// Hand-written rather than @opentelemetry/sdk-trace-node: the services read two headers and write one JSON
// document a second; the SDK's context manager (async hooks) and span processors would cost every call
// whether sampled or not (docs/decisions.md). Without a collector there is no Tracer and the services'
// only cost is one `undefined` check per call.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../../common/log.js';

/** A sampled span's context, as it came (B3 ids may be 64-bit). */
export interface SpanContext {
  /** 32 hex digits (a 64-bit B3 trace id padded on the left, as Zipkin and OTLP collectors do) */
  traceId: string;
  spanId: string;
  /** the context came as B3 headers: pass it on the same way */
  b3?: { traceId: string };
}

/** Reads a request header by lower-case name. */
export interface HeaderSource {
  header(name: string): string | undefined;
}

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})/;
const HEX_ID = /^([0-9a-f]{16}|[0-9a-f]{32})$/;
const ZERO_TRACE = '00000000000000000000000000000000';

/** The sampled context in `headers`, or undefined (none, malformed, or not sampled). */
export function extractContext(headers: HeaderSource): SpanContext | undefined {
  const tp = headers.header('traceparent');
  if (tp) {
    const m = TRACEPARENT.exec(tp);
    if (!m || m[1] === ZERO_TRACE || (parseInt(m[3]!, 16) & 1) === 0) return undefined;
    return { traceId: m[1]!, spanId: m[2]! };
  }
  const single = headers.header('b3');
  if (single) {
    const [traceId, spanId, sampled] = single.split('-');
    if (!traceId || !spanId || !HEX_ID.test(traceId) || !/^[0-9a-f]{16}$/.test(spanId) || sampled === '0') return undefined;
    return { traceId: traceId.padStart(32, '0'), spanId, b3: { traceId } };
  }
  const traceId = headers.header('x-b3-traceid');
  const spanId = headers.header('x-b3-spanid');
  if (!traceId || !spanId || !HEX_ID.test(traceId) || !/^[0-9a-f]{16}$/.test(spanId)) return undefined;
  if (headers.header('x-b3-sampled') === '0' && headers.header('x-b3-flags') !== '1') return undefined;
  return { traceId: traceId.padStart(32, '0'), spanId, b3: { traceId } };
}

/** OTLP's SpanKind */
const SERVER = 2;
/** OTLP's Status codes */
const STATUS_OK = 1;
const STATUS_ERROR = 2;

type AttributeValue = string | number | boolean;

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: { key: string; value: { stringValue: string } | { intValue: string } | { boolValue: boolean } }[];
  status: { code: number; message?: string };
}

function unixNanos(ms: number): string {
  const whole = Math.floor(ms);
  return (BigInt(whole) * 1_000_000n + BigInt(Math.round((ms - whole) * 1e6))).toString();
}

function otlpValue(v: AttributeValue): OtlpSpan['attributes'][number]['value'] {
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  return Number.isInteger(v) ? { intValue: String(v) } : { stringValue: String(v) };
}

/** A span being timed; end() it once. */
export class Span {
  readonly spanId = randomBytes(8).toString('hex');
  private readonly startMs = performance.timeOrigin + performance.now();
  private readonly attributes: Record<string, AttributeValue> = {};
  private ended = false;

  constructor(
    private readonly tracer: Tracer,
    readonly name: string,
    readonly parent: SpanContext,
  ) {}

  get traceId(): string {
    return this.parent.traceId;
  }

  set(key: string, value: AttributeValue): this {
    this.attributes[key] = value;
    return this;
  }

  /** Headers that make a call this span's child: traceparent, and B3 when the context came as B3. */
  propagation(): Record<string, string> {
    const out: Record<string, string> = { traceparent: `00-${this.parent.traceId}-${this.spanId}-01` };
    if (this.parent.b3) {
      out['x-b3-traceid'] = this.parent.b3.traceId;
      out['x-b3-spanid'] = this.spanId;
      out['x-b3-parentspanid'] = this.parent.spanId;
      out['x-b3-sampled'] = '1';
    }
    return out;
  }

  end(error?: string): void {
    if (this.ended) return;
    this.ended = true;
    this.tracer.record({
      traceId: this.parent.traceId,
      spanId: this.spanId,
      parentSpanId: this.parent.spanId,
      name: this.name,
      kind: SERVER,
      startTimeUnixNano: unixNanos(this.startMs),
      endTimeUnixNano: unixNanos(performance.timeOrigin + performance.now()),
      attributes: Object.entries(this.attributes).map(([key, v]) => ({ key, value: otlpValue(v) })),
      status: error === undefined ? { code: STATUS_OK } : { code: STATUS_ERROR, message: error },
    });
  }
}

export interface TracerOptions {
  /** the collector's OTLP/HTTP base URL (http://host:4318), or its full /v1/traces URL */
  endpoint: string;
  /** the `service.name` of the spans */
  serviceName: string;
  logger: Logger;
  /** export at most this often (ms). Default 1000 */
  flushIntervalMs?: number;
  /** spans kept waiting for export; more are dropped (and counted). Default 2048 */
  maxQueue?: number;
}

/** Makes and exports the spans of one service. */
export class Tracer {
  private queue: OtlpSpan[] = [];
  private readonly url: string;
  private readonly timer: NodeJS.Timeout;
  private readonly maxQueue: number;
  private inFlight: Promise<void> | undefined;
  private lastErrorLogAt = 0;
  /** spans dropped because the queue was full */
  dropped = 0;
  exported = 0;

  constructor(private readonly options: TracerOptions) {
    const base = options.endpoint.replace(/\/+$/, '');
    this.url = base.endsWith('/v1/traces') ? base : `${base}/v1/traces`;
    this.maxQueue = options.maxQueue ?? 2048;
    this.timer = setInterval(() => void this.flush(), options.flushIntervalMs ?? 1000);
    this.timer.unref();
  }

  /** A server span for a call whose headers carry a sampled context; undefined otherwise. */
  startServerSpan(name: string, headers: HeaderSource): Span | undefined {
    const parent = extractContext(headers);
    return parent ? new Span(this, name, parent) : undefined;
  }

  record(span: OtlpSpan): void {
    if (this.queue.length >= this.maxQueue) {
      this.dropped++;
      return;
    }
    this.queue.push(span);
  }

  /** Sends what is queued (one request at a time). */
  async flush(): Promise<void> {
    if (this.inFlight) await this.inFlight;
    if (this.queue.length === 0) return;
    const spans = this.queue;
    this.queue = [];
    const body = JSON.stringify({
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: this.options.serviceName } }] },
          scopeSpans: [{ scope: { name: 'legate' }, spans }],
        },
      ],
    });
    this.inFlight = fetch(this.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(5000),
    })
      .then(async (res) => {
        await res.arrayBuffer();
        if (!res.ok) throw new Error(`the collector answered HTTP ${res.status}`);
        this.exported += spans.length;
      })
      .catch((err: unknown) => {
        const now = Date.now();
        if (now - this.lastErrorLogAt < 10_000) return;
        this.lastErrorLogAt = now;
        this.options.logger.warn('cannot export spans', { url: this.url, error: err instanceof Error ? err.message : String(err) });
      })
      .finally(() => {
        this.inFlight = undefined;
      });
    await this.inFlight;
  }

  /** Stops the timer and exports what is left. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}

/** The collector of `--otlp-endpoint`, else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT; undefined: no tracing. */
export function otlpEndpoint(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  return flag || env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_ENDPOINT'] || undefined;
}

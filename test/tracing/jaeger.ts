// A real Jaeger (v2, built from its Go module by scripts/jaeger-tool.sh) for the suites that export spans:
// in-memory storage, OTLP gRPC and HTTP receivers and a Zipkin receiver on random loopback ports, and the
// query API (/api/traces) the tests read the traces back from. Shared by test/e2e/tracing.test.ts and bench.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually, freePort, stopProcess } from '../support/util.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const JAEGER = path.join(ROOT, '.cache', 'tracing', 'bin', 'jaeger');

/** Builds Jaeger if needed (minutes, once). */
export function ensureJaeger(): void {
  const result = spawnSync(path.join(ROOT, 'scripts', 'jaeger-tool.sh'), { stdio: 'inherit' });
  if (result.status !== 0) throw new Error('scripts/jaeger-tool.sh failed: see its output above');
}

/** A span as Jaeger's query API returns it. */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references?: { refType: string; traceID: string; spanID: string }[];
  processID: string;
  tags?: { key: string; value: unknown }[];
}

export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string }>;
}

export interface Jaeger {
  pid: number;
  ports: { otlpGrpc: number; otlpHttp: number; zipkin: number; query: number };
  /** the traces with a span of `service` (newest first, as the query API answers) */
  traces(service: string): Promise<JaegerTrace[]>;
  log(): string;
  stop(): Promise<void>;
}

function config(p: Jaeger['ports']): string {
  return `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp, zipkin]
      processors: []
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${p.query}
    grpc:
      endpoint: 127.0.0.1:0
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${p.otlpGrpc}
      http:
        endpoint: 127.0.0.1:${p.otlpHttp}
  zipkin:
    endpoint: 127.0.0.1:${p.zipkin}
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`;
}

export async function startJaeger(): Promise<Jaeger> {
  ensureJaeger();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-jaeger-'));
  const ports = { otlpGrpc: await freePort(), otlpHttp: await freePort(), zipkin: await freePort(), query: await freePort() };
  const file = path.join(dir, 'config.yaml');
  fs.writeFileSync(file, config(ports));
  const child: ChildProcess = spawn(JAEGER, ['--config', `file:${file}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const stop = async (): Promise<void> => {
    await stopProcess(child, 'SIGTERM', 5000);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const query = async <T>(pathAndQuery: string): Promise<T> => {
    const res = await fetch(`http://127.0.0.1:${ports.query}${pathAndQuery}`);
    if (!res.ok) throw new Error(`jaeger ${pathAndQuery}: HTTP ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  try {
    await eventually(
      'jaeger to start',
      async () => {
        if (child.exitCode !== null) throw new Error(`jaeger exited with ${child.exitCode}: ${output}`);
        await query('/api/services');
        return true;
      },
      30_000,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    pid: child.pid ?? 0,
    ports,
    traces: async (service) =>
      (await query<{ data: JaegerTrace[] | null }>(`/api/traces?service=${encodeURIComponent(service)}&limit=100&lookback=1h`)).data ?? [],
    log: () => output,
    stop,
  };
}

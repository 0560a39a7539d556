// The load generator: wrk (installed with apt-get when missing and we are root), or autocannon from
// npm when wrk cannot be had. Both report through the same LoadStats.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startProcess } from './procs.js';

/** One request shape for the load generator: method, headers, body, or variants taken in turn. */
export interface LoadRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  variants?: { headers?: Record<string, string>; body?: string }[];
}

export interface LoadSpec {
  port: number;
  path: string;
  /** Host header (default: the tool's own, 127.0.0.1:PORT) */
  host?: string | undefined;
  /** method, headers, body (default: a plain GET) */
  request?: LoadRequest | undefined;
  connections: number;
  threads: number;
  durationS: number;
  /** taskset CPU list for the load generator */
  cpus?: string | undefined;
}

export interface LoadStats {
  requests: number;
  durationS: number;
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  /** socket errors + timeouts + non-2xx/3xx responses */
  errors: number;
  errorDetail: Record<string, number>;
}

export interface LoadTool {
  name: 'wrk' | 'autocannon';
  version: string;
  run(spec: LoadSpec): Promise<LoadStats>;
}

function onPath(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

function tryInstallWrk(log: (msg: string) => void): boolean {
  if (process.getuid?.() !== 0 || !onPath('apt-get')) return false;
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  log('wrk not found; installing it with apt-get (we are root)');
  const install = (): boolean =>
    spawnSync('apt-get', ['install', '-y', '-qq', 'wrk'], { stdio: ['ignore', 'ignore', 'inherit'], env, timeout: 180_000 }).status === 0;
  if (install()) return onPath('wrk');
  log('apt-get install failed; running apt-get update and trying again');
  spawnSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env, timeout: 180_000 });
  return install() && onPath('wrk');
}

/** Picks wrk (installing it if possible), else autocannon. BENCH_LOAD_TOOL=wrk|autocannon forces one. */
export function findLoadTool(workDir: string, log: (msg: string) => void): LoadTool {
  const forced = process.env['BENCH_LOAD_TOOL'];
  if (forced !== 'autocannon') {
    if (onPath('wrk') || tryInstallWrk(log)) return wrkTool(workDir);
    if (forced === 'wrk') throw new Error('BENCH_LOAD_TOOL=wrk but wrk is not installed and cannot be installed');
    log('wrk cannot be had; falling back to autocannon (npm)');
  }
  return autocannonTool();
}

// ---- wrk ----

// done() prints one JSON line; latency is in microseconds.
const WRK_SCRIPT = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,' ..
    '"p50":%d,"p90":%d,"p99":%d,"max":%d}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
`;

/** A Lua string literal: printable ASCII as is, every other byte as a decimal escape. */
function luaString(s: string): string {
  let out = '"';
  for (const b of Buffer.from(s, 'utf8'))
    out += b >= 0x20 && b < 0x7f && b !== 0x22 && b !== 0x5c ? String.fromCharCode(b) : `\\${String(b).padStart(3, '0')}`;
  return out + '"';
}

const luaTable = (h: Record<string, string> | undefined): string =>
  `{${Object.entries(h ?? {})
    .map(([k, v]) => `[${luaString(k)}] = ${luaString(v)}`)
    .join(', ')}}`;

/**
 * The request part of a wrk script. A fixed request is set on the `wrk` table (wrk pre-formats it once);
 * variants are pre-formatted in init() and handed out in turn by request(), as wrk's SCRIPTING advises.
 */
export function wrkRequestScript(r: LoadRequest | undefined): string {
  if (!r) return '';
  const lines: string[] = [];
  if (r.method) lines.push(`wrk.method = ${luaString(r.method)}`);
  if (r.body !== undefined) lines.push(`wrk.body = ${luaString(r.body)}`);
  for (const [k, v] of Object.entries(r.headers ?? {})) lines.push(`wrk.headers[${luaString(k)}] = ${luaString(v)}`);
  if (r.variants?.length) {
    lines.push(
      'local variants = {',
      ...r.variants.map((v) => `  { h = ${luaTable(v.headers)}, b = ${v.body !== undefined ? luaString(v.body) : 'nil'} },`),
      '}',
      'local reqs = {}',
      'local n = 0',
      'init = function(args)',
      '  for i, v in ipairs(variants) do',
      '    local h = {}',
      '    for k, x in pairs(wrk.headers) do h[k] = x end',
      '    for k, x in pairs(v.h) do h[k] = x end',
      '    reqs[i] = wrk.format(nil, nil, h, v.b)',
      '  end',
      'end',
      'request = function()',
      '  n = n % #reqs + 1',
      '  return reqs[n]',
      'end',
    );
  }
  return lines.join('\n') + '\n';
}

function wrkTool(workDir: string): LoadTool {
  const scripts = new Map<string, string>();
  /** One script file per distinct request (its request part, then the reporting done() hook). */
  const scriptFor = (r: LoadRequest | undefined): string => {
    const text = wrkRequestScript(r) + WRK_SCRIPT;
    const key = createHash('sha256').update(text).digest('hex').slice(0, 16);
    let file = scripts.get(key);
    if (!file) {
      file = path.join(workDir, `wrk-${key}.lua`);
      fs.writeFileSync(file, text);
      scripts.set(key, file);
    }
    return file;
  };
  const v = spawnSync('wrk', ['-v'], { encoding: 'utf8' });
  const version = /wrk\s+(\S+)/.exec(`${v.stdout}${v.stderr}`)?.[1] ?? 'unknown';
  return {
    name: 'wrk',
    version,
    run: async (spec) => {
      const args = [`-t${spec.threads}`, `-c${spec.connections}`, `-d${spec.durationS}s`, '--timeout', '5s', '-s', scriptFor(spec.request)];
      if (spec.host) args.push('-H', `Host: ${spec.host}`);
      args.push(`http://127.0.0.1:${spec.port}${spec.path}`);
      const out = await runToEnd('wrk', 'wrk', args, spec.cpus, spec.durationS * 1000 + 30_000);
      const line = /BENCH_JSON (\{.*\})/.exec(out)?.[1];
      if (!line) throw new Error(`wrk printed no result:\n${out}`);
      const r = JSON.parse(line) as Record<string, number>;
      const n = (k: string): number => r[k] ?? 0;
      const durationS = n('duration_us') / 1e6;
      const errorDetail = { connect: n('connect'), read: n('read'), write: n('write'), non2xx3xx: n('status'), timeout: n('timeout') };
      return {
        requests: n('requests'),
        durationS,
        rps: n('requests') / durationS,
        p50Ms: n('p50') / 1000,
        p90Ms: n('p90') / 1000,
        p99Ms: n('p99') / 1000,
        maxMs: n('max') / 1000,
        errors: Object.values(errorDetail).reduce((a, b) => a + b, 0),
        errorDetail,
      };
    },
  };
}

// ---- autocannon ----

function autocannonTool(): LoadTool {
  const local = path.resolve('node_modules', '.bin', 'autocannon');
  const [cmd, pre]: [string, string[]] = fs.existsSync(local) ? [local, []] : ['npx', ['--yes', 'autocannon@8']];
  return {
    name: 'autocannon',
    version: fs.existsSync(local) ? 'local' : 'npx autocannon@8',
    run: async (spec) => {
      // autocannon is single-threaded JS: `threads` maps to its worker count only when > 1
      const args = [...pre, '-j', '-c', String(spec.connections), '-d', String(spec.durationS), '-t', '5'];
      if (spec.threads > 1) args.push('-w', String(spec.threads));
      if (spec.host) args.push('-H', `host=${spec.host}`);
      // autocannon's command line has no request rotation: the first variant is used for every request
      const req = spec.request;
      const first = req?.variants?.[0];
      if (req?.method) args.push('-m', req.method);
      for (const [k, v] of Object.entries({ ...req?.headers, ...first?.headers })) args.push('-H', `${k}=${v}`);
      const body = first?.body ?? req?.body;
      if (body !== undefined) args.push('-b', body);
      args.push(`http://127.0.0.1:${spec.port}${spec.path}`);
      const out = await runToEnd('autocannon', cmd, args, spec.cpus, spec.durationS * 1000 + 120_000);
      const start = out.indexOf('{"');
      if (start < 0) throw new Error(`autocannon printed no JSON:\n${out}`);
      const r = JSON.parse(out.slice(start, out.lastIndexOf('}') + 1)) as {
        duration: number;
        requests: { total: number };
        latency: { p50: number; p90: number; p99: number; max: number };
        errors: number;
        timeouts: number;
        non2xx: number;
      };
      const errorDetail = { socket: r.errors, timeout: r.timeouts, non2xx: r.non2xx };
      return {
        requests: r.requests.total,
        durationS: r.duration,
        rps: r.requests.total / r.duration,
        p50Ms: r.latency.p50,
        p90Ms: r.latency.p90,
        p99Ms: r.latency.p99,
        maxMs: r.latency.max,
        errors: r.errors + r.timeouts + r.non2xx,
        errorDetail,
      };
    },
  };
}

async function runToEnd(name: string, command: string, args: string[], cpus: string | undefined, timeoutMs: number): Promise<string> {
  const p = startProcess(name, command, { args, cpus });
  const exited = new Promise<number | null>((resolve) => p.child.once('close', (code) => resolve(code)));
  const timer = setTimeout(() => void p.stop(1000), timeoutMs);
  try {
    const code = await exited;
    if (code !== 0) throw new Error(`${name} exited with ${code}:\n${p.output()}`);
    return p.output();
  } finally {
    clearTimeout(timer);
    await p.stop();
  }
}

export function tempWorkDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'legate-bench-'));
}

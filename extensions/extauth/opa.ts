// Open Policy Agent for the opaAuth and opaServerAuth steps.
//
// opaAuth (Rego modules + a query, evaluated inside extauth): the modules and a generated module wrapping the
// query (`allow { r := (<query>); r == true }`: only a `true` value allows, as Gloo) are compiled to
// WebAssembly by the `opa` binary (`opa build -t wasm`; the binary is found at $LEGATE_OPA, else `opa` on
// PATH) when the config loads, and evaluated in-process with
// @open-policy-agent/opa-wasm: no network hop per decision. docs/decisions.md has the measurement against
// asking an OPA server. Modules in Rego v1 compile as they are; Gloo's examples are Rego v0 (`allow { … }`),
// so a module set that does not compile as v1 is compiled again with --v0-compatible.
//
// opaServerAuth: POST {input} to the OPA server's data API; allowed when `result` is true.
//
// The input document is Gloo's: `check_request` (Envoy's CheckRequest as JSON), `http_request` (its
// attributes.request.http), and `state` (what earlier steps found).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { loadPolicy, type LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { OPA_QUERY_PACKAGE, opaQueryModule as queryModule } from '../../common/opa-query.js';

const ENTRYPOINT = `${OPA_QUERY_PACKAGE}/allow`;
/** How long an `opa build` may take before the config is refused. */
const BUILD_TIMEOUT_MS = 60_000;

/** What a policy sees of the request (Envoy's AttributeContext.HttpRequest, as JSON). */
export interface OpaHttpRequest {
  method: string;
  path: string;
  host: string;
  scheme: string;
  headers: Record<string, string>;
  body?: string;
}

/** Gloo's input document. */
export function opaInput(http: OpaHttpRequest, state: Record<string, unknown> = {}): Record<string, unknown> {
  return { check_request: { attributes: { request: { http } } }, http_request: http, state };
}

/** opaInput as JSON text, the request serialized once for both places it appears (the per-check path). */
export function opaInputJson(http: OpaHttpRequest, state: Record<string, unknown> = {}): string {
  const h = JSON.stringify(http);
  return `{"check_request":{"attributes":{"request":{"http":${h}}}},"http_request":${h},"state":${JSON.stringify(state)}}`;
}

function opaBinary(): string {
  return process.env['LEGATE_OPA'] || 'opa';
}

function run(bin: string, args: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(bin, args, { cwd, timeout: BUILD_TIMEOUT_MS, maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
      if (!err) return resolve();
      // opa prints compile errors on stdout
      const why = (stderr.trim() || stdout.trim() || err.message).split('\n').slice(0, 6).join(' | ');
      reject(new Error((err as NodeJS.ErrnoException).code === 'ENOENT' ? `no opa binary at ${bin} (set LEGATE_OPA)` : why));
    });
  });
}

/** The file named `name` in a tar archive (ustar: 512-byte headers, sizes in octal). */
function tarEntry(tar: Buffer, name: string): Buffer | undefined {
  let off = 0;
  while (off + 512 <= tar.length) {
    const header = tar.subarray(off, off + 512);
    if (header.every((b) => b === 0)) return undefined;
    const entry = header.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
    const size = parseInt(header.subarray(124, 136).toString('utf8').replace(/\0.*$/s, '').trim() || '0', 8);
    const start = off + 512;
    if (entry.replace(/^\.?\//, '') === name) return tar.subarray(start, start + size);
    off = start + Math.ceil(size / 512) * 512;
  }
  return undefined;
}

const compiled = new Map<string, Promise<Buffer>>();

/**
 * Compiles modules + query to a wasm policy with entrypoint `legate_opa_query/allow`; identical inputs share
 * one build. Rejects with opa's own message (the first lines) when the Rego does not compile.
 */
export function compileOpaWasm(modules: Readonly<Record<string, string>>, query: string): Promise<Buffer> {
  const key = createHash('sha256')
    .update(JSON.stringify([modules, query]))
    .digest('hex');
  let p = compiled.get(key);
  if (!p) {
    p = build(modules, query);
    compiled.set(key, p);
    p.catch(() => compiled.delete(key));
  }
  return p;
}

async function build(modules: Readonly<Record<string, string>>, query: string): Promise<Buffer> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'legate-opa-'));
  try {
    const names = Object.keys(modules).map((_, i) => `m${i}.rego`);
    await Promise.all(Object.values(modules).map((text, i) => fs.writeFile(path.join(dir, names[i]!), text)));
    const attempt = async (v1: boolean, strict: boolean): Promise<Buffer> => {
      await fs.writeFile(path.join(dir, 'query.rego'), queryModule(query, v1, strict));
      const out = path.join(dir, 'bundle.tar.gz');
      const args = ['build', '-t', 'wasm', '-e', ENTRYPOINT, '-o', out, ...(v1 ? [] : ['--v0-compatible']), ...names, 'query.rego'];
      await run(opaBinary(), args, dir);
      const wasm = tarEntry(gunzipSync(await fs.readFile(out)), 'policy.wasm');
      if (!wasm) throw new Error('opa build made no policy.wasm');
      return Buffer.from(wasm);
    };
    // Rego v1 first, then v0 (Gloo's examples); in each, the strict form first, then the plain one
    // (only a query that cannot be a value falls back to the plain form: a non-boolean value never allows)
    let first: unknown;
    for (const v1 of [true, false]) {
      try {
        return await attempt(v1, true);
      } catch (err) {
        if (err instanceof Error && err.message.startsWith('no opa binary')) throw err;
        first ??= err;
        if (!(err instanceof Error) || !err.message.includes('query.rego') || !/rego_parse_error/.test(err.message)) continue;
      }
      try {
        return await attempt(v1, false);
      } catch {
        // the strict form's error says more
      }
    }
    throw first;
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/**
 * Builtins OPA's wasm target leaves to the host: io.jwt.decode (Gloo's OIDC + OPA guide decodes input.state.jwt
 * with it), as OPA defines it: [header, payload, signature as hex]; not a compact JWS is an error (undefined).
 */
const HOST_BUILTINS: Record<string, (...args: unknown[]) => unknown> = {
  'io.jwt.decode': (jwt: unknown) => {
    if (typeof jwt !== 'string') throw new Error('io.jwt.decode: operand must be a string');
    const parts = jwt.split('.');
    if (parts.length !== 3) throw new Error('io.jwt.decode: encoded JWT had no period separators');
    const json = (seg: string): unknown => JSON.parse(Buffer.from(seg, 'base64url').toString('utf8'));
    return [json(parts[0]!), json(parts[1]!), Buffer.from(parts[2]!, 'base64url').toString('hex')];
  },
};
/** What evaluateJson uses of opa-wasm's LoadedPolicy (1.10, ABI 1.2's opa_eval): checked once at load. */
interface LoadedPolicyInternals {
  minorVersion: number;
  mem: WebAssembly.Memory;
  wasmInstance: WebAssembly.Instance;
  dataAddr: number;
  dataHeapPtr: number;
}

type OpaEval = (reserved: number, entrypoint: number, data: number, input: number, len: number, heap: number, format: number) => number;

const utf8 = new TextEncoder();
/** opa_eval's result when the query held (the generated module's only rule is a boolean). */
const ALLOWED = Buffer.from('[{"result":true}]\0');

/** A compiled opaAuth policy: evaluate(input) -> allowed. */
export class OpaWasmPolicy {
  /** the ABI 1.2 fast path without opa-wasm's per-call JSON.stringify, encoder, decoder and JSON.parse */
  private readonly direct: { p: LoadedPolicyInternals; opaEval: OpaEval } | undefined;

  private constructor(private readonly policy: LoadedPolicy) {
    const p = policy as unknown as Partial<LoadedPolicyInternals>;
    const opaEval = (p.wasmInstance?.exports as Record<string, unknown> | undefined)?.['opa_eval'];
    const ok =
      typeof p.minorVersion === 'number' &&
      p.minorVersion >= 2 &&
      p.mem instanceof WebAssembly.Memory &&
      typeof p.dataAddr === 'number' &&
      typeof p.dataHeapPtr === 'number' &&
      typeof opaEval === 'function';
    this.direct = ok ? { p: p as LoadedPolicyInternals, opaEval: opaEval as OpaEval } : undefined;
  }

  static async load(modules: Readonly<Record<string, string>>, query: string): Promise<OpaWasmPolicy> {
    const wasm = await compileOpaWasm(modules, query);
    return new OpaWasmPolicy(await loadPolicy(wasm, undefined, HOST_BUILTINS));
  }

  /** true only when the query held (a `true` result); throws when evaluation fails (the step denies). */
  evaluate(input: unknown): boolean {
    const result = this.policy.evaluate(input) as { result?: unknown }[];
    return Array.isArray(result) && result[0]?.result === true;
  }

  /**
   * evaluate() of an input given as JSON text (opaInputJson): written straight into the policy's memory and
   * the result compared as bytes (as opa-wasm's own fast path does, minus its allocations and JSON round trip);
   * any other result is parsed as evaluate() would.
   */
  evaluateJson(json: string): boolean {
    const d = this.direct;
    if (d === undefined) return this.evaluate(JSON.parse(json));
    const { p, opaEval } = d;
    const at = p.dataHeapPtr;
    const max = json.length * 3;
    const delta = at + max - p.mem.buffer.byteLength;
    if (delta > 0) p.mem.grow(Math.ceil(delta / 65536));
    const { written } = utf8.encodeInto(json, new Uint8Array(p.mem.buffer, at, max));
    const ret = opaEval(0, 0, p.dataAddr, at, written, at + written, 0);
    const mem = new Uint8Array(p.mem.buffer);
    if (Buffer.from(mem.buffer, ret, ALLOWED.length).equals(ALLOWED)) return true;
    let end = ret;
    while (mem[end] !== 0) end++;
    const result = JSON.parse(Buffer.from(mem.buffer, ret, end - ret).toString('utf8')) as { result?: unknown }[];
    return Array.isArray(result) && result[0]?.result === true;
  }
}

export type OpaServerAnswer = { allowed: boolean; result: unknown } | { error: string };

/** POST {input} to an OPA server's data API URL. Never rejects: a failure is `{error}`. */
export async function askOpaServer(url: string, input: unknown, timeoutMs: number): Promise<OpaServerAnswer> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    if (res.status !== 200) return { error: `OPA answered ${res.status}` };
    const doc = JSON.parse(text) as { result?: unknown };
    return { allowed: doc.result === true, result: doc.result };
  } catch (err) {
    return { error: err instanceof Error ? `${err.name}: ${err.message}`.slice(0, 200) : 'error' };
  }
}

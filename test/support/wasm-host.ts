// A small proxy-wasm ABI 0.2.1 host for unit tests: loads a filter's .wasm in Node and drives it the way
// Envoy does (plugin start, then per request context_create -> request headers -> body* -> done ->
// delete), implementing the `env` imports the filters use: logs, plugin configuration buffer, request
// header map, local reply capture, counters, properties, shared data (one SharedData store can back
// several TestHosts, as Envoy's backs the VMs of every worker). Behaviour follows
// /work/shared/reference/proxy-wasm-abi.md (Envoy's host): buffers returned through ret_ptr_ptr are
// allocated with the module's `malloc` and never freed by the host; empty results are written as 0/0.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const WASM_SOURCES = join(REPO_ROOT, 'extensions/wasm');

// ------------------------------------------------------------------------------------------- building

function newestSourceMtime(dir: string): number {
  let newest = statSync(join(REPO_ROOT, 'asconfig.json')).mtimeMs;
  const walk = (d: string): void => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(p).mtimeMs);
    }
  };
  walk(dir);
  return newest;
}

/**
 * The path of `dist/wasm/<filter>.wasm` (what `make wasm` / `make setup` builds), compiled here with the
 * release target of asconfig.json when it is missing or older than a source under extensions/wasm.
 */
export function ensureWasm(filter: string): string {
  const out = join(REPO_ROOT, 'dist/wasm', `${filter}.wasm`);
  if (existsSync(out) && statSync(out).mtimeMs >= newestSourceMtime(WASM_SOURCES)) return out;
  execFileSync(
    process.execPath,
    [join(REPO_ROOT, 'node_modules/assemblyscript/bin/asc.js'), `extensions/wasm/${filter}/index.ts`, '--target', 'release', '-o', out],
    { cwd: REPO_ROOT, stdio: 'pipe' },
  );
  return out;
}

// ------------------------------------------------------------------------------------ ABI constants

export const Status = {
  Ok: 0,
  NotFound: 1,
  BadArgument: 2,
  InvalidMemoryAccess: 6,
  CasMismatch: 8,
} as const;

export const Action = { Continue: 0, Pause: 1 } as const;

export const LogLevel = { trace: 0, debug: 1, info: 2, warn: 3, error: 4, critical: 5 } as const;
export type LogLevelName = keyof typeof LogLevel;

const BUFFER_PLUGIN_CONFIGURATION = 7;
const BUFFER_HTTP_REQUEST_BODY = 0;
const MAP_REQUEST_HEADERS = 0;
const METRIC_COUNTER = 0;

// ------------------------------------------------------------------------------- module signatures

export type ValType = 'i32' | 'i64' | 'f32' | 'f64' | 'other';
export interface FuncSig {
  params: ValType[];
  results: ValType[];
}
export interface ModuleImport {
  module: string;
  name: string;
  kind: 'func' | 'table' | 'memory' | 'global';
  sig?: FuncSig;
}
export interface ModuleExport {
  name: string;
  kind: 'func' | 'table' | 'memory' | 'global';
  sig?: FuncSig;
}

/** Reads the type, import, function and export sections of a wasm binary (enough to check signatures). */
export function readSignatures(bytes: Uint8Array): { imports: ModuleImport[]; exports: ModuleExport[] } {
  let pos = 8; // magic + version
  const u32 = (): number => {
    let result = 0;
    let shift = 0;
    for (;;) {
      const b = bytes[pos++]!;
      result |= (b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result >>> 0;
      shift += 7;
    }
  };
  const name = (): string => {
    const n = u32();
    const s = new TextDecoder().decode(bytes.subarray(pos, pos + n));
    pos += n;
    return s;
  };
  const valType = (b: number): ValType => (b === 0x7f ? 'i32' : b === 0x7e ? 'i64' : b === 0x7d ? 'f32' : b === 0x7c ? 'f64' : 'other');
  const kinds = ['func', 'table', 'memory', 'global'] as const;
  const types: FuncSig[] = [];
  const funcTypes: number[] = []; // function index space: imports first
  const imports: ModuleImport[] = [];
  const exports: ModuleExport[] = [];
  while (pos < bytes.length) {
    const id = bytes[pos++]!;
    const size = u32();
    const end = pos + size;
    if (id === 1) {
      for (let n = u32(); n > 0; n--) {
        pos++; // 0x60
        const params: ValType[] = [];
        for (let p = u32(); p > 0; p--) params.push(valType(bytes[pos++]!));
        const results: ValType[] = [];
        for (let r = u32(); r > 0; r--) results.push(valType(bytes[pos++]!));
        types.push({ params, results });
      }
    } else if (id === 2) {
      for (let n = u32(); n > 0; n--) {
        const module = name();
        const field = name();
        const kind = kinds[bytes[pos++]!] ?? 'func';
        if (kind === 'func') {
          const t = u32();
          funcTypes.push(t);
          imports.push({ module, name: field, kind, sig: types[t]! });
        } else {
          imports.push({ module, name: field, kind });
          pos = skipImportDesc(bytes, pos, kind);
        }
      }
    } else if (id === 3) {
      for (let n = u32(); n > 0; n--) funcTypes.push(u32());
    } else if (id === 7) {
      for (let n = u32(); n > 0; n--) {
        const field = name();
        const kind = kinds[bytes[pos++]!] ?? 'func';
        const index = u32();
        exports.push(kind === 'func' ? { name: field, kind, sig: types[funcTypes[index]!]! } : { name: field, kind });
      }
    }
    pos = end;
  }
  return { imports, exports };
}

function skipImportDesc(bytes: Uint8Array, pos: number, kind: 'table' | 'memory' | 'global'): number {
  const limits = (p: number): number => {
    const flags = bytes[p++]!;
    while (bytes[p++]! & 0x80);
    if (flags & 1) while (bytes[p++]! & 0x80);
    return p;
  };
  if (kind === 'table') return limits(pos + 1);
  if (kind === 'memory') return limits(pos);
  return pos + 2; // global: valtype, mutability
}

const i32 = 'i32' as const;
/** The ABI 0.2.1 signatures as Envoy's host checks them (imports from `env`, and the callbacks). */
export const ABI_IMPORTS: Readonly<Record<string, FuncSig>> = {
  proxy_log: { params: [i32, i32, i32], results: [i32] },
  proxy_get_log_level: { params: [i32], results: [i32] },
  proxy_get_buffer_bytes: { params: [i32, i32, i32, i32, i32], results: [i32] },
  proxy_get_header_map_value: { params: [i32, i32, i32, i32, i32], results: [i32] },
  proxy_get_header_map_pairs: { params: [i32, i32, i32], results: [i32] },
  proxy_replace_header_map_value: { params: [i32, i32, i32, i32, i32], results: [i32] },
  proxy_remove_header_map_value: { params: [i32, i32, i32], results: [i32] },
  proxy_get_current_time_nanoseconds: { params: [i32], results: [i32] },
  proxy_send_local_response: { params: [i32, i32, i32, i32, i32, i32, i32, i32], results: [i32] },
  proxy_get_property: { params: [i32, i32, i32, i32], results: [i32] },
  proxy_define_metric: { params: [i32, i32, i32, i32], results: [i32] },
  proxy_increment_metric: { params: [i32, 'i64'], results: [i32] },
  proxy_get_shared_data: { params: [i32, i32, i32, i32, i32], results: [i32] },
  proxy_set_shared_data: { params: [i32, i32, i32, i32, i32], results: [i32] },
};
export const ABI_EXPORTS: Readonly<Record<string, FuncSig>> = {
  proxy_abi_version_0_2_1: { params: [], results: [] },
  malloc: { params: [i32], results: [i32] },
  _initialize: { params: [], results: [] },
  proxy_on_context_create: { params: [i32, i32], results: [] },
  proxy_on_vm_start: { params: [i32, i32], results: [i32] },
  proxy_on_configure: { params: [i32, i32], results: [i32] },
  proxy_on_request_headers: { params: [i32, i32, i32], results: [i32] },
  proxy_on_request_body: { params: [i32, i32, i32], results: [i32] },
  proxy_on_request_trailers: { params: [i32, i32], results: [i32] },
  proxy_on_response_headers: { params: [i32, i32, i32], results: [i32] },
  proxy_on_done: { params: [i32], results: [i32] },
  proxy_on_delete: { params: [i32], results: [] },
};

// ----------------------------------------------------------------------------------------- the host

/** The module's exports this host calls (body/trailers callbacks are optional, as for Envoy). */
interface FilterExports {
  memory: WebAssembly.Memory;
  _initialize: () => void;
  malloc: (size: number) => number;
  proxy_on_context_create: (contextId: number, parentId: number) => void;
  proxy_on_vm_start: (rootId: number, size: number) => number;
  proxy_on_configure: (rootId: number, size: number) => number;
  proxy_on_request_headers: (contextId: number, numHeaders: number, endOfStream: number) => number;
  proxy_on_request_body?: (contextId: number, bodySize: number, endOfStream: number) => number;
  proxy_on_request_trailers?: (contextId: number, numTrailers: number) => number;
  proxy_on_response_headers?: (contextId: number, numHeaders: number, endOfStream: number) => number;
  proxy_on_done: (contextId: number) => number;
  proxy_on_delete: (contextId: number) => void;
}

function asFilterExports(exports: WebAssembly.Exports): FilterExports {
  const required = [
    '_initialize',
    'malloc',
    'proxy_on_context_create',
    'proxy_on_vm_start',
    'proxy_on_configure',
    'proxy_on_request_headers',
    'proxy_on_done',
    'proxy_on_delete',
  ];
  for (const name of required) {
    if (typeof exports[name] !== 'function') throw new Error(`the module does not export ${name}`);
  }
  if (!(exports['memory'] instanceof WebAssembly.Memory)) throw new Error('the module does not export its memory');
  return exports as unknown as FilterExports;
}

export type HeaderList = ReadonlyArray<readonly [string, string]>;

export interface LocalReply {
  status: number;
  details: string;
  body: string;
  headers: Array<[string, string]>;
  grpcStatus: number;
}

export interface LogLine {
  level: number;
  message: string;
}

export interface TestRequest {
  headers: HeaderList;
  /** body chunks, each delivered in its own proxy_on_request_body call; the last one ends the stream */
  body?: ReadonlyArray<string | Uint8Array>;
  /** properties visible during the request (path segments joined by '.'), e.g. route metadata */
  properties?: Readonly<Record<string, string>>;
  /** when set (and no local reply was sent), proxy_on_response_headers runs with these properties added
   * (e.g. what ext_authz left in dynamic metadata) */
  response?: { properties?: Readonly<Record<string, string>> };
}

export interface RequestOutcome {
  /** the result of proxy_on_request_headers */
  headersAction: number;
  /** the result of each proxy_on_request_body call made */
  bodyActions: number[];
  /** the local reply the filter asked for, if any */
  reply: LocalReply | undefined;
  /** the request headers as the filter left them */
  headers: Array<[string, string]>;
}

export interface PluginOptions {
  rootId: string;
  /** the plugin configuration (StringValue, unwrapped); '' means none */
  configuration: string;
  name?: string;
  vmId?: string;
}

interface Metric {
  name: string;
  type: number;
  value: bigint;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * proxy-wasm shared data as Envoy's host (proxy-wasm-cpp-host SharedData) keeps it: one store per
 * process, keys scoped by vm_id, each value with a CAS token that every write bumps; a write with a
 * non-zero CAS that is no longer current fails with CasMismatch (a write to a missing key always
 * succeeds). Pass one instance to several TestHost.load calls to model Envoy's workers.
 */
export class SharedData {
  private readonly byVm = new Map<string, Map<string, { value: Uint8Array; cas: number }>>();
  private nextCas = 1;
  /** called before each set (tests use it to interleave another VM's write, as a race would) */
  beforeSet: ((vmId: string, key: string) => void) | undefined;

  get(vmId: string, key: string): { value: Uint8Array; cas: number } | undefined {
    return this.byVm.get(vmId)?.get(key);
  }

  set(vmId: string, key: string, value: Uint8Array, cas: number): number {
    const hook = this.beforeSet;
    if (hook) {
      this.beforeSet = undefined;
      hook(vmId, key);
    }
    let map = this.byVm.get(vmId);
    if (map === undefined) this.byVm.set(vmId, (map = new Map()));
    const current = map.get(key);
    if (current !== undefined && cas !== 0 && cas !== current.cas) return Status.CasMismatch;
    map.set(key, { value: value.slice(), cas: this.nextCas++ });
    return Status.Ok;
  }

  keys(vmId: string): string[] {
    return [...(this.byVm.get(vmId)?.keys() ?? [])].sort();
  }

  entries(vmId: string): Array<[string, Uint8Array]> {
    return [...(this.byVm.get(vmId)?.entries() ?? [])].map(([k, v]) => [k, v.value]);
  }
}

/** One filter VM with one plugin (root context), driven like Envoy drives it. */
export class TestHost {
  readonly logs: LogLine[] = [];
  /** host-side calls the module made, by import name */
  readonly calls = new Map<string, number>();
  private readonly exports: FilterExports;
  private readonly metricsById = new Map<number, Metric>();
  private readonly metricsByName = new Map<string, Metric>();
  private nextMetric = 1;
  private nextContextId = 1;
  private rootContextId = 0;
  private properties = new Map<string, Uint8Array>();
  private pluginConfiguration: Uint8Array | undefined; // only inside proxy_on_configure
  private requestHeaders: Array<[string, string]> | undefined; // only while a stream is live
  private streamProperties = new Map<string, Uint8Array>(); // only while a stream is live
  /** the clock the module sees (epoch ms); real time unless a test sets it */
  nowMs: number | undefined;
  private requestBody: Uint8Array | undefined; // only inside proxy_on_request_body
  private reply: LocalReply | undefined;
  private logLevel: number = LogLevel.info;
  private vmId = '';

  private constructor(
    instance: WebAssembly.Instance,
    readonly sharedData: SharedData,
  ) {
    this.exports = asFilterExports(instance.exports);
  }

  /** `sharedData`: the store this VM shares with others (a new one by default). */
  static async load(wasmPath: string, sharedData: SharedData = new SharedData()): Promise<TestHost> {
    const bytes = readFileSync(wasmPath);
    const module = await WebAssembly.compile(bytes);
    let host: TestHost | undefined;
    const self = (): TestHost => {
      if (host === undefined) throw new Error('host call before instantiation finished');
      return host;
    };
    const env = {
      proxy_log: (level: number, ptr: number, len: number): number => self().proxyLog(level, ptr, len),
      proxy_get_log_level: (retPtr: number): number => self().proxyGetLogLevel(retPtr),
      proxy_get_buffer_bytes: (type: number, start: number, max: number, retPtr: number, retSize: number): number =>
        self().proxyGetBufferBytes(type, start, max, retPtr, retSize),
      proxy_get_header_map_value: (map: number, keyPtr: number, keyLen: number, retPtr: number, retSize: number): number =>
        self().proxyGetHeaderMapValue(map, keyPtr, keyLen, retPtr, retSize),
      proxy_get_header_map_pairs: (map: number, retPtr: number, retSize: number): number =>
        self().proxyGetHeaderMapPairs(map, retPtr, retSize),
      proxy_replace_header_map_value: (map: number, keyPtr: number, keyLen: number, valPtr: number, valLen: number): number =>
        self().proxyReplaceHeaderMapValue(map, keyPtr, keyLen, valPtr, valLen),
      proxy_remove_header_map_value: (map: number, keyPtr: number, keyLen: number): number =>
        self().proxyRemoveHeaderMapValue(map, keyPtr, keyLen),
      proxy_get_current_time_nanoseconds: (retPtr: number): number => self().proxyGetCurrentTime(retPtr),
      proxy_send_local_response: (
        status: number,
        detailsPtr: number,
        detailsLen: number,
        bodyPtr: number,
        bodyLen: number,
        hdrsPtr: number,
        hdrsLen: number,
        grpcStatus: number,
      ): number => self().proxySendLocalResponse(status, detailsPtr, detailsLen, bodyPtr, bodyLen, hdrsPtr, hdrsLen, grpcStatus),
      proxy_get_property: (pathPtr: number, pathLen: number, retPtr: number, retSize: number): number =>
        self().proxyGetProperty(pathPtr, pathLen, retPtr, retSize),
      proxy_define_metric: (type: number, namePtr: number, nameLen: number, retId: number): number =>
        self().proxyDefineMetric(type, namePtr, nameLen, retId),
      proxy_increment_metric: (id: number, delta: bigint): number => self().proxyIncrementMetric(id, delta),
      proxy_get_shared_data: (keyPtr: number, keyLen: number, retPtr: number, retSize: number, retCas: number): number =>
        self().proxyGetSharedData(keyPtr, keyLen, retPtr, retSize, retCas),
      proxy_set_shared_data: (keyPtr: number, keyLen: number, valPtr: number, valLen: number, cas: number): number =>
        self().proxySetSharedData(keyPtr, keyLen, valPtr, valLen, cas),
    };
    // Only `env` functions from the ABI: any other import (env.abort, WASI, …) fails instantiation here as it
    // would fail loading in Envoy ("missing import").
    const instance = await WebAssembly.instantiate(module, { env });
    host = new TestHost(instance, sharedData);
    host.exports._initialize(); // Envoy calls _initialize when exported
    return host;
  }

  /** Starts the plugin as Envoy does: context_create(root, 0) -> vm_start -> configure. Returns configure's result. */
  startPlugin(options: PluginOptions): { vmStart: boolean; configured: boolean } {
    this.vmId = options.vmId ?? options.rootId;
    this.properties = new Map([
      ['plugin_root_id', encoder.encode(options.rootId)],
      ['plugin_name', encoder.encode(options.name ?? options.rootId)],
      ['plugin_vm_id', encoder.encode(options.vmId ?? options.rootId)],
    ]);
    this.rootContextId = this.nextContextId++;
    this.exports.proxy_on_context_create(this.rootContextId, 0);
    const vmStart = this.exports.proxy_on_vm_start(this.rootContextId, 0) !== 0;
    const config = encoder.encode(options.configuration);
    this.pluginConfiguration = config;
    let configured: boolean;
    try {
      configured = this.exports.proxy_on_configure(this.rootContextId, config.length) !== 0;
    } finally {
      this.pluginConfiguration = undefined;
    }
    return { vmStart, configured };
  }

  /** Ends the plugin: proxy_on_done + proxy_on_delete of the root context. */
  stopPlugin(): void {
    this.exports.proxy_on_done(this.rootContextId);
    this.exports.proxy_on_delete(this.rootContextId);
  }

  /** One request through the filter's lifecycle. Stops early (as Envoy does) after a local reply. */
  request(req: TestRequest): RequestOutcome {
    const id = this.nextContextId++;
    const chunks = (req.body ?? []).map((c) => (typeof c === 'string' ? encoder.encode(c) : c));
    this.reply = undefined;
    this.requestHeaders = req.headers.map(([k, v]): [string, string] => [k, v]);
    this.streamProperties = new Map(Object.entries(req.properties ?? {}).map(([k, v]) => [k, encoder.encode(v)]));
    const bodyActions: number[] = [];
    let headersAction: number;
    let headers: Array<[string, string]>;
    try {
      this.exports.proxy_on_context_create(id, this.rootContextId);
      headersAction = this.exports.proxy_on_request_headers(id, req.headers.length, chunks.length === 0 ? 1 : 0);
      const onBody = this.exports.proxy_on_request_body;
      for (let i = 0; i < chunks.length && this.reply === undefined; i++) {
        const chunk = chunks[i]!;
        if (onBody === undefined) continue;
        this.requestBody = chunk;
        try {
          bodyActions.push(onBody(id, chunk.length, i === chunks.length - 1 ? 1 : 0));
        } finally {
          this.requestBody = undefined;
        }
      }
      const onResponse = this.exports.proxy_on_response_headers;
      if (req.response !== undefined && this.reply === undefined && onResponse !== undefined) {
        for (const [k, v] of Object.entries(req.response.properties ?? {})) this.streamProperties.set(k, encoder.encode(v));
        onResponse(id, 1, 0);
      }
      this.exports.proxy_on_done(id);
      this.exports.proxy_on_delete(id);
    } finally {
      headers = this.requestHeaders ?? [];
      this.requestHeaders = undefined;
      this.streamProperties = new Map();
    }
    return { headersAction, bodyActions, reply: this.reply, headers };
  }

  /** A stream that never reaches this filter's request callbacks (an earlier filter answered it): Envoy
   * creates the context with the filter chain, then only calls proxy_on_done and proxy_on_delete. */
  requestAnsweredEarlier(): void {
    const id = this.nextContextId++;
    this.exports.proxy_on_context_create(id, this.rootContextId);
    this.exports.proxy_on_done(id);
    this.exports.proxy_on_delete(id);
  }

  /** A counter's value by the name the module defined (Envoy shows it as `wasmcustom.<name>`). */
  counter(name: string): number {
    const m = this.metricsByName.get(name);
    return m === undefined ? 0 : Number(m.value);
  }

  counterNames(): string[] {
    return [...this.metricsByName.keys()].sort();
  }

  /** Calls the module's allocator directly, as the host does before writing a buffer. */
  malloc(size: number): number {
    return this.exports.malloc(size);
  }

  /** The module's linear memory size in bytes (it only grows). */
  memoryBytes(): number {
    return this.exports.memory.buffer.byteLength;
  }

  setLogLevel(level: LogLevelName): void {
    this.logLevel = LogLevel[level];
  }

  // -------------------------------------------------------------------------------------- memory

  private view(): DataView {
    return new DataView(this.exports.memory.buffer);
  }

  private readBytes(ptr: number, len: number): Uint8Array {
    const mem = this.exports.memory.buffer;
    if (ptr < 0 || len < 0 || ptr + len > mem.byteLength) throw new RangeError(`out of bounds: ${ptr}+${len}`);
    return new Uint8Array(mem, ptr, len).slice();
  }

  private readString(ptr: number, len: number): string {
    return decoder.decode(this.readBytes(ptr, len));
  }

  /** Hands bytes to the module as Envoy does: allocated with its malloc, pointer and size written to the ret slots. */
  private returnBytes(bytes: Uint8Array, retPtr: number, retSize: number): number {
    if (bytes.length === 0) {
      this.view().setUint32(retPtr, 0, true);
      this.view().setUint32(retSize, 0, true);
      return Status.Ok;
    }
    const ptr = this.exports.malloc(bytes.length);
    if (ptr === 0) return Status.InvalidMemoryAccess;
    new Uint8Array(this.exports.memory.buffer, ptr, bytes.length).set(bytes);
    this.view().setUint32(retPtr, ptr, true);
    this.view().setUint32(retSize, bytes.length, true);
    return Status.Ok;
  }

  private count(name: string): void {
    this.calls.set(name, (this.calls.get(name) ?? 0) + 1);
  }

  // -------------------------------------------------------------------------------------- imports

  private proxyLog(level: number, ptr: number, len: number): number {
    this.count('proxy_log');
    if (level > 5) return Status.BadArgument;
    this.logs.push({ level, message: this.readString(ptr, len) });
    return Status.Ok;
  }

  private proxyGetLogLevel(retPtr: number): number {
    this.count('proxy_get_log_level');
    this.view().setUint32(retPtr, this.logLevel, true);
    return Status.Ok;
  }

  private proxyGetBufferBytes(type: number, start: number, max: number, retPtr: number, retSize: number): number {
    this.count('proxy_get_buffer_bytes');
    const buf =
      type === BUFFER_PLUGIN_CONFIGURATION ? this.pluginConfiguration : type === BUFFER_HTTP_REQUEST_BODY ? this.requestBody : undefined;
    if (buf === undefined) return Status.NotFound;
    return this.returnBytes(buf.subarray(start, Math.min(buf.length, start + max)), retPtr, retSize);
  }

  private proxyGetHeaderMapValue(map: number, keyPtr: number, keyLen: number, retPtr: number, retSize: number): number {
    this.count('proxy_get_header_map_value');
    if (map !== MAP_REQUEST_HEADERS || this.requestHeaders === undefined) return Status.BadArgument;
    const key = this.readString(keyPtr, keyLen).toLowerCase();
    const entry = this.requestHeaders.find(([k]) => k.toLowerCase() === key);
    if (entry === undefined) return Status.NotFound;
    return this.returnBytes(encoder.encode(entry[1]), retPtr, retSize);
  }

  private proxyReplaceHeaderMapValue(map: number, keyPtr: number, keyLen: number, valPtr: number, valLen: number): number {
    this.count('proxy_replace_header_map_value');
    if (map !== MAP_REQUEST_HEADERS || this.requestHeaders === undefined) return Status.BadArgument;
    const key = this.readString(keyPtr, keyLen).toLowerCase();
    const value = this.readString(valPtr, valLen);
    this.requestHeaders = this.requestHeaders.filter(([k]) => k.toLowerCase() !== key);
    this.requestHeaders.push([key, value]);
    return Status.Ok;
  }

  private proxyRemoveHeaderMapValue(map: number, keyPtr: number, keyLen: number): number {
    this.count('proxy_remove_header_map_value');
    if (map !== MAP_REQUEST_HEADERS || this.requestHeaders === undefined) return Status.BadArgument;
    const key = this.readString(keyPtr, keyLen).toLowerCase();
    this.requestHeaders = this.requestHeaders.filter(([k]) => k.toLowerCase() !== key);
    return Status.Ok;
  }

  private proxyGetCurrentTime(retPtr: number): number {
    this.count('proxy_get_current_time_nanoseconds');
    this.view().setBigUint64(retPtr, BigInt(Math.floor(this.nowMs ?? Date.now())) * 1_000_000n, true);
    return Status.Ok;
  }

  private proxyGetHeaderMapPairs(map: number, retPtr: number, retSize: number): number {
    this.count('proxy_get_header_map_pairs');
    const headers = map === MAP_REQUEST_HEADERS ? this.requestHeaders : undefined;
    return this.returnBytes(headers === undefined ? new Uint8Array(0) : encodePairs(headers), retPtr, retSize);
  }

  private proxySendLocalResponse(
    status: number,
    detailsPtr: number,
    detailsLen: number,
    bodyPtr: number,
    bodyLen: number,
    hdrsPtr: number,
    hdrsLen: number,
    grpcStatus: number,
  ): number {
    this.count('proxy_send_local_response');
    if (this.requestHeaders === undefined) return Status.BadArgument;
    if (this.reply !== undefined) throw new Error('a second local reply on the same stream');
    this.reply = {
      status,
      details: this.readString(detailsPtr, detailsLen).replace(/\s/g, '_'),
      body: this.readString(bodyPtr, bodyLen),
      headers: decodePairs(this.readBytes(hdrsPtr, hdrsLen)).map(([k, v]) => [k.toLowerCase(), v]),
      grpcStatus,
    };
    return Status.Ok;
  }

  private proxyGetProperty(pathPtr: number, pathLen: number, retPtr: number, retSize: number): number {
    this.count('proxy_get_property');
    const path = this.readString(pathPtr, pathLen).split('\0').join('.');
    const value = this.streamProperties.get(path) ?? this.properties.get(path);
    if (value === undefined) return Status.NotFound;
    return this.returnBytes(value, retPtr, retSize);
  }

  private proxyDefineMetric(type: number, namePtr: number, nameLen: number, retId: number): number {
    this.count('proxy_define_metric');
    if (type > 2) return Status.BadArgument;
    const name = this.readString(namePtr, nameLen);
    // like Envoy: every definition gets a new id (type in the low 2 bits), the same name the same stat
    let metric = this.metricsByName.get(name);
    if (metric === undefined) {
      metric = { name, type, value: 0n };
      this.metricsByName.set(name, metric);
    }
    const id = (this.nextMetric++ << 2) | type;
    this.metricsById.set(id, metric);
    this.view().setUint32(retId, id, true);
    return Status.Ok;
  }

  private proxyGetSharedData(keyPtr: number, keyLen: number, retPtr: number, retSize: number, retCas: number): number {
    this.count('proxy_get_shared_data');
    const entry = this.sharedData.get(this.vmId, this.readString(keyPtr, keyLen));
    if (entry === undefined) return Status.NotFound;
    const status = this.returnBytes(entry.value, retPtr, retSize);
    if (status === Status.Ok) this.view().setUint32(retCas, entry.cas, true);
    return status;
  }

  private proxySetSharedData(keyPtr: number, keyLen: number, valPtr: number, valLen: number, cas: number): number {
    this.count('proxy_set_shared_data');
    return this.sharedData.set(this.vmId, this.readString(keyPtr, keyLen), this.readBytes(valPtr, valLen), cas >>> 0);
  }

  private proxyIncrementMetric(id: number, delta: bigint): number {
    this.count('proxy_increment_metric');
    const metric = this.metricsById.get(id);
    if (metric === undefined) return Status.NotFound;
    if (metric.type === METRIC_COUNTER && delta <= 0n) return Status.BadArgument;
    if (metric.type === 2) return Status.BadArgument;
    metric.value += delta;
    return Status.Ok;
  }
}

// -------------------------------------------------------------------------------- pairs encoding

export function encodePairs(pairs: HeaderList): Uint8Array {
  const encoded = pairs.map(([k, v]) => [encoder.encode(k), encoder.encode(v)] as const);
  let size = 4 + 8 * encoded.length;
  for (const [k, v] of encoded) size += k.length + v.length + 2;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint32(0, encoded.length, true);
  let lens = 4;
  let data = 4 + 8 * encoded.length;
  for (const [k, v] of encoded) {
    view.setUint32(lens, k.length, true);
    view.setUint32(lens + 4, v.length, true);
    lens += 8;
    out.set(k, data);
    data += k.length + 1;
    out.set(v, data);
    data += v.length + 1;
  }
  return out;
}

/** Decodes a pairs buffer as strictly as Envoy does; throws where Envoy would silently use an empty map. */
export function decodePairs(bytes: Uint8Array): Array<[string, string]> {
  if (bytes.length === 0) return [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = view.getUint32(0, true);
  if (n > 1024) throw new Error(`pairs: ${n} pairs (Envoy allows at most 1024)`);
  let data = 4 + 8 * n;
  const out: Array<[string, string]> = [];
  for (let i = 0; i < n; i++) {
    const kl = view.getUint32(4 + 8 * i, true);
    const vl = view.getUint32(8 + 8 * i, true);
    if (data + kl + vl + 2 > bytes.length || bytes[data + kl] !== 0 || bytes[data + kl + 1 + vl] !== 0) {
      throw new Error('pairs: a key or value is not NUL-terminated where its length says');
    }
    const k = decoder.decode(bytes.subarray(data, data + kl));
    const v = decoder.decode(bytes.subarray(data + kl + 1, data + kl + 1 + vl));
    out.push([k, v]);
    data += kl + vl + 2;
  }
  if (data !== bytes.length) throw new Error('pairs: bytes after the last pair');
  return out;
}

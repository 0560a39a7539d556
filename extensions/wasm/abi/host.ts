// Typed wrappers over the host imports. Hot-path helpers take pre-encoded UTF-8 buffers and write
// results into a reusable HostBytes, so a request allocates nothing on the managed heap.
import {
  proxy_define_metric, proxy_get_buffer_bytes, proxy_get_current_time_nanoseconds, proxy_get_header_map_value,
  proxy_get_log_level, proxy_get_property, proxy_increment_metric, proxy_log, proxy_remove_header_map_value,
  proxy_replace_header_map_value, proxy_send_local_response, proxy_get_shared_data, proxy_set_shared_data,
} from "./imports";
import { BufferType, LogLevel, MapType, MetricType, Status } from "./enums";
import { HostBytes, RET_U32, RET_U64, clearRet, RET_PTR, RET_SIZE } from "./memory";

// ---------------------------------------------------------------------------------------------- logs

export function log(level: LogLevel, message: string): void {
  const buf = String.UTF8.encode(message);
  proxy_log(<u32>level, changetype<usize>(buf), <usize>buf.byteLength);
}

/** The host's current log level for this plugin (Envoy's `wasm` logger). Info if the call fails. */
export function logLevel(): LogLevel {
  store<u32>(RET_U32, <u32>LogLevel.Info);
  proxy_get_log_level(RET_U32);
  return <LogLevel>load<u32>(RET_U32);
}

// ------------------------------------------------------------------------------------------- buffers

/** Reads `[start, start+maxSize)` of a host buffer into `out`. PluginConfiguration exists only while
 * proxy_on_configure runs; bodies only inside body callbacks (NotFound otherwise). */
export function getBufferBytes(type: BufferType, start: u32, maxSize: u32, out: HostBytes): Status {
  clearRet();
  const status = <Status>proxy_get_buffer_bytes(<u32>type, start, maxSize, RET_PTR, RET_SIZE);
  if (status == Status.Ok) out.take();
  else out.release();
  return status;
}

// ------------------------------------------------------------------------------------------- headers

/** The first value of header `lowerName` (UTF-8, lower case) of `map`, into `out`. NotFound when absent
 * (then `out` is empty); BadArgument when the map is not available in this phase. */
export function getHeader(map: MapType, lowerName: ArrayBuffer, out: HostBytes): Status {
  clearRet();
  const status = <Status>proxy_get_header_map_value(
    <u32>map, changetype<usize>(lowerName), <usize>lowerName.byteLength, RET_PTR, RET_SIZE,
  );
  if (status == Status.Ok) out.take();
  else out.release();
  return status;
}

/** Sets header `lowerName` of `map` to `value` (replacing any value). */
export function replaceHeader(map: MapType, lowerName: ArrayBuffer, value: ArrayBuffer): Status {
  return <Status>proxy_replace_header_map_value(
    <u32>map, changetype<usize>(lowerName), <usize>lowerName.byteLength, changetype<usize>(value), <usize>value.byteLength,
  );
}

/** Sets header `nameLen` bytes at `namePtr` (lower case) of `map` to the `valueLen` bytes at `valuePtr`. */
export function replaceHeaderBytes(map: MapType, namePtr: usize, nameLen: usize, valuePtr: usize, valueLen: usize): Status {
  return <Status>proxy_replace_header_map_value(<u32>map, namePtr, nameLen, valuePtr, valueLen);
}

/** Removes header `lowerName` from `map` (Ok when it was absent too). */
export function removeHeader(map: MapType, lowerName: ArrayBuffer): Status {
  return <Status>proxy_remove_header_map_value(<u32>map, changetype<usize>(lowerName), <usize>lowerName.byteLength);
}

// -------------------------------------------------------------------------------------------- time

/** The host's wall clock in milliseconds since the epoch (0 if the call fails). */
export function nowMillis(): i64 {
  store<u64>(RET_U64, 0);
  proxy_get_current_time_nanoseconds(RET_U64);
  return <i64>(load<u64>(RET_U64) / 1_000_000);
}

// ---------------------------------------------------------------------------------------- properties

/** Property segments joined by NUL, as proxy_get_property expects them; encode once, at configure time. */
export function propertyPath(path: string[]): ArrayBuffer {
  let joined = "";
  for (let i = 0; i < path.length; i++) {
    if (i > 0) joined += "\0";
    joined += path[i];
  }
  return String.UTF8.encode(joined);
}

/** A property's raw bytes into `out` (hot-path form: pre-encoded path, reusable buffer). */
export function getProperty(path: ArrayBuffer, out: HostBytes): Status {
  clearRet();
  const status = <Status>proxy_get_property(changetype<usize>(path), <usize>path.byteLength, RET_PTR, RET_SIZE);
  if (status == Status.Ok) out.take();
  else out.release();
  return status;
}

/** A property as raw bytes, e.g. ["plugin_root_id"] or ["request", "path"] (segments joined by NUL).
 * null when the host has no such property. */
export function getPropertyString(path: string[]): string | null {
  let joined = "";
  for (let i = 0; i < path.length; i++) {
    if (i > 0) joined += "\0";
    joined += path[i];
  }
  const buf = String.UTF8.encode(joined);
  clearRet();
  const status = <Status>proxy_get_property(changetype<usize>(buf), <usize>buf.byteLength, RET_PTR, RET_SIZE);
  if (status != Status.Ok) return null;
  const bytes = new HostBytes();
  bytes.take();
  const s = bytes.toString();
  bytes.release();
  return s;
}

// ------------------------------------------------------------------------------------- shared data

/** A shared-data value (one key of the VM's store, shared by every VM with the same vm_id: the main
 * thread's and each worker's) into `out`, and its CAS token (0 when absent). NotFound when the key was
 * never set. Hot-path form: the key is `keyLen` bytes at `keyPtr` (e.g. static memory). */
export function getSharedData(keyPtr: usize, keyLen: usize, out: HostBytes): Status {
  clearRet();
  store<u32>(RET_U32, 0);
  const status = <Status>proxy_get_shared_data(keyPtr, keyLen, RET_PTR, RET_SIZE, RET_U32);
  if (status == Status.Ok) out.take();
  else out.release();
  return status;
}

/** The CAS token the last getSharedData returned (valid until the next host call that uses RET_U32). */
export function lastSharedDataCas(): u32 {
  return load<u32>(RET_U32);
}

/** Writes a shared-data value. `cas` 0 writes unconditionally; otherwise the write happens only if the
 * key still has that CAS token (CasMismatch when another VM wrote it meanwhile). Every write bumps it. */
export function setSharedData(keyPtr: usize, keyLen: usize, valuePtr: usize, valueLen: usize, cas: u32): Status {
  return <Status>proxy_set_shared_data(keyPtr, keyLen, valuePtr, valueLen, cas);
}

// ------------------------------------------------------------------------------------- local replies

/** A local reply prepared once (at configure time) and sent as is: no per-request encoding. */
export class LocalReply {
  constructor(
    public status: u32,
    /** response code details (Envoy: %RESPONSE_CODE_DETAILS%; whitespace becomes `_`) */
    public details: ArrayBuffer,
    public body: ArrayBuffer,
    /** pairs-encoded headers (see pairs.ts) */
    public headers: ArrayBuffer,
  ) {}

  send(): Status {
    return sendLocalResponse(this.status, this.details, this.body, this.headers);
  }
}

/** Asks the host to answer the stream itself once the current callback returns. gRPC status: none. */
export function sendLocalResponse(status: u32, details: ArrayBuffer, body: ArrayBuffer, headers: ArrayBuffer): Status {
  return <Status>proxy_send_local_response(
    status,
    changetype<usize>(details), <usize>details.byteLength,
    changetype<usize>(body), <usize>body.byteLength,
    changetype<usize>(headers), <usize>headers.byteLength,
    -1,
  );
}

// ------------------------------------------------------------------------------------------- metrics

/** An Envoy counter defined by this plugin. Envoy names it `wasmcustom.<name>`. */
export class Counter {
  private id: u32 = 0;
  private defined: bool = false;

  constructor(public name: string) {
    const buf = String.UTF8.encode(name);
    store<u32>(RET_U32, 0);
    const status = <Status>proxy_define_metric(<u32>MetricType.Counter, changetype<usize>(buf), <usize>buf.byteLength, RET_U32);
    if (status == Status.Ok) {
      this.id = load<u32>(RET_U32);
      this.defined = true;
    } else {
      log(LogLevel.Warn, "cannot define counter " + name + ": status " + (<u32>status).toString());
    }
  }

  increment(delta: i64 = 1): void {
    if (this.defined) proxy_increment_metric(this.id, delta);
  }
}

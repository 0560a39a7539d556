// graphql-check (root_id `legate.graphql_check`): refuses requests that are not GraphQL over HTTP before
// they reach the GraphQL service (ext_proc), answering as the service would (docs/graphql.md):
//   - a method other than GET and POST (or GET when allowGet is false)  -> 405, `Allow`
//   - a POST whose content-type is not application/json (UTF-8)         -> 415
//   - Content-Length above maxBodyBytes, or a body that grows past it    -> 413
//   - a GET whose `query` selects a mutation                             -> 405, `Allow: POST`
// with a body {"errors":[{"message":"…"}]} and content-type `application/json; charset=utf-8`. Everything
// else goes on untouched. The body is counted as it streams through (every body callback returns
// Continue: nothing is buffered by this filter).
//
// Every request whose headers reach the filter is counted once: as the reason it was refused, or as
// allowed when its stream ends (proxy_on_done) unrefused. Counting at the end rather than at the last
// request byte keeps requests whose response finished first (a direct response, an early upstream
// answer) in the count.
//
// Configuration (plugin configuration, a JSON string): {"maxBodyBytes": 1048576, "allowGet": true}
import {
  Action, Counter, HostBytes, JsonObjectReader, LocalReply, MapType, Pairs, RootContext, Status,
  StreamContext, bytesEqualIgnoreCase, getHeader, jsonQuote, latin1String, registerRootContext,
  sendLocalResponse,
} from "../abi";
export {
  proxy_abi_version_0_2_1, malloc, proxy_on_context_create, proxy_on_vm_start, proxy_on_configure,
  proxy_on_request_headers, proxy_on_request_body, proxy_on_done, proxy_on_delete,
} from "../abi/exports";
import { GetParams, formDecode } from "./query";
import { selectsMutation } from "./operation";

const ROOT_ID = "legate.graphql_check";
const DEFAULT_MAX_BODY_BYTES: i64 = 1048576;
const MAX_MAX_BODY_BYTES: i64 = 1073741824; // 1 GiB
const CONTENT_TYPE = "application/json; charset=utf-8"; // as the GraphQL service answers

const METHOD = String.UTF8.encode(":method");
const PATH = String.UTF8.encode(":path");
const HEADER_CONTENT_TYPE = String.UTF8.encode("content-type");
const HEADER_CONTENT_LENGTH = String.UTF8.encode("content-length");
/** Holds header values the host writes; reused (one thread per VM, one callback at a time). */
const value = new HostBytes();
const params = new GetParams();

function errorsBody(message: string): ArrayBuffer {
  return String.UTF8.encode("{\"errors\":[{\"message\":" + jsonQuote(message) + "}]}");
}

function isWsByte(c: u32): bool {
  return c == 0x20 || c == 0x09;
}

/** content-type `application/json`, media type compared case-insensitively, parameters allowed; a charset
 * parameter must name UTF-8 (`utf-8`/`utf8`, optionally quoted), as the GraphQL service requires. */
function isJsonContentType(ptr: usize, len: usize): bool {
  let end: usize = 0;
  while (end < len && <u32>load<u8>(ptr + end) != 0x3b) end++; // ';'
  let s: usize = 0;
  let e = end;
  while (s < e && isWsByte(<u32>load<u8>(ptr + s))) s++;
  while (e > s && isWsByte(<u32>load<u8>(ptr + e - 1))) e--;
  if (!bytesEqualIgnoreCase(ptr + s, e - s, "application/json")) return false;
  // parameters
  let i = end;
  while (i < len) {
    i++; // ';'
    const pStart = i;
    while (i < len && <u32>load<u8>(ptr + i) != 0x3b) i++;
    const pEnd = i;
    let eq = pStart;
    while (eq < pEnd && <u32>load<u8>(ptr + eq) != 0x3d) eq++;
    if (eq == pEnd) continue;
    let ns = pStart;
    let ne = eq;
    while (ns < ne && isWsByte(<u32>load<u8>(ptr + ns))) ns++;
    while (ne > ns && isWsByte(<u32>load<u8>(ptr + ne - 1))) ne--;
    if (!bytesEqualIgnoreCase(ptr + ns, ne - ns, "charset")) continue;
    let vs = eq + 1;
    let ve = pEnd;
    while (vs < ve && isWsByte(<u32>load<u8>(ptr + vs))) vs++;
    while (ve > vs && isWsByte(<u32>load<u8>(ptr + ve - 1))) ve--;
    if (vs < ve && <u32>load<u8>(ptr + vs) == 0x22) vs++;
    if (ve > vs && <u32>load<u8>(ptr + ve - 1) == 0x22) ve--;
    if (!bytesEqualIgnoreCase(ptr + vs, ve - vs, "utf-8") && !bytesEqualIgnoreCase(ptr + vs, ve - vs, "utf8")) return false;
  }
  return true;
}

/** A Content-Length value as a number; -1 when it is not a plain decimal. Saturates at 2^62. */
function parseContentLength(ptr: usize, len: usize): i64 {
  if (len == 0) return -1;
  let n: i64 = 0;
  for (let i: usize = 0; i < len; i++) {
    const c = <u32>load<u8>(ptr + i);
    if (c < 0x30 || c > 0x39) return -1;
    if (n < (<i64>1 << 58)) n = n * 10 + <i64>(c - 0x30);
    else n = <i64>1 << 62;
  }
  return n;
}

class GraphqlCheckRoot extends RootContext {
  maxBodyBytes: i64 = DEFAULT_MAX_BODY_BYTES;
  allowGet: bool = true;
  /** `Allow` header value and the method-not-allowed suffix, by allowGet */
  allowHeaders: ArrayBuffer = new ArrayBuffer(0);
  allowText: string = "";
  /** pairs-encoded `content-type` alone (415) */
  jsonHeaders: ArrayBuffer = new Pairs().add("content-type", CONTENT_TYPE).encode();
  tooLargeReply: LocalReply | null = null;
  mutationReply: LocalReply | null = null;
  allowed: Counter | null = null;
  methodNotAllowed: Counter | null = null;
  unsupportedMediaType: Counter | null = null;
  payloadTooLarge: Counter | null = null;
  getMutation: Counter | null = null;

  onConfigure(configSize: u32): bool {
    const config = new HostBytes();
    const status = this.readPluginConfiguration(configSize, config);
    if (status != Status.Ok) {
      this.logError("cannot read the plugin configuration (status " + (<u32>status).toString() + ")");
      return false;
    }
    let maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
    let allowGet = true;
    const r = new JsonObjectReader(config.ptr, config.len);
    if (!r.isBlank() && r.begin()) {
      let seenMax = false;
      let seenGet = false;
      let key: string | null;
      while ((key = r.nextKey()) !== null) {
        if (key == "maxBodyBytes") {
          if (seenMax) r.duplicateField(key);
          seenMax = true;
          maxBodyBytes = r.readInteger(key, 1, MAX_MAX_BODY_BYTES);
        } else if (key == "allowGet") {
          if (seenGet) r.duplicateField(key);
          seenGet = true;
          allowGet = r.readBoolean(key);
        } else {
          r.unknownField(key);
        }
      }
      r.end();
    }
    config.release();
    if (r.error !== null) {
      this.logError("invalid configuration: " + r.error! +
        " (expected {\"maxBodyBytes\": <1.." + MAX_MAX_BODY_BYTES.toString() + ">, \"allowGet\": <boolean>})");
      return false;
    }
    this.maxBodyBytes = maxBodyBytes;
    this.allowGet = allowGet;
    const allow = allowGet ? "GET, POST" : "POST";
    this.allowText = allowGet ? "GET or POST" : "POST";
    this.allowHeaders = new Pairs().add("content-type", CONTENT_TYPE).add("allow", allow).encode();
    this.tooLargeReply = new LocalReply(
      413,
      String.UTF8.encode("graphql_check_payload_too_large"),
      errorsBody("Payload Too Large: the request body exceeds " + maxBodyBytes.toString() + " bytes."),
      this.jsonHeaders,
    );
    this.mutationReply = new LocalReply(
      405,
      String.UTF8.encode("graphql_check_get_mutation"),
      errorsBody("Mutations are not allowed over GET: use POST."),
      new Pairs().add("content-type", CONTENT_TYPE).add("allow", "POST").encode(),
    );
    if (this.allowed === null) {
      this.allowed = new Counter("legate_graphql_check_allowed");
      this.methodNotAllowed = new Counter("legate_graphql_check_method_not_allowed");
      this.unsupportedMediaType = new Counter("legate_graphql_check_unsupported_media_type");
      this.payloadTooLarge = new Counter("legate_graphql_check_payload_too_large");
      this.getMutation = new Counter("legate_graphql_check_get_mutation");
    }
    this.logInfo("configured: maxBodyBytes=" + maxBodyBytes.toString() + " allowGet=" + (allowGet ? "true" : "false"));
    return true;
  }

  newStreamContext(contextId: u32): StreamContext | null {
    return new GraphqlCheckStream(contextId, this);
  }
}

class GraphqlCheckStream extends StreamContext {
  /** body bytes seen so far */
  private bodyBytes: i64 = 0;
  /** answered by this filter */
  private rejected: bool = false;
  /** the request headers reached this filter (Envoy creates the context with the filter chain, so an
   * earlier filter's local reply still brings proxy_on_done without any request callback) */
  private seen: bool = false;

  constructor(contextId: u32, private root: GraphqlCheckRoot) {
    super(contextId);
  }

  onRequestHeaders(numHeaders: u32, endOfStream: bool): Action {
    const root = this.root;
    this.seen = true;
    if (getHeader(MapType.HttpRequestHeaders, METHOD, value) != Status.Ok) {
      return this.methodNotAllowed("");
    }
    if (bytesEqualIgnoreCase(value.ptr, value.len, "post")) {
      value.release();
      // media type first, then size (the service's order)
      if (getHeader(MapType.HttpRequestHeaders, HEADER_CONTENT_TYPE, value) != Status.Ok) {
        return this.unsupportedMediaType("none");
      }
      if (!isJsonContentType(value.ptr, value.len)) {
        // named as the service names it: JSON-quoted, an empty value as `none`
        const got = value.len == 0 ? "none" : jsonQuote(latin1String(value.ptr, value.len));
        value.release();
        return this.unsupportedMediaType(got);
      }
      value.release();
      if (getHeader(MapType.HttpRequestHeaders, HEADER_CONTENT_LENGTH, value) == Status.Ok) {
        const length = parseContentLength(value.ptr, value.len);
        value.release();
        if (length > root.maxBodyBytes) return this.reject(root.payloadTooLarge!, root.tooLargeReply!);
      }
    } else if (bytesEqualIgnoreCase(value.ptr, value.len, "get")) {
      value.release();
      if (!root.allowGet) return this.methodNotAllowed("GET");
      if (getHeader(MapType.HttpRequestHeaders, PATH, value) == Status.Ok) {
        const mutation = getSelectsMutation(value.ptr, value.len);
        value.release();
        if (mutation) return this.reject(root.getMutation!, root.mutationReply!);
      }
    } else {
      const method = latin1String(value.ptr, value.len);
      value.release();
      return this.methodNotAllowed(method);
    }
    return Action.Continue;
  }

  onRequestBody(bodySize: u32, endOfStream: bool): Action {
    if (this.rejected) return Action.Continue;
    // returning Continue, each callback sees only its own chunk: add them up
    this.bodyBytes += <i64>bodySize;
    if (this.bodyBytes > this.root.maxBodyBytes) return this.reject(this.root.payloadTooLarge!, this.root.tooLargeReply!);
    return Action.Continue;
  }

  onDone(): bool {
    if (this.seen && !this.rejected) this.root.allowed!.increment();
    return true;
  }

  private reject(counter: Counter, reply: LocalReply): Action {
    this.rejected = true;
    counter.increment();
    reply.send();
    return Action.Pause;
  }

  private methodNotAllowed(method: string): Action {
    const root = this.root;
    this.rejected = true;
    root.methodNotAllowed!.increment();
    sendLocalResponse(
      405,
      String.UTF8.encode("graphql_check_method_not_allowed"),
      errorsBody("Method " + method + " is not allowed: use " + root.allowText + "."),
      root.allowHeaders,
    );
    return Action.Pause;
  }

  private unsupportedMediaType(got: string): Action {
    this.rejected = true;
    this.root.unsupportedMediaType!.increment();
    sendLocalResponse(
      415,
      String.UTF8.encode("graphql_check_unsupported_media_type"),
      errorsBody("Unsupported Media Type: POST bodies must be application/json (UTF-8), got " + got + "."),
      this.root.jsonHeaders,
    );
    return Action.Pause;
  }
}

/** Whether the GET `:path` at `[ptr, ptr+len)` carries a `query` that selects a mutation. */
function getSelectsMutation(ptr: usize, len: usize): bool {
  params.scan(ptr, len);
  if (!params.hasQuery || params.queryLen == 0) return false;
  // decoded text is never longer than the encoded one
  const doc = heap.alloc(params.queryLen);
  const docLen = formDecode(doc, ptr + params.queryStart, params.queryLen);
  let name: usize = 0;
  let nameLen: usize = 0;
  if (params.hasOperationName && params.operationNameLen > 0) {
    name = heap.alloc(params.operationNameLen);
    nameLen = formDecode(name, ptr + params.operationNameStart, params.operationNameLen);
  }
  const result = selectsMutation(doc, docLen, params.hasOperationName, name, nameLen);
  heap.free(doc);
  if (name != 0) heap.free(name);
  return result;
}

registerRootContext(ROOT_ID, (contextId: u32, rootId: string): RootContext => new GraphqlCheckRoot(contextId, rootId));

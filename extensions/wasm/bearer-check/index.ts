// bearer-check (root_id `legate.bearer_check`): answers 403 itself when a request has no well-formed
// `Authorization: Bearer <token>`, so it never costs an ext_authz call. Well-formed requests continue
// untouched (ext_authz still validates the token). Same codes as the extauth service (docs/extauth.md).
//
// Configuration (plugin configuration, a JSON string): {"maxTokenBytes": 4096}
import {
  Action, Counter, HostBytes, JsonObjectReader, LocalReply, MapType, Pairs, RootContext, Status,
  StreamContext, getHeader, registerRootContext,
} from "../abi";
export {
  proxy_abi_version_0_2_1, malloc, proxy_on_context_create, proxy_on_vm_start, proxy_on_configure,
  proxy_on_request_headers, proxy_on_done, proxy_on_delete,
} from "../abi/exports";
import { checkBearer } from "./token";

const ROOT_ID = "legate.bearer_check";
const DEFAULT_MAX_TOKEN_BYTES: i64 = 4096;
const MAX_MAX_TOKEN_BYTES: i64 = 65536;

const AUTHORIZATION = String.UTF8.encode("authorization");
/** Holds the header value the host writes; reused by every request (one thread per VM). */
const headerValue = new HostBytes();

function denial(error: string, challenge: string): LocalReply {
  return new LocalReply(
    403,
    String.UTF8.encode("bearer_check_" + error),
    String.UTF8.encode("{\"error\":\"" + error + "\"}"),
    new Pairs().add("content-type", "application/json").add("www-authenticate", challenge).encode(),
  );
}

class BearerCheckRoot extends RootContext {
  maxTokenBytes: usize = <usize>DEFAULT_MAX_TOKEN_BYTES;
  missingReply: LocalReply = denial("missing_token", "Bearer");
  malformedReply: LocalReply = denial("invalid_request", "Bearer error=\"invalid_request\"");
  allowed: Counter | null = null;
  deniedMissing: Counter | null = null;
  deniedMalformed: Counter | null = null;
  /** The filter keeps no per-request state: every stream shares this one context. */
  private stream: BearerCheckStream | null = null;

  onConfigure(configSize: u32): bool {
    const config = new HostBytes();
    const status = this.readPluginConfiguration(configSize, config);
    if (status != Status.Ok) {
      this.logError("cannot read the plugin configuration (status " + (<u32>status).toString() + ")");
      return false;
    }
    let maxTokenBytes = DEFAULT_MAX_TOKEN_BYTES;
    const r = new JsonObjectReader(config.ptr, config.len);
    if (!r.isBlank() && r.begin()) {
      let seen = false;
      let key: string | null;
      while ((key = r.nextKey()) !== null) {
        if (key == "maxTokenBytes") {
          if (seen) r.duplicateField(key);
          seen = true;
          maxTokenBytes = r.readInteger(key, 1, MAX_MAX_TOKEN_BYTES);
        } else {
          r.unknownField(key);
        }
      }
      r.end();
    }
    config.release();
    if (r.error !== null) {
      this.logError("invalid configuration: " + r.error! + " (expected {\"maxTokenBytes\": <1.." + MAX_MAX_TOKEN_BYTES.toString() + ">})");
      return false;
    }
    this.maxTokenBytes = <usize>maxTokenBytes;
    if (this.allowed === null) {
      this.allowed = new Counter("legate_bearer_check_allowed");
      this.deniedMissing = new Counter("legate_bearer_check_denied_missing");
      this.deniedMalformed = new Counter("legate_bearer_check_denied_malformed");
    }
    this.logInfo("configured: maxTokenBytes=" + maxTokenBytes.toString());
    return true;
  }

  newStreamContext(contextId: u32): StreamContext | null {
    let stream = this.stream;
    if (stream === null) {
      stream = new BearerCheckStream(0, this);
      this.stream = stream;
    }
    return stream;
  }
}

class BearerCheckStream extends StreamContext {
  constructor(contextId: u32, private root: BearerCheckRoot) {
    super(contextId);
  }

  onRequestHeaders(numHeaders: u32, endOfStream: bool): Action {
    const root = this.root;
    const status = getHeader(MapType.HttpRequestHeaders, AUTHORIZATION, headerValue);
    if (status == Status.Ok) {
      const ok = checkBearer(headerValue.ptr, headerValue.len, root.maxTokenBytes);
      headerValue.release();
      if (ok) {
        root.allowed!.increment();
        return Action.Continue;
      }
      root.deniedMalformed!.increment();
      root.malformedReply.send();
      return Action.Pause;
    }
    // NotFound; anything else (headers unavailable) fails closed the same way
    root.deniedMissing!.increment();
    root.missingReply.send();
    return Action.Pause;
  }
}

registerRootContext(ROOT_ID, (contextId: u32, rootId: string): RootContext => new BearerCheckRoot(contextId, rootId));

// bearer-check (root_id `legate.bearer_check`): answers 403 itself when a request has no well-formed
// `Authorization: Bearer <token>`, so it never costs an ext_authz call. Well-formed requests continue
// (ext_authz validates the token). Same codes as the extauth service (docs/extauth.md).
//
// Edge cache (when `cacheEntries` > 0): a token ext_authz accepted for a route's AuthConfig version is
// remembered (by digest) for as long as the extauth service said it may be; the next request with it
// carries the secret `verifiedHeader` and the controller's matcher skips ext_authz. The extauth
// service states the lifetime and the AuthConfig version it judged in ext_authz dynamic metadata; the
// route states its version in route metadata; only equal versions are cached. With `sharedCache` (the
// default) the table also lives in proxy-wasm shared data, so every Envoy worker sees what one learnt:
// a new token costs one ext_authz call per Envoy, not one per worker. See docs/wasm.md.
//
// Configuration (plugin configuration, a JSON string):
//   {"maxTokenBytes": 4096, "cacheEntries": 4096, "sharedCache": true, "verifiedHeader": "x-…", "verifiedValue": "<secret>"}
import {
  Action, Counter, HostBytes, JsonObjectReader, LocalReply, MapType, Pairs, RootContext, Status,
  StreamContext, getHeader, getProperty, nowMillis, propertyPath, registerRootContext, removeHeader,
  replaceHeader,
} from "../abi";
export {
  proxy_abi_version_0_2_1, malloc, proxy_on_context_create, proxy_on_vm_start, proxy_on_configure,
  proxy_on_request_headers, proxy_on_response_headers, proxy_on_done, proxy_on_delete,
} from "../abi/exports";
import { checkBearer } from "./token";
import { Digest, SharedTokenCache, TokenCache } from "./cache";
import { Sha256 } from "./sha256";
import { CREDENTIAL_ROOT_ID, newCredentialRoot } from "./credential";
import { isHeaderName, isSecretValue, parseMillis } from "./checks";

const ROOT_ID = "legate.bearer_check";
const DEFAULT_MAX_TOKEN_BYTES: i64 = 4096;
const MAX_MAX_TOKEN_BYTES: i64 = 65536;
const MAX_CACHE_ENTRIES: i64 = 1048576;

const AUTHORIZATION = String.UTF8.encode("authorization");
/** The route's AuthConfig key `<ns>.<name>@<version>`, set by the controller on protected routes. */
const ROUTE_AUTH_KEY = propertyPath(["xds", "route_metadata", "filter_metadata", "legate.bearer_check", "auth_key"]);
/** What the extauth service judged (`<ns>.<name>@<version>`) and for how long the answer holds (ms, decimal). */
const CHECKED_AUTH_KEY = propertyPath(["metadata", "filter_metadata", "envoy.filters.http.ext_authz", "legate_auth_key"]);
const CHECKED_CACHE_MS = propertyPath(["metadata", "filter_metadata", "envoy.filters.http.ext_authz", "legate_cache_ms"]);

/** Hold the bytes the host writes; reused by every request (one thread per VM). */
const headerValue = new HostBytes();
const routeKey = new HostBytes();
const checkedKey = new HostBytes();
const checkedMs = new HostBytes();
const sha = new Sha256();
/** The digest of the current request's (route key, Authorization) pair. */
const lookupDigest = new Digest();

function sameBytes(a: HostBytes, b: HostBytes): bool {
  if (a.len != b.len) return false;
  for (let i: usize = 0; i < a.len; i++) if (a.byteAt(i) != b.byteAt(i)) return false;
  return true;
}

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
  cacheHits: Counter | null = null;
  cacheStores: Counter | null = null;
  sharedHits: Counter | null = null;
  sharedStoreFailures: Counter | null = null;
  cache: TokenCache | null = null;
  /** the same table in shared data (every worker's VM), when `sharedCache` */
  shared: SharedTokenCache | null = null;
  verifiedHeader: ArrayBuffer = new ArrayBuffer(0);
  verifiedValue: ArrayBuffer = new ArrayBuffer(0);
  /** Without the cache the filter keeps no per-request state: every stream shares this one context. */
  private stream: BearerCheckStream | null = null;

  onConfigure(configSize: u32): bool {
    const config = new HostBytes();
    const status = this.readPluginConfiguration(configSize, config);
    if (status != Status.Ok) {
      this.logError("cannot read the plugin configuration (status " + (<u32>status).toString() + ")");
      return false;
    }
    let maxTokenBytes = DEFAULT_MAX_TOKEN_BYTES;
    let cacheEntries: i64 = 0;
    let sharedCache = true;
    let verifiedHeader = "";
    let verifiedValue = "";
    const r = new JsonObjectReader(config.ptr, config.len);
    if (!r.isBlank() && r.begin()) {
      const seen = new Set<string>();
      let key: string | null;
      while ((key = r.nextKey()) !== null) {
        if (seen.has(key!)) r.duplicateField(key!);
        seen.add(key!);
        if (key == "maxTokenBytes") maxTokenBytes = r.readInteger(key!, 1, MAX_MAX_TOKEN_BYTES);
        else if (key == "cacheEntries") cacheEntries = r.readInteger(key!, 0, MAX_CACHE_ENTRIES);
        else if (key == "sharedCache") sharedCache = r.readBoolean(key!);
        else if (key == "verifiedHeader") verifiedHeader = r.readStringValue(key!);
        else if (key == "verifiedValue") verifiedValue = r.readStringValue(key!);
        else r.unknownField(key!);
      }
      r.end();
    }
    config.release();
    let problem: string | null = r.error;
    if (problem === null && cacheEntries > 0) {
      if (!isHeaderName(verifiedHeader)) problem = "\"verifiedHeader\" must be a lower-case header name when \"cacheEntries\" > 0";
      else if (!isSecretValue(verifiedValue)) problem = "\"verifiedValue\" must be 16 to 256 visible ASCII characters when \"cacheEntries\" > 0";
    }
    if (problem !== null) {
      this.logError(
        "invalid configuration: " + problem! + " (expected {\"maxTokenBytes\": <1.." + MAX_MAX_TOKEN_BYTES.toString() +
        ">, \"cacheEntries\": <0.." + MAX_CACHE_ENTRIES.toString() + ">, \"sharedCache\": <bool>, \"verifiedHeader\": \"<name>\", \"verifiedValue\": \"<secret>\"})",
      );
      return false;
    }
    this.maxTokenBytes = <usize>maxTokenBytes;
    const cache = this.cache;
    if (cacheEntries == 0) this.cache = null;
    else if (cache === null || cache.capacity != <i32>cacheEntries) this.cache = new TokenCache(<i32>cacheEntries);
    this.shared = cacheEntries > 0 && sharedCache ? new SharedTokenCache(<i32>cacheEntries) : null;
    this.verifiedHeader = String.UTF8.encode(verifiedHeader);
    this.verifiedValue = String.UTF8.encode(verifiedValue);
    if (this.allowed === null) {
      this.allowed = new Counter("legate_bearer_check_allowed");
      this.deniedMissing = new Counter("legate_bearer_check_denied_missing");
      this.deniedMalformed = new Counter("legate_bearer_check_denied_malformed");
      this.cacheHits = new Counter("legate_bearer_check_cache_hits");
      this.cacheStores = new Counter("legate_bearer_check_cache_stores");
      this.sharedHits = new Counter("legate_bearer_check_cache_shared_hits");
      this.sharedStoreFailures = new Counter("legate_bearer_check_cache_shared_store_failures");
    }
    this.logInfo(
      "configured: maxTokenBytes=" + maxTokenBytes.toString() + " cacheEntries=" + cacheEntries.toString() +
      (cacheEntries > 0 ? " sharedCache=" + (this.shared !== null ? "true" : "false") : ""),
    );
    return true;
  }

  newStreamContext(contextId: u32): StreamContext | null {
    if (this.cache !== null) return new BearerCheckStream(contextId, this);
    let stream = this.stream;
    if (stream === null) {
      stream = new BearerCheckStream(0, this);
      this.stream = stream;
    }
    return stream;
  }
}

class BearerCheckStream extends StreamContext {
  /** set when the token missed the cache: the digest to store if ext_authz accepts it */
  private pending: Digest | null = null;

  constructor(contextId: u32, private root: BearerCheckRoot) {
    super(contextId);
  }

  onRequestHeaders(numHeaders: u32, endOfStream: bool): Action {
    const root = this.root;
    const cache = root.cache;
    // only this filter may vouch for a request: whatever a client sent under that name goes. Looked up
    // first: Envoy clears the route cache on every request-header mutation, and clients rarely send it
    if (cache !== null && getHeader(MapType.HttpRequestHeaders, root.verifiedHeader, headerValue) != Status.NotFound) {
      headerValue.release();
      removeHeader(MapType.HttpRequestHeaders, root.verifiedHeader);
    }
    const status = getHeader(MapType.HttpRequestHeaders, AUTHORIZATION, headerValue);
    if (status == Status.Ok) {
      const ok = checkBearer(headerValue.ptr, headerValue.len, root.maxTokenBytes);
      if (ok) {
        root.allowed!.increment();
        if (cache !== null) this.lookup(cache);
        headerValue.release();
        return Action.Continue;
      }
      headerValue.release();
      root.deniedMalformed!.increment();
      root.malformedReply.send();
      return Action.Pause;
    }
    // NotFound; anything else (headers unavailable) fails closed the same way
    root.deniedMissing!.increment();
    root.missingReply.send();
    return Action.Pause;
  }

  /** On a hit, marks the request verified (ext_authz is skipped); on a miss, remembers its digest. */
  private lookup(cache: TokenCache): void {
    // routes without a key (AuthConfig missing or rejected) are never cached
    if (getProperty(ROUTE_AUTH_KEY, routeKey) != Status.Ok || routeKey.len == 0) return;
    sha.update(routeKey.ptr, routeKey.len);
    sha.updateByte(0);
    sha.update(headerValue.ptr, headerValue.len);
    routeKey.release();
    lookupDigest.copyFrom(sha.finish());
    const root = this.root;
    const now = nowMillis();
    if (cache.has(lookupDigest, now)) {
      this.vouch();
      return;
    }
    // another worker may have learnt it: the shared table, then keep it here too
    const shared = root.shared;
    if (shared !== null) {
      const deadline = shared.deadline(lookupDigest, now);
      if (deadline > 0) {
        cache.set(lookupDigest, deadline);
        root.sharedHits!.increment();
        this.vouch();
        return;
      }
    }
    this.pending = lookupDigest.clone();
  }

  private vouch(): void {
    const root = this.root;
    replaceHeader(MapType.HttpRequestHeaders, root.verifiedHeader, root.verifiedValue);
    root.cacheHits!.increment();
  }

  /** After ext_authz: caches the token when the service accepted it for this route's AuthConfig version. */
  onResponseHeaders(numHeaders: u32, endOfStream: bool): Action {
    const pending = this.pending;
    if (pending === null) return Action.Continue;
    this.pending = null;
    const cache = this.root.cache;
    if (cache === null) return Action.Continue;
    if (getProperty(CHECKED_CACHE_MS, checkedMs) != Status.Ok) return Action.Continue;
    const ms = parseMillis(checkedMs);
    checkedMs.release();
    if (ms <= 0) return Action.Continue;
    if (getProperty(CHECKED_AUTH_KEY, checkedKey) == Status.Ok && getProperty(ROUTE_AUTH_KEY, routeKey) == Status.Ok) {
      if (routeKey.len > 0 && sameBytes(checkedKey, routeKey)) {
        const deadline = nowMillis() + ms;
        cache.set(pending, deadline);
        const shared = this.root.shared;
        if (shared !== null && !shared.set(pending, deadline)) this.root.sharedStoreFailures!.increment();
        this.root.cacheStores!.increment();
      }
    }
    checkedKey.release();
    routeKey.release();
    return Action.Continue;
  }
}

registerRootContext(ROOT_ID, (contextId: u32, rootId: string): RootContext => new BearerCheckRoot(contextId, rootId));
registerRootContext(CREDENTIAL_ROOT_ID, (contextId: u32, rootId: string): RootContext => newCredentialRoot(contextId));

// credential-check (root_id `legate.credential_check`, in the bearer-check module): the edge cache for
// AuthConfigs whose credential is not a bearer token: a browser session cookie (oidcAuthorizationCode,
// oauth2) or the whole Authorization value (ldap, basicAuth). It never refuses anything itself: a request
// it cannot vouch for goes on to ext_authz, which decides as before.
//
// Route metadata (filter_metadata["legate.credential_check"].edge, set by the controller; one property read),
// three lines: `<ns>.<name>@<version>` of the route's AuthConfig; the credential, `cookie:<name>` (the session
// cookie's value) or `authorization` (the whole Authorization value); the space-separated paths (query left
// out) that always go to ext_authz, the login callback and logout path (may be empty). A logout request also
// ends the grant of the cookie it carries, for every worker. No `edge`: the filter does nothing.
// After an allow, ext_authz dynamic metadata says what was granted: `legate_auth_key` (must equal the
// route's), `legate_credential` (`cookie:<name>` or `authorization`: must be what the route keys on),
// `legate_cache_ms` and `legate_headers` (the request headers the extauth service set for the upstream, e.g.
// the ID token header: name NUL value NUL ...). The filter stores the digest of (route key, credential kind,
// credential value) in proxy-wasm shared data with those headers, and on a hit sets them again (replacing
// any client-sent copy) and adds the verified header, so the
// ext_authz matcher skips the check. Every lookup reads shared data (no per-worker table): a logout is seen
// by every worker at once. See docs/wasm.md "Edge grants for sessions and Basic credentials".
//
// Configuration: {"cacheEntries": 4096, "verifiedHeader": "x-…", "verifiedValue": "<secret>"}
import {
  Action, Counter, HostBytes, JsonObjectReader, MapType, RootContext, Status, StreamContext, getHeader, getProperty,
  nowMillis, propertyPath, removeHeader, replaceHeader, replaceHeaderBytes,
} from "../abi";
import { Digest, SharedGrantCache } from "./cache";
import { Sha256 } from "./sha256";
import { isHeaderName, isSecretValue, parseMillis } from "./checks";

export const CREDENTIAL_ROOT_ID = "legate.credential_check";
const MAX_CACHE_ENTRIES: i64 = 1048576;
/** Largest payload (granted header names and values) kept with a grant; a bigger answer is not cached. */
const MAX_PAYLOAD_BYTES: usize = 16384;

const AUTHORIZATION = String.UTF8.encode("authorization");
const COOKIE = String.UTF8.encode("cookie");
const PATH = String.UTF8.encode(":path");
const ROUTE_EDGE = propertyPath(["xds", "route_metadata", "filter_metadata", "legate.credential_check", "edge"]);
const COOKIE_PREFIX = "cookie:";
const CHECKED_AUTH_KEY = propertyPath(["metadata", "filter_metadata", "envoy.filters.http.ext_authz", "legate_auth_key"]);
const CHECKED_CACHE_MS = propertyPath(["metadata", "filter_metadata", "envoy.filters.http.ext_authz", "legate_cache_ms"]);
const CHECKED_CREDENTIAL = propertyPath(["metadata", "filter_metadata", "envoy.filters.http.ext_authz", "legate_credential"]);
const CHECKED_HEADERS = propertyPath(["metadata", "filter_metadata", "envoy.filters.http.ext_authz", "legate_headers"]);

const value = new HostBytes();
/** the route's `edge` value and where its three lines are */
const route = new HostBytes();
let keyLen: usize = 0;
let credentialAt: usize = 0;
let credentialLen: usize = 0;
let pathsAt: usize = 0;
const path = new HostBytes();
const checked = new HostBytes();
const sha = new Sha256();
const lookupDigest = new Digest();

/** Whether `b` holds exactly the `len` bytes at `ptr`. */
function equalsAt(b: HostBytes, ptr: usize, len: usize): bool {
  if (b.len != len) return false;
  for (let i: usize = 0; i < len; i++) if (b.byteAt(i) != <u32>load<u8>(ptr + i)) return false;
  return true;
}

/** Reads the route's `edge` into `route` and finds its lines; false when absent or malformed. */
function readRoute(): bool {
  if (getProperty(ROUTE_EDGE, route) != Status.Ok) {
    route.release();
    return false;
  }
  let i: usize = 0;
  while (i < route.len && route.byteAt(i) != 0x0a) i++;
  keyLen = i;
  credentialAt = i + 1;
  i = credentialAt;
  while (i < route.len && route.byteAt(i) != 0x0a) i++;
  credentialLen = i - credentialAt;
  pathsAt = i + 1;
  if (keyLen == 0 || credentialLen == 0 || pathsAt > route.len) {
    route.release();
    return false;
  }
  return true;
}

/** Whether the route keys on a cookie (`cookie:<name>`); the name is then at credentialAt + 7. */
function byCookie(): bool {
  if (credentialLen <= <usize>COOKIE_PREFIX.length) return false;
  for (let k = 0; k < COOKIE_PREFIX.length; k++) if (route.byteAt(credentialAt + <usize>k) != <u32>COOKIE_PREFIX.charCodeAt(k)) return false;
  return true;
}

function isSpace(c: u32): bool {
  return c == 0x20 || c == 0x09;
}

/**
 * The value of cookie `name` in a Cookie header (the bytes at ptr/len), as the extauth service reads it
 * (parts split at ';', name and value trimmed): start offset in `found[0]`, length in `found[1]`. False when
 * it is absent or appears more than once (then the request is left to ext_authz).
 */
function findCookie(ptr: usize, len: usize, namePtr: usize, nameLen: usize, found: StaticArray<usize>): bool {
  let seen = false;
  let i: usize = 0;
  while (i < len) {
    let end = i;
    while (end < len && load<u8>(ptr + end) != 0x3b) end++;
    let eq = i;
    while (eq < end && load<u8>(ptr + eq) != 0x3d) eq++;
    if (eq < end) {
      let ns = i;
      let ne = eq;
      while (ns < ne && isSpace(<u32>load<u8>(ptr + ns))) ns++;
      while (ne > ns && isSpace(<u32>load<u8>(ptr + ne - 1))) ne--;
      if (ne - ns == nameLen) {
        let same = true;
        for (let k: usize = 0; k < nameLen; k++) {
          if (load<u8>(ptr + ns + k) != load<u8>(namePtr + k)) {
            same = false;
            break;
          }
        }
        if (same) {
          if (seen) return false;
          seen = true;
          let vs = eq + 1;
          let ve = end;
          while (vs < ve && isSpace(<u32>load<u8>(ptr + vs))) vs++;
          while (ve > vs && isSpace(<u32>load<u8>(ptr + ve - 1))) ve--;
          found[0] = vs;
          found[1] = ve - vs;
        }
      }
    }
    i = end + 1;
  }
  return seen && found[1] > 0;
}

/** Whether the request path (query left out) is one of the space-separated list at `list`/`listLen`. */
function pathListed(list: usize, listLen: usize, p: HostBytes): bool {
  let plen = p.len;
  for (let i: usize = 0; i < p.len; i++) {
    if (p.byteAt(i) == 0x3f) {
      plen = i;
      break;
    }
  }
  let i: usize = 0;
  while (i < listLen) {
    let end = i;
    while (end < listLen && load<u8>(list + end) != 0x20) end++;
    if (end - i == plen) {
      let same = true;
      for (let k: usize = 0; k < plen; k++) {
        if (<u32>load<u8>(list + i + k) != p.byteAt(k)) {
          same = false;
          break;
        }
      }
      if (same) return true;
    }
    i = end + 1;
  }
  return false;
}

class CredentialCheckRoot extends RootContext {
  cache: SharedGrantCache | null = null;
  verifiedHeader: ArrayBuffer = new ArrayBuffer(0);
  verifiedValue: ArrayBuffer = new ArrayBuffer(0);
  hits: Counter | null = null;
  stores: Counter | null = null;
  storeFailures: Counter | null = null;
  alwaysChecked: Counter | null = null;

  onConfigure(configSize: u32): bool {
    const config = new HostBytes();
    const status = this.readPluginConfiguration(configSize, config);
    if (status != Status.Ok) {
      this.logError("cannot read the plugin configuration (status " + (<u32>status).toString() + ")");
      return false;
    }
    let cacheEntries: i64 = 0;
    let verifiedHeader = "";
    let verifiedValue = "";
    const r = new JsonObjectReader(config.ptr, config.len);
    if (!r.isBlank() && r.begin()) {
      const seen = new Set<string>();
      let key: string | null;
      while ((key = r.nextKey()) !== null) {
        if (seen.has(key!)) r.duplicateField(key!);
        seen.add(key!);
        if (key == "cacheEntries") cacheEntries = r.readInteger(key!, 1, MAX_CACHE_ENTRIES);
        else if (key == "verifiedHeader") verifiedHeader = r.readStringValue(key!);
        else if (key == "verifiedValue") verifiedValue = r.readStringValue(key!);
        else r.unknownField(key!);
      }
      r.end();
    }
    config.release();
    let problem: string | null = r.error;
    if (problem === null && cacheEntries == 0) problem = "\"cacheEntries\" is required";
    else if (problem === null && !isHeaderName(verifiedHeader)) problem = "\"verifiedHeader\" must be a lower-case header name";
    else if (problem === null && !isSecretValue(verifiedValue)) problem = "\"verifiedValue\" must be 16 to 256 visible ASCII characters";
    if (problem !== null) {
      this.logError(
        "invalid configuration: " + problem! + " (expected {\"cacheEntries\": <1.." + MAX_CACHE_ENTRIES.toString() +
        ">, \"verifiedHeader\": \"<name>\", \"verifiedValue\": \"<secret>\"})",
      );
      return false;
    }
    this.cache = new SharedGrantCache(<i32>cacheEntries);
    this.verifiedHeader = String.UTF8.encode(verifiedHeader);
    this.verifiedValue = String.UTF8.encode(verifiedValue);
    if (this.hits === null) {
      this.hits = new Counter("legate_credential_check_hits");
      this.stores = new Counter("legate_credential_check_stores");
      this.storeFailures = new Counter("legate_credential_check_store_failures");
      this.alwaysChecked = new Counter("legate_credential_check_always_checked");
    }
    this.logInfo("configured: cacheEntries=" + cacheEntries.toString());
    return true;
  }

  newStreamContext(contextId: u32): StreamContext | null {
    return new CredentialCheckStream(contextId, this);
  }
}

/** Reused per request (one thread per VM). */
const cookieAt = new StaticArray<usize>(2);

class CredentialCheckStream extends StreamContext {
  /** set on a miss: the digest to store if ext_authz grants it */
  private pending: Digest | null = null;

  constructor(contextId: u32, private root: CredentialCheckRoot) {
    super(contextId);
  }

  onRequestHeaders(numHeaders: u32, endOfStream: bool): Action {
    const root = this.root;
    // only this filter may vouch for a request (the HCM's early header mutation removed it already)
    if (getHeader(MapType.HttpRequestHeaders, root.verifiedHeader, value) != Status.NotFound) {
      value.release();
      removeHeader(MapType.HttpRequestHeaders, root.verifiedHeader);
    }
    if (!readRoute()) return Action.Continue;
    const cookie = byCookie();
    let digest = false;
    if (cookie) {
      const name = route.ptr + credentialAt + <usize>COOKIE_PREFIX.length;
      const nameLen = credentialLen - <usize>COOKIE_PREFIX.length;
      if (getHeader(MapType.HttpRequestHeaders, COOKIE, value) == Status.Ok && findCookie(value.ptr, value.len, name, nameLen, cookieAt)) {
        this.hash(0x63, value.ptr + cookieAt[0], cookieAt[1]);
        digest = true;
      }
    } else if (getHeader(MapType.HttpRequestHeaders, AUTHORIZATION, value) == Status.Ok && value.len > 0) {
      this.hash(0x61, value.ptr, value.len);
      digest = true;
    }
    value.release();
    if (digest && this.onCheckPath()) {
      // the callback and logout always reach the extauth service; a logout also ends this cookie's grant
      if (cookie) root.cache!.drop(lookupDigest);
      root.alwaysChecked!.increment();
      digest = false;
    }
    if (digest) {
      const cache = root.cache!;
      if (cache.lookup(lookupDigest, nowMillis()) > 0) {
        this.apply(cache.payloadPtr, cache.payloadLen);
        cache.done();
        replaceHeader(MapType.HttpRequestHeaders, root.verifiedHeader, root.verifiedValue);
        root.hits!.increment();
      } else {
        this.pending = lookupDigest.clone();
      }
    }
    route.release();
    return Action.Continue;
  }

  /** lookupDigest = SHA-256(route key, NUL, kind, NUL, credential). */
  private hash(kind: u8, ptr: usize, len: usize): void {
    sha.update(route.ptr, keyLen);
    sha.updateByte(0);
    sha.updateByte(kind);
    sha.updateByte(0);
    sha.update(ptr, len);
    lookupDigest.copyFrom(sha.finish());
  }

  private onCheckPath(): bool {
    if (pathsAt >= route.len) return false;
    let listed = false;
    if (getHeader(MapType.HttpRequestHeaders, PATH, path) == Status.Ok) listed = pathListed(route.ptr + pathsAt, route.len - pathsAt, path);
    path.release();
    return listed;
  }

  /** Sets the granted headers: [u32 name length, name, u32 value length, value]... */
  private apply(ptr: usize, len: usize): void {
    let at: usize = 0;
    while (at + 4 <= len) {
      const nlen = <usize>load<u32>(ptr + at);
      const vlenAt = at + 4 + nlen;
      if (vlenAt + 4 > len) return;
      const vlen = <usize>load<u32>(ptr + vlenAt);
      if (vlenAt + 4 + vlen > len) return;
      replaceHeaderBytes(MapType.HttpRequestHeaders, ptr + at + 4, nlen, ptr + vlenAt + 4, vlen);
      at = vlenAt + 4 + vlen;
    }
  }

  /** After ext_authz: stores the grant when the extauth service gave one for this route and credential. */
  onResponseHeaders(numHeaders: u32, endOfStream: bool): Action {
    const pending = this.pending;
    if (pending === null) return Action.Continue;
    this.pending = null;
    if (getProperty(CHECKED_CACHE_MS, checked) != Status.Ok) return Action.Continue;
    const ms = parseMillis(checked);
    checked.release();
    if (ms <= 0) return Action.Continue;
    if (!readRoute()) return Action.Continue;
    // the grant must be for this route's AuthConfig version and for what it keys on (never a cookie grant
    // stored under an Authorization value)
    let same = getProperty(CHECKED_AUTH_KEY, checked) == Status.Ok && equalsAt(checked, route.ptr, keyLen);
    checked.release();
    if (same) same = getProperty(CHECKED_CREDENTIAL, checked) == Status.Ok && equalsAt(checked, route.ptr + credentialAt, credentialLen);
    checked.release();
    route.release();
    if (!same) return Action.Continue;
    const payload = this.payload();
    if (payload === null) return Action.Continue;
    const root = this.root;
    if (root.cache!.set(pending, nowMillis() + ms, changetype<usize>(payload), <usize>payload.byteLength)) root.stores!.increment();
    else root.storeFailures!.increment();
    return Action.Continue;
  }

  /**
   * The granted headers (`legate_headers`: name NUL value NUL ..., the extauth service's upstream headers) as
   * [u32 name length, name, u32 value length, value]...; null when malformed or too big.
   */
  private payload(): ArrayBuffer | null {
    if (getProperty(CHECKED_HEADERS, checked) != Status.Ok || checked.len == 0) {
      checked.release();
      return new ArrayBuffer(0);
    }
    if (checked.len > MAX_PAYLOAD_BYTES) {
      checked.release();
      return null;
    }
    // at most the input's length plus 8 bytes per field pair's lengths (fields are at least a byte and a NUL)
    const out = new ArrayBuffer(<i32>(checked.len * 5 + 8));
    const base = changetype<usize>(out);
    let at: usize = 0;
    let i: usize = 0;
    let fields = 0;
    let ok = true;
    while (i <= checked.len && ok) {
      let end = i;
      while (end < checked.len && checked.byteAt(end) != 0) end++;
      const len = end - i;
      if ((fields & 1) == 0) {
        // a name: lower-case token characters
        if (len == 0) ok = false;
        for (let k: usize = 0; k < len && ok; k++) {
          const c = checked.byteAt(i + k);
          ok = (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c == 0x2d || c == 0x5f || c == 0x2e;
        }
      }
      if (ok) {
        store<u32>(base + at, <u32>len);
        memory.copy(base + at + 4, checked.ptr + i, len);
        at += 4 + len;
      }
      fields++;
      i = end + 1;
    }
    checked.release();
    if (!ok || (fields & 1) != 0) return null;
    return out.slice(0, <i32>at);
  }
}

export function newCredentialRoot(contextId: u32): RootContext {
  return new CredentialCheckRoot(contextId, CREDENTIAL_ROOT_ID);
}

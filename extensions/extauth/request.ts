// What a step sees of the request being checked. The service's requests are views over the CheckRequest
// bytes (wire.ts CheckInput): the bearer token, config id and the few headers a config reads are copied out
// when the message is parsed (the hot path); everything else (method, path, host, body, peer) is decoded
// only when a step asks for it. PlainRequest holds plain values (tests, the Authorizer's check()).

export interface AuthRequest {
  /** `config_id` context extension; '' when absent */
  readonly configId: string;
  /** the `authorization` header; undefined when absent */
  readonly authorization: string | undefined;
  /** more than one `authorization` header */
  readonly ambiguous: boolean;
  /** a request header by lower-case name (the `authorization` one too); undefined when absent */
  header(name: string): string | undefined;
  /** every header sent (lower-case names, `authorization` included, pseudo-headers left out): a new object */
  readonly allHeaders: Readonly<Record<string, string>>;
  /** `GET`, `POST`, …; '' when Envoy did not say */
  readonly method: string;
  /** `http` or `https` (the downstream scheme); '' when not known */
  readonly scheme: string;
  /** the `:authority`; '' when not known */
  readonly host: string;
  /** the request target as sent: path and query; '' when not known */
  readonly path: string;
  /** the body when the filter sends it (ext_authz with_request_body): as text, or raw bytes (packAsBytes) */
  readonly body: string | undefined;
  readonly rawBody: Buffer | undefined;
  /** the downstream peer's IP address; '' when not known */
  readonly sourceAddress: string;
  /** the header an allow sets to the authenticated user's id (Settings userIdHeader), when Envoy names one */
  readonly userIdHeader?: string | undefined;
  /**
   * The filter metadata Envoy sent (ext_authz metadata_context_namespaces, e.g. the JWT filter's verified
   * payloads under `envoy.filters.http.jwt_authn`): namespace -> fields; {} when none.
   */
  readonly filterMetadata: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /**
   * A request that stays valid after the check answers synchronously (a step that awaits keeps it):
   * itself, or a copy when this object is reused per call.
   */
  stable(): AuthRequest;
}

export interface PlainRequestParts {
  configId?: string;
  authorization?: string | undefined;
  ambiguous?: boolean;
  /** lower-case names, without `authorization` */
  headers?: Readonly<Record<string, string>>;
  method?: string;
  scheme?: string;
  host?: string;
  path?: string;
  body?: string;
  rawBody?: Buffer;
  sourceAddress?: string;
  filterMetadata?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});
const NO_METADATA: Readonly<Record<string, Readonly<Record<string, unknown>>>> = Object.freeze({});

/** A request from plain values. `reusable`: stable() copies it (the caller refills it per call). */
export class PlainRequest implements AuthRequest {
  configId = '';
  authorization: string | undefined = undefined;
  ambiguous = false;
  extra: Readonly<Record<string, string>> = NO_HEADERS;
  method = '';
  scheme = '';
  host = '';
  path = '';
  body: string | undefined = undefined;
  rawBody: Buffer | undefined = undefined;
  sourceAddress = '';
  filterMetadata: Readonly<Record<string, Readonly<Record<string, unknown>>>> = NO_METADATA;

  constructor(
    parts: PlainRequestParts = {},
    private readonly reusable = false,
  ) {
    this.set(parts);
  }

  /** Refills the reusable request with the fast path's fields. */
  reset(configId: string, authorization: string | undefined, ambiguous: boolean, headers: Readonly<Record<string, string>>): this {
    this.configId = configId;
    this.authorization = authorization;
    this.ambiguous = ambiguous;
    this.extra = headers;
    return this;
  }

  set(parts: PlainRequestParts): this {
    if (parts.configId !== undefined) this.configId = parts.configId;
    if (parts.authorization !== undefined) this.authorization = parts.authorization;
    if (parts.ambiguous !== undefined) this.ambiguous = parts.ambiguous;
    if (parts.headers !== undefined) this.extra = parts.headers;
    if (parts.method !== undefined) this.method = parts.method;
    if (parts.scheme !== undefined) this.scheme = parts.scheme;
    if (parts.host !== undefined) this.host = parts.host;
    if (parts.path !== undefined) this.path = parts.path;
    if (parts.body !== undefined) this.body = parts.body;
    if (parts.rawBody !== undefined) this.rawBody = parts.rawBody;
    if (parts.sourceAddress !== undefined) this.sourceAddress = parts.sourceAddress;
    if (parts.filterMetadata !== undefined) this.filterMetadata = parts.filterMetadata;
    return this;
  }

  header(name: string): string | undefined {
    if (name === 'authorization') return this.authorization;
    return Object.hasOwn(this.extra, name) ? this.extra[name] : undefined;
  }

  get allHeaders(): Readonly<Record<string, string>> {
    return withAuthorization(this.extra, this.authorization);
  }

  stable(): AuthRequest {
    if (!this.reusable) return this;
    const copy = new PlainRequest();
    copy.configId = this.configId;
    copy.authorization = this.authorization;
    copy.ambiguous = this.ambiguous;
    copy.extra = this.extra;
    copy.method = this.method;
    copy.scheme = this.scheme;
    copy.host = this.host;
    copy.path = this.path;
    copy.body = this.body;
    copy.rawBody = this.rawBody;
    copy.sourceAddress = this.sourceAddress;
    copy.filterMetadata = this.filterMetadata;
    return copy;
  }
}

/** `headers` plus `authorization` (when present), as one new object. */
export function withAuthorization(headers: Readonly<Record<string, string>>, authorization: string | undefined): Record<string, string> {
  const out: Record<string, string> = { ...headers };
  if (authorization !== undefined) out['authorization'] = authorization;
  return out;
}

/** The cookie `name` of a `cookie` header value; undefined when absent. */
export function cookieValue(cookieHeader: string | undefined, name: string): string | undefined {
  if (cookieHeader === undefined) return undefined;
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

// Types of oauth-provider.mjs, for the TypeScript tests and benchmarks that start it in-process.

export declare const SCOPES: string[];

export interface ProviderClient {
  clientId: string;
  clientSecret: string;
  /** space-separated scopes the client may ask for */
  scope?: string;
  /** a resource server: may introspect and revoke any client's tokens */
  introspector?: boolean;
  /** a browser app: authorization code and refresh tokens, to these redirect URIs */
  web?: boolean;
  redirectUris?: string[];
  /** where RP-initiated logout may send the browser back to (post_logout_redirect_uri) */
  postLogoutRedirectUris?: string[];
  /** the client's public keys: it authenticates by private_key_jwt (RFC 7523) instead of clientSecret */
  jwks?: { keys: object[] };
}

/**
 * The browser app's client (authorization code, refresh tokens); default id legate-web, secret legate-web-secret.
 * postLogoutRedirectUris: default each redirect URI's origin + `/`.
 */
export declare function webClient(
  redirectUris: string[],
  clientSecret?: string,
  clientId?: string,
  postLogoutRedirectUris?: string[],
): ProviderClient;

/** A fresh RS256 signing key set (pass the same one to a restarted provider so its tokens still verify). */
export declare function signingKeys(): { keys: object[] };

export declare const DEFAULT_CLIENTS: ProviderClient[];

/** Issued tokens and grants; pass the same store to a restarted provider to keep its tokens valid. */
export type ProviderStore = Map<string, unknown>;

export declare function createStore(): ProviderStore;

export interface StartProviderOptions {
  /** 0 = any free port. Default 9010 */
  port?: number;
  /** Default 127.0.0.1 */
  host?: string;
  clients?: ProviderClient[];
  /** lifetime of client-credentials tokens. Default 300 */
  ttlSeconds?: number;
  /** lifetime of the browser login's ID and access tokens. Default 300 */
  idTokenTtlSeconds?: number;
  issuer?: string;
  store?: ProviderStore;
  extraScopes?: string[];
  jwks?: { keys: object[] };
  /** no log lines */
  quiet?: boolean;
}

export interface RunningProvider {
  port: number;
  issuer: string;
  urls: { discovery: string; authorization: string; token: string; introspection: string; revocation: string };
  store: ProviderStore;
  /** the oidc-provider instance */
  provider: unknown;
  /** closes the listener and every open connection */
  stop(): Promise<void>;
}

export declare function startProvider(options?: StartProviderOptions): Promise<RunningProvider>;

// The one explicit, ordered list of features. Order matters in stage 1 (upstreams publish the lookup
// others use; a virtual service's options are bound in this order, so its status lists problems in
// it) and breaks ties between HTTP filters at one stage position in stage 2.
import type { ServiceAddress } from '../envoy-json.js';
import type { ListenerExtauth } from '../../api/schemas.js';
import type { Feature } from '../feature.js';
import { corsFeature } from './cors/index.js';
import { bufferFeature } from './buffer/index.js';
import { dfpFeature } from './dfp/index.js';
import { envoyOptionsFeature } from './envoy-options/index.js';
import { extauthFeature } from './extauth/index.js';
import { extProcFeature, type ExtProcFilterOptions } from './extproc/index.js';
import type { CustomAuthServer } from './extauth/render.js';
import type { RegoCheck } from './extauth/steps/common.js';
import { faultsFeature } from './faults/index.js';
import { functionsFeature } from './functions/index.js';
import { graphqlFeature } from './graphql/index.js';
import { lbHashFeature } from './lbhash/index.js';
import { listenerFeature } from './listener/index.js';
import { hcmFeature } from './hcm/index.js';
import { hybridFeature } from './hybrid/index.js';
import { headersFeature } from './headers/index.js';
import { jwtFeature, jwtFeatureRequiringRbac } from './jwt/index.js';
import { ratelimitFeature, type RateLimitRenderOptions } from './ratelimit/index.js';
import { resilienceFeature, type CircuitBreakerConfig } from './resilience/index.js';
import { routingFeature } from './routing/index.js';
import { statsFeature } from './stats/index.js';
import { tcpFeature } from './tcp/index.js';
import { tlsFeature } from './tls/index.js';
import { tracingFeature } from './tracing/index.js';
import { upgradesFeature } from './upgrades/index.js';
import { upstreamsFeature } from './upstreams/index.js';
import { DEFAULT_WASM_OPTIONS, edgeCacheSkip, wasmFeature, type WasmOptions } from './wasm/index.js';

export interface RenderOptions {
  /** Where Envoy reaches Legate's extension services. */
  graphql: ServiceAddress;
  extauth: ServiceAddress;
  wasm: WasmOptions;
  /** Legate's ratelimit service and the Settings' ratelimitServer; default DEFAULT_RATELIMIT */
  ratelimit?: RateLimitRenderOptions;
  /** Settings extProc: a user's ext_proc filter on every HCM (pipeline: settingsFilter) */
  extProc?: ExtProcFilterOptions;
  /** the user's own ext_authz servers (Settings namedExtauth), by name; SETTINGS_EXTAUTH_SERVER: Settings extauth's */
  namedExtauth?: Record<string, CustomAuthServer>;
  /** Settings gloo.circuitBreakers: the circuit breakers of every Upstream without its own */
  circuitBreakers?: CircuitBreakerConfig;
  /** Settings gloo.disableGrpcWeb */
  disableGrpcWeb?: boolean;
  /** Settings extauth, its server reference's namespace filled in: every listener's ext_authz settings */
  extauthDefaults?: ListenerExtauth;
  /** Settings gateway.virtualServiceOptions.oneWayTls */
  oneWayTls?: boolean;
  /** compiles opaAuth Rego (modules and query) with the `opa` binary: opa's error, or undefined (controller/rego-check.ts) */
  regoCheck?: RegoCheck;
  /** Settings gateway.validation.warnMissingTlsSecret */
  warnMissingTlsSecret?: boolean;
  /** Settings rbac.requireRbac: a virtual host or route without an rbac option refuses every request */
  requireRbac?: boolean;
}

export { settingsFilter as extProcSettingsFilter } from './extproc/index.js';
export { SETTINGS_EXTAUTH_SERVER } from './extauth/render.js';
export { extauthHttp } from './extauth/listener.js';

export const DEFAULT_RATELIMIT: RateLimitRenderOptions = { service: { host: '127.0.0.1', port: 18081 } };

export const DEFAULT_RENDER_OPTIONS: RenderOptions = {
  graphql: { host: '127.0.0.1', port: 8084 },
  extauth: { host: '127.0.0.1', port: 8083 },
  wasm: DEFAULT_WASM_OPTIONS,
};

export function features(options: RenderOptions = DEFAULT_RENDER_OPTIONS): readonly Feature[] {
  return Object.freeze([
    upstreamsFeature,
    resilienceFeature(options.circuitBreakers),
    routingFeature,
    lbHashFeature,
    faultsFeature,
    hcmFeature({ disableGrpcWeb: options.disableGrpcWeb ?? false }),
    tracingFeature,
    statsFeature,
    headersFeature,
    tlsFeature({
      ...(options.oneWayTls === undefined ? {} : { oneWayTls: options.oneWayTls }),
      ...(options.warnMissingTlsSecret ? { warnMissingTlsSecret: true } : {}),
    }),
    tcpFeature,
    hybridFeature,
    wasmFeature(options.wasm),
    extauthFeature(options.extauth, edgeCacheSkip(options.wasm), options.namedExtauth, options.extauthDefaults, options.regoCheck),
    ratelimitFeature(options.ratelimit ?? DEFAULT_RATELIMIT),
    options.requireRbac ? jwtFeatureRequiringRbac : jwtFeature,
    corsFeature,
    graphqlFeature(options.graphql),
    extProcFeature(options.extProc),
    upgradesFeature,
    bufferFeature,
    envoyOptionsFeature,
    dfpFeature,
    functionsFeature,
    listenerFeature,
  ]);
}

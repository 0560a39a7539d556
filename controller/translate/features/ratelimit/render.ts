// Rate limiting in Envoy. Global limits: `envoy.filters.http.ratelimit` filters asking Legate's
// ratelimit service (or the Settings' ratelimitServerRef upstream) with the descriptors of the virtual
// host's or route's `rate_limits` actions. One filter per domain and stage, rendered only when some
// entry needs it, each taking only the entries of its Envoy `stage` number: domain `legate`
// (RateLimitConfigs, ratelimitBasic) and Gloo's `custom` (raw actions, the Settings' descriptors), each
// early (before ext_authz) or regular (after it); unstaged entries follow Settings rateLimitBeforeAuth.
// A route with its own limits does not also get its virtual host's (Envoy's default, as Gloo), unless
// includeVhRateLimits (RateLimitPerRoute vh_rate_limits INCLUDE on each filter involved). Local limits:
// `envoy.filters.http.local_ratelimit`, inert on the HCM, with a token bucket per virtual host or
// route in typed_per_filter_config.
import type { EnvoyRoute, HeaderMatcher, HttpFilter, StringMatcher, VirtualHost } from '../../../../envoy/typed.js';
import { typed } from '../../../../envoy/typed.js';
import type { envoy_config_route_v3_RateLimit } from '../../../../envoy/types.generated.js';
import { RATE_LIMIT_DOMAIN, RAW_RATE_LIMIT_DOMAIN } from '../../../../common/ratelimit-config.js';
import { duration, extensionCluster, extensionSecrets, setPerFilterConfig, type ServiceAddress } from '../../envoy-json.js';
import { FilterStage, before, during, type RenderPlugin } from '../../feature.js';
import type { ListenerRatelimitIR, MetadataKeyIR, ProxyIR, RateLimitActionIR, RateLimitEntryIR, RateLimitIR } from '../../ir.js';

export const RATELIMIT_FILTER = 'envoy.filters.http.ratelimit';
export const LOCAL_RATELIMIT_FILTER = 'envoy.filters.http.local_ratelimit';
export const RATELIMIT_CLUSTER = 'legate-ratelimit';
const LOCAL_TYPE = 'type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit' as const;
const PER_ROUTE_TYPE = 'type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute' as const;

/** The global filters: a domain and a side of ext_authz each, with the Envoy stage number its entries carry. */
interface GlobalFilter {
  name: string;
  domain: string;
  early: boolean;
  stage: number;
}

export const GLOBAL_FILTERS: readonly GlobalFilter[] = [
  { name: RATELIMIT_FILTER, domain: RATE_LIMIT_DOMAIN, early: false, stage: 0 },
  { name: `${RATELIMIT_FILTER}.custom`, domain: RAW_RATE_LIMIT_DOMAIN, early: false, stage: 1 },
  { name: `${RATELIMIT_FILTER}.early`, domain: RATE_LIMIT_DOMAIN, early: true, stage: 2 },
  { name: `${RATELIMIT_FILTER}.custom.early`, domain: RAW_RATE_LIMIT_DOMAIN, early: true, stage: 3 },
];

/** The filter an entry goes to. */
function filterOf(e: RateLimitEntryIR, beforeAuth: boolean): GlobalFilter {
  const early = e.stage ? e.stage === 'early' : beforeAuth;
  const domain = e.domain === 'custom' ? RAW_RATE_LIMIT_DOMAIN : RATE_LIMIT_DOMAIN;
  return GLOBAL_FILTERS.find((f) => f.early === early && f.domain === domain)!;
}

/** How the ratelimit filter behaves (Settings ratelimitServer). */
export interface RateLimitRenderOptions {
  /** where Legate's own ratelimit service listens */
  service: ServiceAddress;
  /** a cluster serving RateLimitService instead (Settings ratelimitServerRef, `<upstream>_<namespace>`) */
  serverCluster?: string;
  /** Envoy's timeout for each call; default 100ms (Gloo's) */
  requestTimeoutMs?: number;
  /** deny when the service cannot answer (Envoy answers 500); default false: allow */
  denyOnFail?: boolean;
  /** the filter before ext_authz (default: after auth) */
  beforeAuth?: boolean;
  /** x-ratelimit-limit/-remaining/-reset on responses (default true) */
  xRateLimitHeaders?: boolean;
}

export const DEFAULT_RATELIMIT_TIMEOUT_MS = 100;

interface Usage {
  global: Set<GlobalFilter>;
  local: boolean;
}

// by rateLimitBeforeAuth, which decides where unstaged entries go
const usages = [new WeakMap<ProxyIR, Usage>(), new WeakMap<ProxyIR, Usage>()] as const;

/** Which filters the proxy needs; memoised, as it is asked once per virtual host. */
function uses(proxy: ProxyIR, beforeAuth: boolean): Usage {
  const usage = usages[beforeAuth ? 1 : 0];
  let u = usage.get(proxy);
  if (!u) {
    u = { global: new Set(), local: false };
    const note = (rl: RateLimitIR | undefined): void => {
      if (!rl) return;
      for (const e of rl.rateLimits) u!.global.add(filterOf(e, beforeAuth));
      if (rl.local) u!.local = true;
    };
    for (const l of proxy.listeners)
      for (const vh of l.virtualHosts) {
        note(vh.rateLimit);
        for (const r of vh.routes) note(r.rateLimit);
      }
    usage.set(proxy, u);
  }
  return u;
}

function stringMatch(m: { exact?: string; regex?: string; prefix?: string; suffix?: string }): StringMatcher {
  if (m.exact !== undefined) return { exact: m.exact };
  if (m.prefix !== undefined) return { prefix: m.prefix };
  if (m.suffix !== undefined) return { suffix: m.suffix };
  return { safe_regex: { regex: m.regex ?? '' } };
}

function envoyAction(a: RateLimitActionIR): envoy_config_route_v3_RateLimit['actions'] extends (infer T)[] | undefined ? T : never {
  if ('genericKey' in a)
    return {
      generic_key: {
        descriptor_value: a.genericKey.descriptorValue,
        ...(a.genericKey.descriptorKey ? { descriptor_key: a.genericKey.descriptorKey } : {}),
      },
    };
  if ('requestHeaders' in a) {
    const r = a.requestHeaders;
    return {
      request_headers: { header_name: r.headerName, descriptor_key: r.descriptorKey, ...(r.skipIfAbsent ? { skip_if_absent: true } : {}) },
    };
  }
  if ('remoteAddress' in a) return { remote_address: {} };
  if ('sourceCluster' in a) return { source_cluster: {} };
  if ('destinationCluster' in a) return { destination_cluster: {} };
  if ('metadata' in a) {
    const m = a.metadata;
    return {
      metadata: {
        descriptor_key: m.descriptorKey,
        metadata_key: metadataKey(m.metadataKey),
        ...(m.defaultValue ? { default_value: m.defaultValue } : {}),
        source: m.source,
        ...(m.skipIfAbsent ? { skip_if_absent: true } : {}),
      },
    };
  }
  if ('dynamicMetadata' in a) {
    // Envoy disallows its deprecated dynamic_metadata action by default: `metadata` from DYNAMIC is the same
    const m = a.dynamicMetadata;
    return {
      metadata: {
        descriptor_key: m.descriptorKey,
        metadata_key: metadataKey(m.metadataKey),
        ...(m.defaultValue ? { default_value: m.defaultValue } : {}),
        source: 'DYNAMIC',
      },
    };
  }
  if ('maskedRemoteAddress' in a) {
    const m = a.maskedRemoteAddress;
    return {
      masked_remote_address: {
        ...(m.v4PrefixMaskLen !== undefined ? { v4_prefix_mask_len: m.v4PrefixMaskLen } : {}),
        ...(m.v6PrefixMaskLen !== undefined ? { v6_prefix_mask_len: m.v6PrefixMaskLen } : {}),
      },
    };
  }
  if ('queryParameterValueMatch' in a) {
    const q = a.queryParameterValueMatch;
    return {
      query_parameter_value_match: {
        ...(q.descriptorKey ? { descriptor_key: q.descriptorKey } : {}),
        descriptor_value: q.descriptorValue,
        expect_match: q.expectMatch,
        query_parameters: q.queryParameters.map((p) => {
          if (p.match.present !== undefined) return { name: p.name, present_match: p.match.present };
          const { ignoreCase, contains, ...rest } = p.match;
          const sm: StringMatcher = contains !== undefined ? { contains } : stringMatch(rest);
          return { name: p.name, string_match: ignoreCase ? { ...sm, ignore_case: true } : sm };
        }),
      },
    };
  }
  const m = a.headerValueMatch;
  return {
    header_value_match: {
      ...(m.descriptorKey ? { descriptor_key: m.descriptorKey } : {}),
      descriptor_value: m.descriptorValue,
      expect_match: m.expectMatch,
      headers: m.headers.map((h): HeaderMatcher => {
        const base: HeaderMatcher = { name: h.name, ...(h.invert ? { invert_match: true } : {}) };
        if (h.match.present) return { ...base, present_match: true };
        return { ...base, string_match: stringMatch(h.match) };
      }),
    },
  };
}

function metadataKey(k: MetadataKeyIR) {
  return { key: k.key, path: k.path.map((key) => ({ key })) };
}

function rateLimits(rl: RateLimitIR, beforeAuth: boolean): envoy_config_route_v3_RateLimit[] {
  return rl.rateLimits.map((r) => {
    const stage = filterOf(r, beforeAuth).stage;
    return {
      ...(stage ? { stage } : {}),
      actions: r.actions.map(envoyAction),
      ...(r.limitOverride ? { limit: { dynamic_metadata: { metadata_key: metadataKey(r.limitOverride) } } } : {}),
    };
  });
}

function localConfig(local: NonNullable<RateLimitIR['local']>) {
  const always = { default_value: { numerator: 100, denominator: 'HUNDRED' as const }, runtime_key: 'legate_local_ratelimit_enabled' };
  return typed(LOCAL_TYPE, {
    stat_prefix: 'local_rate_limit',
    token_bucket: { max_tokens: local.maxTokens, tokens_per_fill: local.tokensPerFill, fill_interval: duration(local.fillInterval) },
    filter_enabled: always,
    filter_enforced: { ...always, runtime_key: 'legate_local_ratelimit_enforced' },
    // no x-ratelimit-* headers: Gloo's default for these buckets, and the headers were half the filter's cost
  });
}

export function ratelimitRender(options: RateLimitRenderOptions): RenderPlugin {
  const beforeAuth = options.beforeAuth ?? false;
  // Legate's own service is needed when a listener with global limits asks it
  const asksLegate = (proxy: ProxyIR): boolean =>
    uses(proxy, beforeAuth).global.size > 0 && proxy.listeners.some((l) => !(l.ratelimitServer?.cluster ?? options.serverCluster));
  // the listener's httpGateway.options.ratelimitServer, field by field over the Settings'
  const globalFilter = (f: GlobalFilter, o: ListenerRatelimitIR = {}): HttpFilter => {
    const timeoutMs = o.timeoutMs ?? options.requestTimeoutMs ?? DEFAULT_RATELIMIT_TIMEOUT_MS;
    return {
      name: f.name,
      typed_config: typed('type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit', {
        domain: f.domain,
        ...(f.stage ? { stage: f.stage } : {}),
        timeout: { seconds: Math.floor(timeoutMs / 1000), nanos: (timeoutMs % 1000) * 1e6 },
        failure_mode_deny: o.denyOnFail ?? options.denyOnFail ?? false,
        rate_limit_service: {
          grpc_service: { envoy_grpc: { cluster_name: o.cluster ?? options.serverCluster ?? RATELIMIT_CLUSTER } },
          transport_api_version: 'V3',
        },
        // off unless asked for (Gloo's enableXRatelimitHeaders defaults to false)
        ...((o.xRateLimitHeaders ?? options.xRateLimitHeaders) === true ? { enable_x_ratelimit_headers: 'DRAFT_VERSION_03' as const } : {}),
      }),
    };
  };
  return {
    httpFilters(proxy, listener) {
      const u = uses(proxy, beforeAuth);
      const out = [];
      const wide = listener.http?.localRatelimit;
      if (wide) {
        // httpGateway.options.httpLocalRatelimit: the listener's bucket; a virtual host's or route's own replaces it
        const always = {
          default_value: { numerator: 100, denominator: 'HUNDRED' as const },
          runtime_key: 'legate_local_ratelimit_enabled',
        };
        const filter: HttpFilter = {
          name: LOCAL_RATELIMIT_FILTER,
          typed_config: typed(LOCAL_TYPE, {
            stat_prefix: 'local_rate_limit',
            token_bucket: { max_tokens: wide.maxTokens, tokens_per_fill: wide.tokensPerFill, fill_interval: duration(wide.fillInterval) },
            filter_enabled: always,
            filter_enforced: { ...always, runtime_key: 'legate_local_ratelimit_enforced' },
            ...(wide.perConnection ? { local_rate_limit_per_downstream_connection: true } : {}),
            ...(wide.rateLimitHeaders ? { enable_x_ratelimit_headers: 'DRAFT_VERSION_03' as const } : {}),
          }),
        };
        out.push({ position: beforeAuth ? before(FilterStage.AuthN) : before(FilterStage.RateLimit), filter });
      } else if (u.local) {
        // inert here (no bucket): each virtual host or route that limits brings its own bucket
        const filter: HttpFilter = { name: LOCAL_RATELIMIT_FILTER, typed_config: typed(LOCAL_TYPE, { stat_prefix: 'local_rate_limit' }) };
        // first of them: cheap, and it protects the service too
        out.push({ position: beforeAuth ? before(FilterStage.AuthN) : before(FilterStage.RateLimit), filter });
      }
      for (const f of GLOBAL_FILTERS) {
        if (!u.global.has(f)) continue;
        out.push({
          position: f.early ? before(FilterStage.AuthN) : during(FilterStage.RateLimit),
          filter: globalFilter(f, listener.ratelimitServer),
        });
      }
      return out;
    },
    proxyContext: () => null,
    patchVirtualHost(ir, vhost: VirtualHost) {
      const rl = ir.rateLimit;
      if (!rl) return;
      if (rl.rateLimits.length) vhost.rate_limits = rateLimits(rl, beforeAuth);
      if (rl.local) setPerFilterConfig(vhost, LOCAL_RATELIMIT_FILTER, localConfig(rl.local));
    },
    patchRoute(ir, route: EnvoyRoute, vh) {
      const rl = ir.rateLimit;
      if (!rl) return;
      if (rl.rateLimits.length && route.route) route.route.rate_limits = rateLimits(rl, beforeAuth);
      if (rl.local) setPerFilterConfig(route, LOCAL_RATELIMIT_FILTER, localConfig(rl.local));
      if (rl.includeVhRateLimits && route.route) {
        // per filter: each of the virtual host's filters also sends the virtual host's entries for this route
        const filters = new Set((vh.rateLimit?.rateLimits ?? []).map((e) => filterOf(e, beforeAuth)));
        for (const f of GLOBAL_FILTERS)
          if (filters.has(f)) setPerFilterConfig(route, f.name, typed(PER_ROUTE_TYPE, { vh_rate_limits: 'INCLUDE' }));
      }
    },
    extraClusters(proxy) {
      return asksLegate(proxy) ? [extensionCluster(RATELIMIT_CLUSTER, options.service)] : [];
    },
    secrets(proxy) {
      return asksLegate(proxy) ? extensionSecrets(options.service) : [];
    },
  };
}

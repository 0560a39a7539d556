// Rate limiting: RateLimitConfig resources and the Settings' ratelimit.descriptors -> descriptor trees
// for the ratelimit service (its own xDS role), and `options.rateLimitConfigs` / `ratelimit` (raw
// actions), their staged forms (`rateLimitEarlyConfigs`, `ratelimitEarly`, `...Regular`),
// `ratelimitBasic` / `localRatelimit` on virtual hosts and routes -> the Envoy actions and token
// buckets bound there (docs/ratelimit.md).
import { ExtensionRoles, ExtensionTypeUrls } from '../../../../common/contract.js';
import type { DescriptorConfig, SetDescriptorConfig } from '../../../../common/ratelimit-config.js';
import type { RateLimitOptions as RateLimitOptionFields } from './schema.js';
import type { BindSink, Feature, Resolved } from '../../feature.js';
import type { RateLimitEntryIR, RateLimitIR, RouteActionIR } from '../../ir.js';
import { nsName } from '../../names.js';
import { bindListenerRatelimit } from './listener.js';
import { ratelimitRender, type RateLimitRenderOptions } from './render.js';
import {
  basicRateLimits,
  localBucket,
  rawRateLimits,
  translateRateLimitConfig,
  translateServiceSettings,
  type ResolvedRateLimitConfig,
} from './resolve.js';

export { DEFAULT_RATELIMIT_TIMEOUT_MS, type RateLimitRenderOptions } from './render.js';

type RateLimitOptions = RateLimitOptionFields;

export function ratelimitFeature(options: RateLimitRenderOptions): Feature {
  return {
    name: 'ratelimit',
    kinds: ['RateLimitConfig'],
    resolve(ctx) {
      const configs = ctx.resolveEach(ctx.ofKind('RateLimitConfig'), (rlc) => translateRateLimitConfig(rlc));
      // the Settings the pipeline reads (`default` first)
      const settings = ctx
        .ofKind('Settings')
        .sort((a, b) => Number(b.metadata.name === 'default') - Number(a.metadata.name === 'default'))
        .slice(0, 1)
        .filter((s) => s.spec.ratelimit !== undefined);
      const service = ctx.resolveEach(settings, (s) => translateServiceSettings(s));
      const served = [...service.results.values()][0];
      // a Settings rejected whole (the pipeline leaves it out) holds descriptors too: raw actions wait for them
      const rejectedSettings = settings.length ? undefined : ctx.invalidKeys('Settings')[0]?.replace('/', '.');
      const raw: RawDescriptors = options.serverCluster
        ? { check: false, why: 'external' }
        : service.rejected.size
          ? { check: false, why: 'rejected', settings: `${settings[0]!.metadata.namespace}.${settings[0]!.metadata.name}` }
          : rejectedSettings
            ? { check: false, why: 'rejected', settings: rejectedSettings }
            : { check: true, descriptors: served?.config.descriptors ?? [], setDescriptors: served?.config.setDescriptors ?? [] };
      return {
        bindGateway(gw, ir, sink) {
          const o = gw.spec.httpGateway?.options?.ratelimitServer;
          if (o) ir.ratelimitServer = bindListenerRatelimit(o, gw.metadata.namespace, ctx.upstreams(), options.beforeAuth ?? false, sink);
        },
        bindRoute(route, ir, site, sink) {
          const o = route.options;
          if (!o) return;
          const rt = site.routeTable ? `rt:${site.routeTable.metadata.namespace}.${site.routeTable.metadata.name}.` : '';
          const scope = `${site.vs.metadata.namespace}.${site.vs.metadata.name}.${rt}${site.where}`;
          const rl = bind(o, `${site.where}.options`, scope, site.namespace, configs, raw, sink, ir.action ?? null);
          if (rl) ir.rateLimit = rl;
        },
        bindVirtualHost(vs, ir, sink) {
          const o = vs.spec.virtualHost.options;
          if (!o) return;
          const rl = bind(
            o,
            'virtualHost.options',
            `${vs.metadata.namespace}.${vs.metadata.name}`,
            vs.metadata.namespace,
            configs,
            raw,
            sink,
          );
          if (rl) ir.rateLimit = rl;
        },
        extensionResources() {
          const list = [...configs.results.values(), ...(served ? [served] : [])].sort((a, b) =>
            a.config.name.localeCompare(b.config.name),
          );
          return [
            {
              role: ExtensionRoles.ratelimit,
              typeUrl: ExtensionTypeUrls.rateLimitConfig,
              resources: list.map((c) => ({ name: c.config.name, resource: { ...c.config } })),
            },
          ];
        },
      };
    },
    render: ratelimitRender(options),
  };
}

/** What raw actions are checked against: the Settings' descriptors, or nothing (and why). */
type RawDescriptors =
  | { check: true; descriptors: DescriptorConfig[]; setDescriptors: SetDescriptorConfig[] }
  | { check: false; why: 'external' }
  | { check: false; why: 'rejected'; settings: string };

/** Gloo's oneofs: per stage, raw actions or RateLimitConfig references. */
const ONEOFS = [
  ['ratelimit', 'rateLimitConfigs'],
  ['ratelimitEarly', 'rateLimitEarlyConfigs'],
  ['ratelimitRegular', 'rateLimitRegularConfigs'],
] as const;

/**
 * Options -> the IR. A missing or rejected RateLimitConfig is a warning: its actions are still sent, and
 * the service, which has no descriptors for it, limits nothing until it exists (rate limiting fails
 * open, as Envoy's filter does by default). Raw actions whose descriptor keys the Settings do not
 * declare are warnings (sent as written, as Gloo does); with rejected Settings descriptors they are sent unchecked.
 * `action`: the route's action (null for a route without one); undefined on a virtual host.
 */
function bind(
  o: RateLimitOptions,
  where: string,
  scope: string,
  namespace: string,
  configs: Resolved<ResolvedRateLimitConfig>,
  raw: RawDescriptors,
  sink: BindSink,
  action?: RouteActionIR | null,
): RateLimitIR | undefined {
  const staged = o.ratelimitEarly || o.ratelimitRegular || o.rateLimitEarlyConfigs || o.rateLimitRegularConfigs;
  if (!o.rateLimitConfigs && !o.ratelimitBasic && !o.localRatelimit && !o.ratelimit && !staged) return undefined;
  const onRoute = action !== undefined;
  const out: RateLimitIR = { rateLimits: [] };
  const refs = (field: 'rateLimitConfigs' | 'rateLimitEarlyConfigs' | 'rateLimitRegularConfigs', stage: RateLimitEntryIR['stage']) =>
    o[field]?.refs.forEach((ref, i) => {
      const ns = ref.namespace ?? namespace;
      const key = nsName(ns, ref.name);
      const name = `${ns}.${ref.name}`;
      const at = `${where}.${field}.refs[${i}]`;
      const resolved = configs.results.get(key);
      if (resolved) {
        out.rateLimits.push(...resolved.rateLimits.map((r) => (stage ? { ...r, stage } : r)));
        return;
      }
      sink.warnings.push(
        configs.rejected.has(key)
          ? {
              code: 'RateLimitConfigRejected',
              message: `${at}: RateLimitConfig ${name} is rejected; its limits do not apply until it is fixed`,
            }
          : {
              code: 'RateLimitConfigNotFound',
              message: `${at}: RateLimitConfig ${name} not found; its limits do not apply until it exists`,
            },
      );
    });
  refs('rateLimitConfigs', undefined);
  refs('rateLimitEarlyConfigs', 'early');
  refs('rateLimitRegularConfigs', 'regular');
  for (const [field, stage] of [
    ['ratelimit', undefined],
    ['ratelimitEarly', 'early'],
    ['ratelimitRegular', 'regular'],
  ] as const) {
    const r = o[field];
    if (!r) continue;
    if (r.includeVhRateLimits !== undefined && !onRoute)
      sink.problems.push({
        code: 'InvalidSpec',
        message: `${where}.${field}.includeVhRateLimits: a route option (whether the virtual host's limits apply too)`,
      });
    if (r.includeVhRateLimits && onRoute) out.includeVhRateLimits = true;
    if (!r.rateLimits?.length) continue;
    const at = `${where}.${field}.rateLimits`;
    if (!raw.check && raw.why === 'rejected')
      sink.warnings.push({
        code: 'InvalidSpec',
        message:
          `${at}: the ratelimit.descriptors of Settings ${raw.settings} ` +
          'are rejected; these actions count against nothing until they are fixed',
      });
    out.rateLimits.push(...rawRateLimits(r.rateLimits, at, stage, raw.check ? raw : undefined, sink.problems, sink.warnings));
  }
  if (o.ratelimitBasic) out.rateLimits.push(...basicRateLimits(o.ratelimitBasic, scope, `${where}.ratelimitBasic`, sink.problems));
  if (o.ratelimit?.localRatelimit && o.localRatelimit) {
    sink.problems.push({ code: 'InvalidSpec', message: `${where}: set at most one of ratelimit.localRatelimit, localRatelimit` });
  }
  for (const [a, b] of ONEOFS) {
    // Gloo's API has them as a oneof: one stage takes raw actions or RateLimitConfigs, not both
    if (o[a] && o[b]) sink.problems.push({ code: 'InvalidSpec', message: `${where}: set at most one of ${a}, ${b}` });
  }
  const bucket = o.ratelimit?.localRatelimit ?? o.localRatelimit;
  if (bucket) {
    const at = o.ratelimit?.localRatelimit ? `${where}.ratelimit.localRatelimit` : `${where}.localRatelimit`;
    const local = localBucket(bucket, at, sink.problems);
    if (local) out.local = local;
  }
  if (action && action.type !== 'route' && action.type !== 'graphql' && out.rateLimits.length) {
    sink.warnings.push({
      code: 'NotSupported',
      message: `${where}: global rate limits apply to routes that forward (Envoy answers a ${action.type} route itself)`,
    });
  }
  return out.rateLimits.length || out.local || out.includeVhRateLimits ? out : undefined;
}

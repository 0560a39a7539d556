// Rate limiting: RateLimitConfig resources -> descriptor trees for the ratelimit service (its own xDS
// role), and `options.rateLimitConfigs` / `ratelimitBasic` / `localRatelimit` on virtual hosts and routes
// -> the Envoy actions and token buckets bound there (docs/ratelimit.md).
import { ExtensionRoles, ExtensionTypeUrls } from '../../../../common/contract.js';
import type { RateLimitOptions as RateLimitOptionFields } from './schema.js';
import type { BindSink, Feature, Resolved } from '../../feature.js';
import type { RateLimitIR, RouteActionIR } from '../../ir.js';
import { nsName } from '../../names.js';
import { ratelimitRender, type RateLimitRenderOptions } from './render.js';
import { basicRateLimits, localBucket, translateRateLimitConfig, type ResolvedRateLimitConfig } from './resolve.js';

export { DEFAULT_RATELIMIT_TIMEOUT_MS, type RateLimitRenderOptions } from './render.js';

type RateLimitOptions = RateLimitOptionFields;

export function ratelimitFeature(options: RateLimitRenderOptions): Feature {
  return {
    name: 'ratelimit',
    kinds: ['RateLimitConfig'],
    resolve(ctx) {
      const configs = ctx.resolveEach(ctx.ofKind('RateLimitConfig'), (rlc) => translateRateLimitConfig(rlc));
      return {
        bindRoute(route, ir, site, sink) {
          const o = route.options;
          if (!o) return;
          const rt = site.routeTable ? `rt:${site.routeTable.metadata.namespace}.${site.routeTable.metadata.name}.` : '';
          const scope = `${site.vs.metadata.namespace}.${site.vs.metadata.name}.${rt}${site.where}`;
          const rl = bind(o, `${site.where}.options`, scope, site.namespace, configs, sink, ir.action);
          if (rl) ir.rateLimit = rl;
        },
        bindVirtualHost(vs, ir, sink) {
          const o = vs.spec.virtualHost.options;
          if (!o) return;
          const rl = bind(o, 'virtualHost.options', `${vs.metadata.namespace}.${vs.metadata.name}`, vs.metadata.namespace, configs, sink);
          if (rl) ir.rateLimit = rl;
        },
        extensionResources() {
          const list = [...configs.results.values()].sort((a, b) => a.config.name.localeCompare(b.config.name));
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

/**
 * Options -> the IR. A missing or rejected RateLimitConfig is a warning: its actions are still sent, and
 * the service, which has no descriptors for it, limits nothing until it exists (rate limiting fails
 * open, as Envoy's filter does by default).
 */
function bind(
  o: RateLimitOptions,
  where: string,
  scope: string,
  namespace: string,
  configs: Resolved<ResolvedRateLimitConfig>,
  sink: BindSink,
  action?: RouteActionIR,
): RateLimitIR | undefined {
  if (!o.rateLimitConfigs && !o.ratelimitBasic && !o.localRatelimit) return undefined;
  const out: RateLimitIR = { rateLimits: [] };
  o.rateLimitConfigs?.refs.forEach((ref, i) => {
    const ns = ref.namespace ?? namespace;
    const key = nsName(ns, ref.name);
    const name = `${ns}.${ref.name}`;
    const at = `${where}.rateLimitConfigs.refs[${i}]`;
    const resolved = configs.results.get(key);
    if (resolved) {
      out.rateLimits.push(...resolved.rateLimits);
      return;
    }
    sink.warnings.push(
      configs.rejected.has(key)
        ? {
            code: 'RateLimitConfigRejected',
            message: `${at}: RateLimitConfig ${name} is rejected; its limits do not apply until it is fixed`,
          }
        : { code: 'RateLimitConfigNotFound', message: `${at}: RateLimitConfig ${name} not found; its limits do not apply until it exists` },
    );
  });
  if (o.ratelimitBasic) out.rateLimits.push(...basicRateLimits(o.ratelimitBasic, scope, `${where}.ratelimitBasic`, sink.problems));
  if (o.localRatelimit) {
    const local = localBucket(o.localRatelimit, `${where}.localRatelimit`, sink.problems);
    if (local) out.local = local;
  }
  if (action && action.type !== 'route' && action.type !== 'graphql' && out.rateLimits.length) {
    sink.warnings.push({
      code: 'NotSupported',
      message: `${where}: rateLimitConfigs and ratelimitBasic apply to routes that forward (Envoy answers a ${action.type} route itself)`,
    });
  }
  return out.rateLimits.length || out.local ? out : undefined;
}

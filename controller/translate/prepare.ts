// What translateVirtualService binds: the VirtualService with the options of the VirtualHostOption and
// RouteOption resources it references merged in, and each route to an UpstreamGroup turned into the
// `multi` route it stands for, so every feature reads one set of options and one list of weighted
// destinations. Merge order is Gloo's (gateway translator, mergeVirtualHostOptions/ShallowMergeRouteOptions):
// the inline options win, then the references in order, field by field (a whole field, not its insides).
// A missing reference is a warning, as in Gloo, so resources can be applied in any order.
import type { VirtualService } from '../api/resources.js';
import type { Route, RouteOptions, UpstreamGroupSpec, VirtualHostOptions } from '../api/routes.js';
import { destinationCluster } from './destinations.js';
import type { Problem, ResolveContext, Resolved } from './feature.js';
import { nsName } from './names.js';

/** The kinds VirtualServices borrow from (the core's: they are read before any feature binds). */
export const SHARED_KINDS = ['VirtualHostOption', 'RouteOption', 'UpstreamGroup'] as const;

/** The resources VirtualServices borrow from, resolved once per translation. */
export interface SharedResources {
  /** served VirtualHostOption / RouteOption options, by nsName */
  readonly virtualHostOptions: ReadonlyMap<string, VirtualHostOptions>;
  readonly routeOptions: ReadonlyMap<string, RouteOptions>;
  /** VirtualHostOption / RouteOption resources their schema rejected (none of their versions serves), `<kind>/<nsName>` */
  readonly rejectedOptions: ReadonlySet<string>;
  readonly upstreamGroups: Resolved<UpstreamGroupSpec>;
}

export interface Prepared {
  /** the VirtualService with its virtual host's options merged (its routes are prepared one by one: `route`) */
  vs: VirtualService;
  /**
   * A route of the VirtualService or of a RouteTable it delegates to, with its RouteOption references
   * merged and its UpstreamGroup written as `multi`; `ns` is where its references resolve.
   */
  route(route: Route, ns: string, where: string): Route;
  warnings: Problem[];
  /** A message a feature wrote about a merged field or a group's destination, naming where it came from. */
  rename(message: string): string;
}

/** Resolves the shared kinds (after the upstreams are published): an UpstreamGroup with a missing or
 * rejected upstream, or only zero weights, is rejected (its last accepted version serves, if any). */
export function resolveShared(ctx: ResolveContext): SharedResources {
  // their options passed the schema; whatever references them binds (and reports) them
  return {
    virtualHostOptions: ctx.resolveEach(ctx.ofKind('VirtualHostOption'), (r) => ({ ir: r.spec.options ?? {}, problems: [] })).results,
    routeOptions: ctx.resolveEach(ctx.ofKind('RouteOption'), (r) => ({ ir: r.spec.options ?? {}, problems: [] })).results,
    rejectedOptions: new Set(
      (['VirtualHostOption', 'RouteOption'] as const).flatMap((k) => ctx.invalidKeys(k).map((key) => `${k}/${key}`)),
    ),
    upstreamGroups: ctx.resolveEach(ctx.ofKind('UpstreamGroup'), (ug) => {
      const problems: Problem[] = [];
      ug.spec.destinations.forEach((d, j) => {
        const { problem } = destinationCluster(d.destination, `destinations[${j}].destination`, ug.metadata.namespace, ctx);
        if (problem) problems.push({ code: problem.code, message: problem.message });
      });
      if (ug.spec.destinations.every((d) => (d.weight ?? 1) === 0)) {
        problems.push({ code: 'InvalidSpec', message: 'destinations: at least one destination needs a weight above 0' });
      }
      return problems.length ? { problems } : { ir: withNamespace(ug.spec, ug.metadata.namespace), problems };
    }),
  };
}

export function prepareVirtualService(vs: VirtualService, shared: SharedResources): Prepared {
  const warnings: Problem[] = [];
  const renames: [prefix: string, replacement: string][] = [];
  const vh = vs.spec.virtualHost;
  const options = merged(
    vh.options,
    vh.optionsConfigRefs?.delegateOptions,
    'virtualHost',
    'VirtualHostOption',
    shared.virtualHostOptions,
    vs.metadata.namespace,
  );
  const prepareRoute = (route: Route, ns: string, where: string): Route => {
    const opts = merged(route.options, route.optionsConfigRefs?.delegateOptions, where, 'RouteOption', shared.routeOptions, ns);
    let out: Route = opts === route.options ? route : { ...route, options: opts };
    const group = route.routeAction?.upstreamGroup;
    if (group) {
      const groupNs = group.namespace ?? ns;
      const key = nsName(groupNs, group.name);
      const spec = shared.upstreamGroups.results.get(key);
      if (spec) {
        out = { ...out, routeAction: { multi: { destinations: spec.destinations } } };
        renames.push([`${where}.routeAction.multi`, `${where}.routeAction.upstreamGroup (UpstreamGroup ${groupNs}.${group.name})`]);
      } else {
        const rejected = shared.upstreamGroups.rejected.has(key);
        warnings.push({
          code: rejected ? 'UpstreamGroupRejected' : 'UpstreamGroupNotFound',
          message: `${where}.routeAction.upstreamGroup: UpstreamGroup ${groupNs}.${group.name} ${rejected ? 'is rejected' : 'not found'}`,
        });
      }
    }
    return out;
  };

  function merged<O extends object>(
    inline: O | undefined,
    refs: readonly { name: string; namespace?: string | undefined }[] | undefined,
    where: string,
    kind: 'VirtualHostOption' | 'RouteOption',
    served: ReadonlyMap<string, O>,
    ns: string,
  ): O | undefined {
    if (!refs?.length) return inline;
    const out: Record<string, unknown> = { ...inline };
    refs.forEach((ref, k) => {
      const refNs = ref.namespace ?? ns;
      const at = `${where}.optionsConfigRefs.delegateOptions[${k}]`;
      const found = served.get(nsName(refNs, ref.name));
      if (!found) {
        const rejected = shared.rejectedOptions.has(`${kind}/${nsName(refNs, ref.name)}`);
        const message = `${at}: ${kind} ${refNs}.${ref.name} ${rejected ? 'is rejected; its options do not apply' : 'not found'}`;
        warnings.push({ code: `${kind}${rejected ? 'Rejected' : 'NotFound'}`, message });
        return;
      }
      for (const [field, value] of Object.entries(found)) {
        if (isEmpty(value) || !isEmpty(out[field])) continue;
        out[field] = value;
        renames.push([`${where}.options.${field}`, `${at} (${kind} ${refNs}.${ref.name}).options.${field}`]);
      }
    });
    return out as O;
  }

  const spec = { ...vs.spec, virtualHost: { ...vh, options } };
  return {
    vs: { ...vs, spec } as VirtualService,
    route: prepareRoute,
    warnings,
    rename(message) {
      for (const [prefix, replacement] of renames) {
        if (message.startsWith(prefix) && /^([.:[ ]|$)/.test(message.slice(prefix.length))) {
          return replacement + message.slice(prefix.length);
        }
      }
      return message;
    },
  };
}

/** Gloo's emptiness (Go's zero value) for a JSON field: unset, or an empty list. */
function isEmpty(value: unknown): boolean {
  return value === undefined || (Array.isArray(value) && value.length === 0);
}

/** An UpstreamGroup's references default to its own namespace, not the VirtualService's. */
function withNamespace(spec: UpstreamGroupSpec, ns: string): UpstreamGroupSpec {
  return {
    destinations: spec.destinations.map((d) => {
      const { upstream, kube } = d.destination;
      const destination = upstream
        ? { ...d.destination, upstream: { ...upstream, namespace: upstream.namespace ?? ns } }
        : kube
          ? { ...d.destination, kube: { ...kube, ref: { ...kube.ref, namespace: kube.ref.namespace ?? ns } } }
          : d.destination;
      return { ...d, destination };
    }),
  };
}
